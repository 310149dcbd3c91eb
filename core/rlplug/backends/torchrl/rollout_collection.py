"""How a TorchRL on-policy trainer collects its rollouts: the lean path (default) or TorchRL's ``Collector``.

Both are iterators of rollouts, ``[num_envs, rollout_steps]`` tensordicts (a new one each time) with every key
the collector stores: the observations, the policy's outputs (the action, its log-probability, the logits or
loc / scale), the reset's done flags, ``("next", ...)`` observations, rewards and done flags, and
``("collector", "traj_ids")``; in the collector's key order, its dims named ``[None, "time"]``, from the same
env chain, seeding, draws and autoreset (tests/test_torchrl_lean_onpolicy.py compares the rollouts, losses,
parameters and random state of both). They differ in what each step costs:

* ``CollectorRollouts`` (``collector = true``, and where the lean path does not apply: ``lean_obstacle``):
  TorchRL's ``Collector`` over the trainer's env: per step its wrapper, ``step_mdp`` and a tensordict to stack.
* ``LeanRollouts``: steps the gymnasium vector env under ``make_env``'s TorchRL env itself (``step_vector_env``,
  the off-policy lean path's step), runs the policy on tensors (``acting.tensor_policy``; on a reused
  tensordict, the carrier, where a module needs one or a hook was registered) and writes each step into a
  rollout allocated once per batch. A recurrent policy's hidden states and ``is_init`` are carried in the carrier
  as TorchRL's ``InitTracker``, primers and ``step_mdp`` would carry them (``LeanRollouts._carry``).

One difference, TorchRL's: where an episode of a Dict observation space ends, TorchRL 0.14's vector
``GymWrapper`` stores zeros as ``("next", key)`` (its terminal-observation reader files the ended episode's
dict under "observation", then looks each key up beside it); the lean path stores the true last observation,
as it does for a Box (and as the off-policy lean path does), so a truncated episode bootstraps from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict
from torch import nn
from torchrl.envs import Compose, DoubleToFloat, EnvBase, ExplorationType, GymWrapper, InitTracker, set_exploration_type
from torchrl.envs.libs.gym import terminal_obs_reader
from torchrl.envs.transforms import TensorDictPrimer, VecGymEnvTransform

from .acting import tensor_policy
from .collection import restore_envs, step_vector_env
from .env import EndedReturns, FinalObservations, collector_state, load_collector_state, make_collector, returns_reader
from .recurrent import INIT_KEY

TRAJ_IDS = ("collector", "traj_ids")
FLAGS = ("reward", "terminated", "truncated", "done")


def _transforms(env: EnvBase) -> list[Any]:
    transform = getattr(env, "transform", None)
    return [] if transform is None else list(transform) if isinstance(transform, Compose) else [transform]


def carried_keys(env: EnvBase) -> list[str]:
    """What a recurrent policy's transforms carry from step to step (``recurrent.carry_hidden_states``):
    ``InitTracker``'s episode-start flag, then each primer's hidden-state keys."""
    keys = []
    for transform in _transforms(env):
        if isinstance(transform, InitTracker):
            keys.extend(transform.out_keys)
        elif isinstance(transform, TensorDictPrimer):
            keys.extend(transform.primers.keys())
    return keys


def info_keys(env: EnvBase, carried: Sequence[str]) -> list[Any]:
    """The keys of ``env``'s steps that are neither the gymnasium observation space's nor ``carried``: the info
    entries TorchRL's readers add (MuJoCo's ``x_position``, ...)."""
    space = env.base_env._env.single_observation_space
    spaces = set(space.spaces) if isinstance(space, gym.spaces.Dict) else {"observation"}
    return [key for key in env.observation_spec.keys() if key not in spaces and key not in carried]


def lean_obstacle(env: EnvBase, recurrent: bool) -> str | None:
    """Why the lean path cannot stand in for the collector on ``env`` (``None``: it can). It knows ``make_env``'s
    env only: one ``GymWrapper`` over a gymnasium vector env on the CPU, with no transform but the wrapper's
    own and ``DoubleToFloat`` (and, for a recurrent policy, ``InitTracker`` and the hidden states' primers),
    whose steps hold the observation space's keys, and of a Box space the info entries TorchRL's own reader adds
    (MuJoCo's ``x_position``, ...)."""
    base = getattr(env, "base_env", None)
    if type(base) is not GymWrapper or not isinstance(getattr(base, "_env", None), gym.vector.VectorEnv):
        return f"the env is not a gymnasium vector env under TorchRL's GymWrapper ({type(base or env).__name__})"
    if env.device is not None and env.device.type != "cpu":
        return f"the env is on {env.device}: the lean path is verified on the CPU only"
    replayed = (VecGymEnvTransform, DoubleToFloat, *((InitTracker, TensorDictPrimer) if recurrent else ()))
    unknown = [type(t).__name__ for t in _transforms(env) if type(t) not in replayed]
    if unknown:
        return f"the env has transforms the lean path does not replay: {', '.join(unknown)}"
    extra = [str(key) for key in info_keys(env, carried_keys(env) if recurrent else [])]
    readers = [type(reader) for reader in base.info_dict_reader]
    if extra and (isinstance(base._env.single_observation_space, gym.spaces.Dict) or any(kind not in (terminal_obs_reader, FinalObservations, EndedReturns) for kind in readers)):
        # replayed: upstream's terminal reader over a Box space's info (FinalObservations: upstream's on its numeric
        # entries); other readers are their own business
        return f"the env's info entries reach the steps through readers the lean path does not replay ({', '.join(extra)})"
    return None


class CollectorRollouts:
    """TorchRL's ``Collector``: ``frames_per_batch`` transitions a batch; ``raw_envs`` as ``collector_state``'s."""

    def __init__(self, env: EnvBase, policy: nn.Module, frames_per_batch: int) -> None:
        self.collector = make_collector(env, policy, frames_per_batch)
        self._batches = iter(self.collector)

    def __iter__(self) -> CollectorRollouts:
        return self

    def __next__(self) -> TensorDict:
        return next(self._batches)

    @property
    def carrier(self) -> TensorDict:
        return self.collector._carrier

    def state_dict(self, raw_envs: Any = None) -> dict[str, Any]:
        return collector_state(self.collector, raw_envs)

    def load_state_dict(self, state: dict[str, Any], raw_envs: Any = None) -> None:
        load_collector_state(self.collector, state, raw_envs)

    def close(self) -> None:
        self.collector.shutdown()


class LeanRollouts:
    """The collector's rollouts without its per-step tensordicts.

    What the ``Collector`` does, step for step: the policy acts in RANDOM exploration mode on the current
    observations, on tensors or else on the carrier (the env's reset tensordict with the trajectory ids);
    its outputs, the observations and the trajectory ids are written to the step's column, the action steps
    the gymnasium vector env (``step_vector_env``: rewards, flags, next observations, true last observations
    of ended episodes, TorchRL's extra reset when every sub-env ended), and each ended sub-env starts a
    trajectory with the next id. The reset's done flags are stored as the collector stores them: false (a
    step's root flags are always a reset's or a running episode's). Construction makes the collector's one
    probing call of the policy (the same draws) and lays out the rollout as the collector does.
    """

    def __init__(self, env: EnvBase, policy: nn.Module, num_envs: int, steps: int) -> None:
        self.env, self.policy = env, policy
        self.vector_env = env.base_env._env
        self.steps, self.frames_per_batch = steps, num_envs * steps
        self.frames, self.batches = 0, 0
        # a recurrent policy's episode-start flag and hidden states, carried from step to step as TorchRL's
        # InitTracker and primers carry them (empty for a feed-forward policy)
        self.carried = carried_keys(env)
        self.hidden_keys = [key for key in self.carried if key != INIT_KEY]
        # the info entries TorchRL's info reader adds to each step (MuJoCo's x_position, ...): stored as it stores them
        self.info_keys = info_keys(env, self.carried)
        self.observation_keys = [key for key in env.observation_spec.keys() if key not in {*self.carried, *self.info_keys}]
        with torch.no_grad():
            self.carrier = env.reset()
            self.carrier.set(TRAJ_IDS, torch.arange(num_envs))
            self.next_traj_id = num_envs
            self.policy_keys, outputs = self._probe(policy)
            # the collector's layout: the env's fake step, the carrier, the policy's outputs; [envs, steps], zeros
            layout = env.fake_tensordict()
            layout.clear_device_()
            layout.update(self.carrier.copy())
            layout.update(outputs.select(*self.policy_keys))
            layout = layout.unsqueeze(-1).expand(num_envs, steps).clone().zero_()
            layout.set(TRAJ_IDS, torch.zeros(num_envs, steps, dtype=torch.int64))
            layout.refine_names(..., "time")
        self.layout = layout
        self._bind_carrier()
        self.returns_reader = returns_reader(env)  # fed each step's info where the env records its own returns
        # a recurrent policy also reads its hidden states and is_init, which the carrier holds
        self.tensor_policy = tensor_policy(policy, [*self.observation_keys, *self.carried], self.carrier.batch_size)

    def _probe(self, policy: nn.Module) -> tuple[list[Any], TensorDict]:
        """The collector's probe: the policy on a copy of the carrier; its output keys are those it added or
        changed, in the collector's order (a set's, built as the collector builds it)."""
        before = self.carrier.copy()
        outputs = policy(self.carrier.copy())
        changed = []
        for key in outputs.keys(True, True):
            value, old = outputs.get(key), before.get(key, None)
            if old is None or (value is not old and bool((~torch.isclose(value, old)).any())):
                changed.append(key)
        return list(set().union(set(changed))), outputs

    def _bind_carrier(self) -> None:
        """The carrier's observations and trajectory ids as tensors of its own, updated in place at every step."""
        self._observations, self._infos = [], []
        for key in [*self.observation_keys, *self.info_keys]:
            own = self.carrier.get(key).clone()
            self.carrier.set(key, own)
            (self._observations if key in self.observation_keys else self._infos).append(own)
        self.traj_ids = self.carrier.get(TRAJ_IDS).clone()
        self.carrier.set(TRAJ_IDS, self.traj_ids)
        self._inputs = dict(zip(self.observation_keys, self._observations))

    def __iter__(self) -> LeanRollouts:
        return self

    def __next__(self) -> TensorDict:
        rollout = self.layout.clone()  # a new rollout each batch, as the collector's clone: the loop may keep it
        slots = (
            [rollout.get(key) for key in self.observation_keys],
            [rollout.get(key) for key in self.policy_keys],
            rollout.get(TRAJ_IDS),
            [rollout.get(("next", key)) for key in FLAGS],
            [rollout.get(("next", key)) for key in self.observation_keys],
            [rollout.get(key) for key in self.carried],
            [(key, rollout.get(("next", key)), own) for key, own in zip(self.info_keys, self._infos)],  # step_vector_env's
            [rollout.get(key) for key in self.info_keys],
        )
        on_tensors = self.tensor_policy is not None and not self.tensor_policy.hooked()
        with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
            for t in range(self.steps):
                self._step(t, slots, on_tensors)
        for key, slot in zip(self.policy_keys, slots[1]):
            if not (isinstance(key, tuple) and key[0] == "next"):  # next hidden states: carried to the root already
                # the last step's outputs stay in the carrier, as in the collector's: as stored, since an identity
                # features module returns the very observation tensor the env step then overwrote
                self.carrier.set(key, slot[:, -1].clone())
        self.frames += self.frames_per_batch
        self.batches += 1
        return rollout

    def _step(self, t: int, slots: tuple[Any, ...], on_tensors: bool) -> None:
        observation_slots, policy_slots, traj_slot, flags, next_slots, carried_slots, infos, info_slots = slots
        for key, slot in zip(self.carried, carried_slots):
            slot[:, t] = self.carrier.get(key)  # the hidden state acted from, and whether the episode starts here
        if on_tensors:
            values = self.tensor_policy({**self._inputs, **{key: self.carrier.get(key) for key in self.carried}})
            outputs = [values[key] for key in self.policy_keys]
        else:
            acted = self.policy(self.carrier)
            outputs = [acted.get(key) for key in self.policy_keys]
            self.carrier.pop("next", None)  # a recurrent policy's next hidden states: carried below from its outputs
        for slot, observation in zip(observation_slots, self._observations):
            slot[:, t] = observation
        for slot, info in zip(info_slots, self._infos):
            slot[:, t] = info
        for slot, value in zip(policy_slots, outputs):
            slot[:, t] = value
        traj_slot[:, t] = self.traj_ids
        action = outputs[self.policy_keys.index("action")]
        done = step_vector_env(self.vector_env, action, t, self.observation_keys, flags, next_slots, self._observations,
                               self.returns_reader, infos)
        if self.carried:
            self._carry(torch.as_tensor(done), dict(zip(self.policy_keys, outputs)))
        if done.any():  # each ended sub-env starts a new trajectory, numbered in env order
            ended = torch.as_tensor(np.flatnonzero(done))
            self.traj_ids[ended] = torch.arange(self.next_traj_id, self.next_traj_id + len(ended))
            self.next_traj_id += len(ended)

    def _carry(self, done: torch.Tensor, outputs: dict[Any, torch.Tensor]) -> None:
        """What ``step_mdp`` and the reset's transforms leave in the carrier: the policy's ``("next", key)`` hidden
        states at the root, the primers' zeros where an episode ended, ``is_init`` true there only."""
        for key in self.hidden_keys:
            state = outputs[("next", key)]
            ended = done.view(-1, *[1] * (state.dim() - 1))
            self.carrier.set(key, torch.where(ended, torch.zeros((), dtype=state.dtype), state))
        self.carrier.set(INIT_KEY, done.view(-1, 1).clone())

    # -- checkpoints: the collector's keys, so a checkpoint resumes on either path -------------------

    def state_dict(self, raw_envs: Any = None) -> dict[str, Any]:
        from ...envs.state import vector_env_state

        return {"vector": vector_env_state(self.vector_env), "raw": None, "carrier": self.carrier.to_dict(),
                "frames": self.frames, "iter": self.batches - 1,
                "traj_pool": {"traj_id": torch.tensor(self.next_traj_id, dtype=torch.int32)}}  # fmt: skip

    def load_state_dict(self, state: dict[str, Any], raw_envs: Any = None) -> None:
        restore_envs(self.vector_env, self.env, self.carrier, state)
        self._bind_carrier()
        self.frames, self.batches = int(state["frames"]), int(state["iter"]) + 1
        self.next_traj_id = int(state["traj_pool"]["traj_id"])

    def close(self) -> None:
        pass


def make_rollouts(lean: bool, env: EnvBase, policy: nn.Module, num_envs: int, steps: int) -> LeanRollouts | CollectorRollouts:
    return LeanRollouts(env, policy, num_envs, steps) if lean else CollectorRollouts(env, policy, num_envs * steps)
