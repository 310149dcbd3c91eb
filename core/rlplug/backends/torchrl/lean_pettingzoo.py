"""A leaner ``PettingZooWrapper._step`` for the plain case: upstream's step output with its per-step lookups done once.

On MPE's simple_spread TorchRL 0.14's ``PettingZooWrapper._step`` spent about twice the simulator's own time on
plumbing: ``self.agents`` through ``EnvBase.__getattr__`` (a ``dir()`` of the module per call), deep copies of
the observations and infos (made so the action masks can be removed from them), the agent's observation spec
indexed out of the composite spec for every agent and step, and one ``torch.tensor`` per agent and flag.

``LeanPettingZooWrapper._step`` writes the same tensordict for a parallel env whose agents all stay alive
(``use_mask=False``), without action masks, per-agent infos or a global state: each agent's observation through
its own spec's ``encode`` (the specs indexed once), the rewards and flags of a group as one tensor each, cast as
upstream casts them, then upstream's ``_aggregate_done`` over the group flags listed once. Any other configuration takes upstream's ``_step``
(``lean_step = False`` always does); tests/test_lean_pettingzoo.py compares rollouts, losses and parameters.

``LeanSerialEnv`` is ``SerialEnv`` whose full steps (every sub-env steps, the common case) write each wrapper's
output into the shared buffer through views of it indexed once (upstream indexes ``next[i]`` and runs
``update_`` per sub-env and step); a partial step, an env off the batched env's device, non-tensor outputs or
``lean_step = False`` take upstream's ``_step``.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torchrl.envs import SerialEnv
from torchrl.envs.libs.pettingzoo import PettingZooWrapper, _extract_nested_with_index


class LeanPettingZooWrapper(PettingZooWrapper):
    """``PettingZooWrapper`` whose ``_step`` skips the plumbing the plain case does not need (module docstring)."""

    lean_step = True

    @property
    def agents(self) -> list[str]:
        # upstream reaches the env's agents through EnvBase.__getattr__, which lists dir(self) on every call
        return self._env.agents

    def _lean_applies(self) -> bool:
        return (
            self.lean_step
            and self.parallel
            and not self.use_mask
            and not self.return_state
            and not any(self.has_action_mask.values())
            and all(self.cached_step_output_zero.get((group, "info"), None) is None for group in self.group_map)
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        plan = self.__dict__.get("_lean_plan")
        if plan is None:
            plan = self.__dict__["_lean_plan"] = self._make_plan() if self._lean_applies() else False
        if not plan:
            return super()._step(tensordict)
        action_specs, observation_specs, group_done_keys = plan

        action_dict = {}
        for group, agents in self.group_map.items():
            group_action_np = action_specs[group].to_numpy(tensordict.get((group, "action")))
            for index, agent in enumerate(agents):
                action_dict[agent] = _extract_nested_with_index(group_action_np, index)
        observations, rewards, terminations, truncations, _ = self._env.step(action_dict)

        out = self.cached_step_output_zero.clone()
        for group, agents in self.group_map.items():
            if any(agent not in observations for agent in agents):
                raise ValueError("Dead agents found in the environment, you need to set use_mask=True to allow this.")
            group_observation = out.get((group, "observation"))
            for index, agent in enumerate(agents):
                group_observation[index] = observation_specs[group][index].encode(observations[agent])
            self._set_flags(out, group, "reward", [rewards[a] for a in agents], torch.float32)
            done = [terminations[a] or truncations[a] for a in agents]
            self._set_flags(out, group, "done", done, torch.bool)
            self._set_flags(out, group, "truncated", [truncations[a] for a in agents], torch.bool)
            self._set_flags(out, group, "terminated", [terminations[a] for a in agents], torch.bool)

        done, terminated, truncated = self._aggregate_flags(out, group_done_keys, self.done_on_any)
        out.set("done", done)
        out.set("terminated", terminated)
        out.set("truncated", truncated)
        return out

    def _set_flags(self, out: TensorDictBase, group: str, name: str, values: list[Any], dtype: torch.dtype) -> None:
        # upstream: target[index] = torch.tensor(value, dtype=dtype) per agent; one tensor of the same casts here
        target = out.get((group, name))
        target.copy_(torch.tensor(values, device=self.device, dtype=dtype).reshape(target.shape))

    def _aggregate_flags(self, out: TensorDictBase, group_done_keys: list[tuple[str, str]], use_any: bool) -> tuple[torch.Tensor, ...]:
        # upstream's _aggregate_done over the group flags, listed once (its done_keys sorts the spec's keys per call);
        # its early exits skip keys that cannot change the result, so visiting them all gives the same flags
        flags = {name: not use_any for name in ("done", "terminated", "truncated")}
        for key in group_done_keys:
            value = out.get(key)
            flags[key[-1]] = flags[key[-1]] | value.any() if use_any else flags[key[-1]] & value.all()
        return tuple(torch.tensor([flags[name]], device=self.device) for name in ("done", "terminated", "truncated"))

    def _make_plan(self) -> tuple[dict[str, Any], dict[str, list[Any]], list[tuple[str, str]]]:
        action_specs = {group: self.input_spec["full_action_spec", group, "action"] for group in self.group_map}
        observation_specs = {
            group: [self.observation_spec[group, "observation"][index] for index in range(len(agents))]
            for group, agents in self.group_map.items()
        }
        group_done_keys = [
            key for key in self.done_keys if isinstance(key, tuple) and key[-1] in ("done", "terminated", "truncated")
        ]
        return action_specs, observation_specs, group_done_keys


class LeanSerialEnv(SerialEnv):
    """``SerialEnv`` whose full steps copy each sub-env's output into per-worker buffer views made once (above)."""

    lean_step = True

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        partial_steps = tensordict.get("_step", None)
        views = self._lean_views() if self.lean_step and not self.is_closed else None
        if views is None or (partial_steps is not None and not partial_steps.all()):
            return super()._step(tensordict)
        # upstream's full step with buffers: each worker steps on its row, its outputs go into next[i] in place
        self._sync_m2w()
        for env, data_in, view in zip(self._envs, tensordict.copy().unbind(0), views):
            out_td = env._step(data_in)
            for key, target in view:
                value = out_td.get(key, None)
                if value is not None:
                    target.copy_(value)
        selected_keys = self._selected_step_keys
        return self.shared_tensordict_parent.get("next").named_apply(
            lambda *args: self.select_and_clone(*args, selected_keys), nested_keys=True, filter_empty=True
        )

    def _lean_views(self) -> list[list[tuple[Any, torch.Tensor]]] | None:
        parent = self.shared_tensordict_parent
        cached = self.__dict__.get("_lean_views_cache")
        if cached is not None and cached[0] is parent:
            return cached[1]
        views = None
        same_device = parent.device == self.device and all(env.device == self.device for env in self._envs)
        if self._use_buffers and not self._non_tensor_keys and same_device:
            next_td, keys = parent.get("next"), list(self._env_output_keys)
            views = [[(key, next_td[i].get(key)) for key in keys] for i in range(self.num_workers)]
        self.__dict__["_lean_views_cache"] = (parent, views)
        return views
