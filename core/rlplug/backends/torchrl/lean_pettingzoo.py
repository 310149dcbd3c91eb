"""A leaner ``PettingZooWrapper._step`` for the plain case: upstream's step output with its per-step lookups done once.

On MPE's simple_spread TorchRL 0.14's ``PettingZooWrapper._step`` spent about twice the simulator's own time on
plumbing: ``self.agents`` through ``EnvBase.__getattr__`` (a ``dir()`` of the module per call), deep copies of
the observations and infos (made so the action masks can be removed from them), the agent's observation spec
indexed out of the composite spec for every agent and step, and one ``torch.tensor`` per agent and flag.

``LeanPettingZooWrapper._step`` writes the same tensordict for a parallel env whose agents all stay alive
(``use_mask=False``), without action masks, per-agent infos or a global state: each agent's observation through
its own spec's ``encode`` (the specs indexed once), a group's rewards in one tensor, its flags in another, cast
as upstream casts them, and the team's flags reduced (any / all) from the values ``_aggregate_done`` reduces. Any other
configuration takes upstream's ``_step`` (``lean_step = False`` always does); tests/test_lean_pettingzoo.py
compares rollouts, losses and parameters with upstream's steps.

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

FLAGS = ("done", "terminated", "truncated")  # upstream's order of the root flags it sets


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
        action_specs, observation_specs = plan

        action_dict = {}
        for group, agents in self.group_map.items():
            group_action_np = action_specs[group].to_numpy(tensordict.get((group, "action")))
            for index, agent in enumerate(agents):
                action_dict[agent] = _extract_nested_with_index(group_action_np, index)
        observations, rewards, terminations, truncations, _ = self._env.step(action_dict)

        out = self.cached_step_output_zero.clone()
        team: dict[str, list[Any]] = {name: [] for name in FLAGS}
        for group, agents in self.group_map.items():
            if any(agent not in observations for agent in agents):
                raise ValueError("Dead agents found in the environment, you need to set use_mask=True to allow this.")
            group_observation = out.get((group, "observation"))
            for index, agent in enumerate(agents):
                group_observation[index] = observation_specs[group][index].encode(observations[agent])
            # upstream: target[index] = torch.tensor(value, dtype=...) per agent and flag; one tensor of the same casts
            reward = out.get((group, "reward"))
            per_agent = torch.tensor([rewards[a] for a in agents], device=self.device, dtype=torch.float32)
            reward.copy_(per_agent.reshape(reward.shape))
            flags = {
                "done": [terminations[a] or truncations[a] for a in agents],
                "terminated": [terminations[a] for a in agents],
                "truncated": [truncations[a] for a in agents],
            }
            as_tensor = torch.tensor([flags[name] for name in FLAGS], device=self.device, dtype=torch.bool)
            for name, row in zip(FLAGS, as_tensor):
                target = out.get((group, name))
                target.copy_(row.reshape(target.shape))
                team[name] += flags[name]

        # upstream's _aggregate_done: any (done_on_any) or all of the agents' flags, over every group
        reduce = any if self.done_on_any else all
        for name in FLAGS:
            out.set(name, torch.tensor([reduce(bool(value) for value in team[name])], device=self.device))
        return out

    def _make_plan(self) -> tuple[dict[str, Any], dict[str, list[Any]]]:
        action_specs = {group: self.input_spec["full_action_spec", group, "action"] for group in self.group_map}
        observation_specs = {
            group: [self.observation_spec[group, "observation"][index] for index in range(len(agents))]
            for group, agents in self.group_map.items()
        }
        return action_specs, observation_specs


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
