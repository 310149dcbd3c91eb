"""How a TorchRL off-policy trainer collects its batches: the lean path (default) or TorchRL's ``Collector``.

Both yield the same batches, ``[num_envs, train_every]`` tensordicts of the transition keys, in the same
order, from the same env chain, seeding, random warm-up, exploration draws and autoreset (a test compares
the replay contents and the losses of both on a fixed seed). They differ in what each step costs:

* ``CollectorCollection`` (``collector = true``): TorchRL's ``Collector`` over ``make_env``'s env. Every step
  goes through TorchRL's ``GymWrapper`` and transforms, ``step_mdp``, and the stack of per-step tensordicts.
* ``LeanCollection``: steps the gymnasium vector env under that same TorchRL env itself, runs the
  exploration policy on tensors (``acting.tensor_policy``; on one reused tensordict, the carrier, where a
  module needs one), and writes each step into a preallocated ``[num_envs, train_every]`` block, which
  the replay buffer is extended with once per batch.

The TorchRL env is built either way (``make_env``): its construction probes and seeds the vector env, its
specs give the block's layout, and its ``rand_action`` draws the warm-up actions, so the lean path starts
from the very state the collector does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict
from torch import nn
from torchrl.envs import EnvBase, ExplorationType, set_exploration_type

from ...envs.masks import ACTION_MASK_KEY
from .acting import tensor_policy
from .buffers import extend_quietly
from .env import EndedReturns, collector_state, load_collector_state, make_collector, returns_reader


class CollectorCollection:
    """TorchRL's ``Collector``: ``frames_per_batch = num_envs * steps_per_batch``, uniformly random actions
    (``env.rand_action``) while fewer than ``init_random_frames`` transitions were collected (whole batches)."""

    def __init__(self, env: EnvBase, policy: nn.Module, num_envs: int, steps_per_batch: int, init_random_frames: int,
                 keys: Sequence[Any]) -> None:  # fmt: skip
        self.env, self.keys = env, tuple(keys)
        self.collector = make_collector(env, policy, num_envs * steps_per_batch)
        self.collector.init_random_frames = init_random_frames
        self._batches = iter(self.collector)

    @property
    def frames(self) -> int:
        return int(self.collector._frames)

    @property
    def init_random_frames(self) -> int:
        return int(self.collector.init_random_frames)

    def next_batch(self) -> TensorDict:
        return next(self._batches)

    def own_batch(self, batch: TensorDict) -> TensorDict:
        return batch  # a new tensordict every batch already

    def store(self, memory: Any, batch: TensorDict) -> None:
        extend_quietly(memory, batch.select(*self.keys).reshape(-1))

    def state_dict(self, raw_envs: Sequence[Any] | None = None) -> dict[str, Any]:
        return collector_state(self.collector, raw_envs)

    def load_state_dict(self, state: dict[str, Any], raw_envs: Sequence[Any] | None = None) -> None:
        load_collector_state(self.collector, state, raw_envs)

    def close(self) -> None:
        self.collector.shutdown()


class LeanCollection:
    """The collector's loop without its per-step tensordicts: the same batches, a fraction of the Python.

    What the ``Collector`` does, step for step: the exploration policy acts in RANDOM exploration mode on
    the current observations (``env.rand_action`` during the warm-up, which counts whole batches), on
    tensors (``acting.tensor_policy``) or else on the carrier (the env's reset tensordict, where keys the
    policy leaves, such as the OU noise's state, carry over as through ``step_mdp``); the action steps the
    gymnasium vector env as TorchRL's wrapper does (``step_vector_env``). Construction makes the one policy
    call the collector makes to find the policy's output keys, so the random streams stay aligned.
    """

    def __init__(self, env: EnvBase, policy: nn.Module, num_envs: int, steps_per_batch: int, init_random_frames: int,
                 keys: Sequence[Any]) -> None:  # fmt: skip
        self.env, self.policy, self.keys = env, policy, tuple(keys)
        self.vector_env = env.base_env._env
        self.num_envs, self.steps_per_batch = num_envs, steps_per_batch
        self.frames_per_batch = num_envs * steps_per_batch
        self.init_random_frames = init_random_frames
        self.frames = 0
        with torch.no_grad():
            self.carrier = env.reset()
            policy(self.carrier.copy())  # the collector's probe of the policy's outputs: the same draws
            template = env.fake_tensordict().select(*self.keys)
        # [num_envs, steps] as the collector's batches; flat: the same memory, env-major, for the replay
        self.block = template.unsqueeze(-1).expand(num_envs, steps_per_batch).clone()
        self.flat = self.block.reshape(-1)
        self.observation_keys = [key for key in self.keys if isinstance(key, str) and key != "action"]
        self._obs_slots = [self.block.get(key) for key in self.observation_keys]
        self._next_slots = [self.block.get(("next", key)) for key in self.observation_keys]
        self._action_slot = self.block.get("action")
        self._flags = [self.block.get(("next", key)) for key in ("reward", "terminated", "truncated", "done")]
        self._bind_observations()
        self.returns_reader = returns_reader(env)  # fed each step's info where the env records its own returns
        # the policy on tensors where all its modules allow (acting.py), else on the carrier
        self.tensor_policy = tensor_policy(policy, self.observation_keys, self.carrier.batch_size)

    def _bind_observations(self) -> None:
        """The carrier's observations as tensors of its own, updated in place at every step (a reset's may
        share memory with the env's arrays)."""
        self._observations = []
        for key in self.observation_keys:
            own = self.carrier.get(key).clone()
            self.carrier.set(key, own)
            self._observations.append(own)
        self._inputs = dict(zip(self.observation_keys, self._observations))

    def next_batch(self) -> TensorDict:
        random = self.frames < self.init_random_frames
        with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
            for t in range(self.steps_per_batch):
                self._step(t, random)
        self.frames += self.frames_per_batch
        return self.block

    def _step(self, t: int, random: bool) -> None:
        carrier = self.carrier
        if random:
            if ACTION_MASK_KEY in self._inputs:  # what ActionMask does at each env step, which this path bypasses
                self.env.input_spec["full_action_spec"]["action"].update_mask(self._inputs[ACTION_MASK_KEY])
            action = self.env.rand_action(carrier).get("action")
        elif self.tensor_policy is not None and not self.tensor_policy.hooked():
            action = self.tensor_policy(dict(self._inputs))["action"]
        else:
            action = self.policy(carrier).get("action")
        for slot, observation in zip(self._obs_slots, self._observations):
            slot[:, t] = observation
        self._action_slot[:, t] = action
        step_vector_env(self.vector_env, action, t, self.observation_keys, self._flags, self._next_slots, self._observations,
                        self.returns_reader)

    def own_batch(self, batch: TensorDict) -> TensorDict:
        """A batch hook ops may change at will (``set`` a new reward): a shallow copy, so the block the next
        batch is written into keeps its tensors."""
        return batch.copy()

    def store(self, memory: Any, batch: TensorDict) -> None:
        """The batch into the replay: the block's flat view, or (hook ops had a copy) the batch's keys."""
        if batch is not self.block:
            extend_quietly(memory, batch.select(*self.keys).reshape(-1))
            return
        extend_quietly(memory, self.flat)

    # -- checkpoints: the vector env (mid-episode sub-envs, RNGs), the carrier, the frame count ------------

    def state_dict(self, raw_envs: None = None) -> dict[str, Any]:  # raw_envs: the collector's signature (never multi-agent)
        from ...envs.state import vector_env_state

        # the collector's keys ("iter": batches): a checkpoint resumes on either path
        return {"vector": vector_env_state(self.vector_env), "carrier": self.carrier.to_dict(), "frames": self.frames,
                "iter": self.frames // self.frames_per_batch}

    def load_state_dict(self, state: dict[str, Any], raw_envs: None = None) -> None:
        restore_envs(self.vector_env, self.env, self.carrier, state)
        self._bind_observations()
        self.frames = int(state["frames"])

    def close(self) -> None:
        pass


def make_collection(lean: bool, *args: Any) -> LeanCollection | CollectorCollection:
    return (LeanCollection if lean else CollectorCollection)(*args)


def restore_envs(vector_env: Any, env: EnvBase, carrier: TensorDict, state: dict[str, Any]) -> None:
    """A lean path's envs and carrier as a checkpoint's ``state_dict`` left them (the collector's keys)."""
    from ...envs.state import load_vector_env_state

    restarted = load_vector_env_state(vector_env, state["vector"])
    carrier.update(TensorDict.from_dict(state["carrier"], batch_size=carrier.batch_size))
    if restarted:  # sub-envs whose state a checkpoint cannot hold start new episodes
        with torch.no_grad():
            carrier.update(env.reset())


def step_vector_env(vector_env: Any, action: torch.Tensor, t: int, observation_keys: Sequence[str], flags: Sequence[torch.Tensor],
                    next_slots: Sequence[torch.Tensor], observations: Sequence[torch.Tensor],
                    returns: EndedReturns | None = None, infos: Sequence[tuple[str, torch.Tensor, torch.Tensor]] = ()) -> np.ndarray:  # fmt: skip
    """One step of the gymnasium vector env (SAME_STEP autoreset) as TorchRL's ``GymWrapper`` steps it, written
    into column ``t`` of a ``[num_envs, steps]`` block: ``flags`` are its ``("next", reward / terminated /
    truncated / done)`` tensors, ``next_slots`` its ``("next", key)`` ones by observation key, and
    ``observations`` the tensors collection goes on from, updated in place. Returns the step's done flags.

    ``("next", key)`` is the step's observation, or the ended episode's last one (``final_obs``) where a
    sub-env reset; collection goes on from the returned (reset) observation, or, when every sub-env ended on
    the step, from one more reset of the whole vector env (unseeded), as TorchRL's wrapper does. ``returns``: the
    env's ``EndedReturns`` reader, handed the step's info as TorchRL's wrapper hands it to its readers. ``infos``:
    ``(key, next slot, current tensor)`` of each info entry TorchRL's info reader adds to the steps, handled as
    an observation is: the ended episode's last value (``final_info``) where a sub-env reset, the reset's next."""
    observation, reward, terminated, truncated, info = vector_env.step(action.cpu().numpy())
    if returns is not None:
        returns(info, None)
    reward_slot, terminated_slot, truncated_slot, done_slot = flags
    reward_slot[:, t, 0] = torch.as_tensor(reward)
    terminated_slot[:, t, 0] = torch.as_tensor(terminated)
    truncated_slot[:, t, 0] = torch.as_tensor(truncated)
    torch.logical_or(terminated_slot[:, t], truncated_slot[:, t], out=done_slot[:, t])
    ended = info.get("_final_obs")
    by_key = _by_key(observation, observation_keys)
    for key, slot in zip(observation_keys, next_slots):
        slot[:, t] = torch.as_tensor(by_key[key])
    for key, slot, _ in infos:  # an entry no sub-env's info holds (every one reset: MuJoCo's x_velocity) reads as zeros
        slot[:, t] = torch.as_tensor(info[key]) if key in info else 0
    done = np.logical_or(terminated, truncated)
    current = info
    if done.all():
        # the autoreset's observations are dropped: collection goes on from TorchRL's extra reset
        observation, current = vector_env.reset()
        by_key = _by_key(observation, observation_keys)
    for key, own in zip(observation_keys, observations):
        own.copy_(torch.as_tensor(by_key[key]))
    for key, _, own in infos:  # an entry a reset's info lacks (MuJoCo's reward_forward) reads as zeros
        own.copy_(torch.as_tensor(current[key])) if key in current else own.zero_()
    if ended is not None and ended.any():
        for i in np.flatnonzero(ended):
            finals = _by_key(info["final_obs"][i], observation_keys)
            for key, slot in zip(observation_keys, next_slots):
                slot[i, t] = torch.as_tensor(finals[key])
            for key, slot, _ in infos:
                slot[i, t] = torch.as_tensor(info["final_info"][key][i])
    return done


def _by_key(observation: Any, observation_keys: Sequence[str]) -> Any:
    """A gymnasium observation by the tensordict's keys: a Dict space's dict as is, else ``"observation"``."""
    return observation if isinstance(observation, dict) else {observation_keys[0]: observation}

