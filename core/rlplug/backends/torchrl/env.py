"""TorchRL environments: the training env, action clamping, the collector and their checkpoint state."""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict
from torch import nn
from torchrl.collectors import Collector
from torchrl.envs import ActionMask, DoubleToFloat, EnvBase, GymWrapper, Transform, TransformedEnv
from torchrl.envs.libs.gym import terminal_obs_reader

from ...envs.factory import env_errors, make_gym_vector_env
from ...envs.masks import ACTION_MASK_KEY, has_action_mask
from ...envs.spec import EnvSpec
from ...envs.wrappers import ended_returns

# ---- environments -------------------------------------------------------------------------------


class ClampAction(Transform):
    """Clamps Box actions to the space's bounds on their way into the environment.

    An inverse transform works on a shallow copy of the step's tensordict, so the collected batch
    keeps the unclamped sample and its log-probability stays that of the distribution it came from.
    """

    def __init__(self, low: np.ndarray, high: np.ndarray, action_key: str = "action") -> None:
        super().__init__(in_keys_inv=[action_key], out_keys_inv=[action_key])
        self.register_buffer("low", torch.as_tensor(low, dtype=torch.float32))
        self.register_buffer("high", torch.as_tensor(high, dtype=torch.float32))

    def _inv_apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        return torch.clamp(action, self.low, self.high)


@contextlib.contextmanager
def quiet_torchrl_info() -> Iterator[None]:
    """Hide TorchRL's INFO log lines (wrapping a vector env, filling a lazy storage) for a moment."""
    logger = logging.getLogger("torchrl")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def numeric_info(info: Mapping[str, Any], keep: str) -> dict[str, Any]:
    """A vector env's info without the entries TorchRL cannot stack (object arrays of anything but the final
    observations ``keep``: DeepMind Control's ``timestep.step_type`` enums, its ``timestep.discount`` of None at a
    reset), nested dicts filtered alike. Numeric entries, all other envs' infos, pass unchanged."""
    kept: dict[str, Any] = {}
    for key, value in info.items():
        if isinstance(value, Mapping):
            kept[key] = numeric_info(value, keep)
        elif key == keep or not (isinstance(value, np.ndarray) and value.dtype == object):
            kept[key] = value
    return kept


class FinalObservations(terminal_obs_reader):
    """TorchRL 0.14's reader of a gymnasium vector env's final observations (``info["final_obs"]``), reading the
    info's numeric entries only (``numeric_info``): upstream's reader stacks every entry and fails on an object
    array of enums or of None (``IndexError`` in ``replace_none``)."""

    def __call__(self, info_dict: Any, tensordict: Any) -> Any:
        return super().__call__(numeric_info(info_dict, self.backend_key[self.backend]), tensordict)


class DictFinalObservations(terminal_obs_reader):
    """TorchRL 0.14's reader of a gymnasium vector env's final observations (``info["final_obs"]``, where an
    episode ended in the step), for a Dict observation space. Upstream's nests the Dict's stacked final
    observations under ``"observation"`` and then reads each key of the space at the top: it writes zeros for
    every key, and fails (``StopIteration``) when the Dict has an ``"observation"`` key itself (PettingZoo's
    ``{"observation", "action_mask"}``). Here upstream reads the info without them (zeros, and its spec
    bookkeeping), then each ended env's final observation is written key by key."""

    def __call__(self, info_dict: Any, tensordict: Any) -> Any:
        key = self.backend_key[self.backend]
        finals = info_dict.get(key)
        tensordict = super().__call__({k: v for k, v in numeric_info(info_dict, key).items() if k != key}, tensordict)
        if finals is not None:
            for name in self._obs_spec.keys():
                buffer = tensordict.get((self.name, name))
                for i, final in enumerate(finals):
                    if final is not None:
                        buffer[i] = torch.as_tensor(np.asarray(final[name]), device=buffer.device)
        return tensordict


@contextlib.contextmanager
def final_observation_reader(reader: type) -> Iterator[None]:
    """``GymWrapper`` registers its final-observation reader while it is constructed (and runs a probe rollout
    with it): inside this block it constructs ``reader`` (``FinalObservations``, ``DictFinalObservations``) instead
    of upstream's."""
    import torchrl.envs.libs.gym as gym_library

    upstream = gym_library.terminal_obs_reader
    gym_library.terminal_obs_reader = reader
    try:
        yield
    finally:
        gym_library.terminal_obs_reader = upstream


class EndedReturns:
    """An info reader of ``make_env``'s ``GymWrapper`` where the env records its own returns (``normalize_reward``:
    ``rlplug.envs.wrappers``): the returns of the episodes that ended on a step, queued in step order for the
    trainer's tracker, which takes one entry at each step with ends (``take``). It writes nothing into the step's
    tensordict: the batches, their keys and ``lean_obstacle``'s verdict are as without it. The lean paths step the
    gymnasium vector env themselves and hand it each step's info (``step_vector_env``)."""

    def __init__(self) -> None:
        self.queue: deque[np.ndarray] = deque()

    def __call__(self, info: Mapping[str, Any], tensordict: Any) -> Any:
        returns = ended_returns(info)
        if returns is not None:
            self.queue.append(returns)
        return tensordict

    def take(self, dones: np.ndarray) -> np.ndarray | None:
        """The recorded returns of the next step with ends (``dones``: that step's flags), ``None`` where none ended."""
        return self.queue.popleft() if dones.any() else None


def returns_reader(env: EnvBase) -> EndedReturns | None:
    """The ``EndedReturns`` reader ``make_env`` registered on ``env``, or ``None``: summed rewards are its returns."""
    readers = getattr(getattr(env, "base_env", env), "info_dict_reader", None) or ()
    return next((reader for reader in readers if isinstance(reader, EndedReturns)), None)


def make_env(env: str | EnvSpec, env_kwargs: Mapping[str, Any] | None, num_envs: int, seed: int, device: str = "cpu") -> EnvBase:
    """``num_envs`` copies of a gymnasium env stepped in this process, batch size ``[num_envs]``, seeded.

    ``env``: an id or the build's ``build.env_spec`` (the recipe's wrappers, ``rlplug.envs.factory``); each copy is
    ``rlplug.envs.factory.make_gym_env``'s chain, the same one the skrl backend and the evaluation make.

    A gymnasium ``SyncVectorEnv`` wrapped once by TorchRL: TorchRL's per-step overhead is then paid
    once per vector step instead of once per sub-env. Measured on the 2-core box (CartPole, 8 envs,
    64x64 policy, ``Collector``, frames/s): this 3.6k-5.3k; ``SerialEnv(8, GymEnv)`` 2.1k-3.1k;
    ``GymEnv(num_envs=8)`` (gymnasium ``AsyncVectorEnv`` subprocesses) 2.7k-3.1k after a 14-38 s start.

    SAME_STEP autoreset is what TorchRL's wrapper accepts: it writes the true last observation of an
    ended episode to ``("next", "observation")`` and the reset observation to the next root, so
    ``("next", "truncated")`` steps can be bootstrapped. Sub-env ``i`` is seeded with ``seed + i``.
    Box actions are clipped to their bounds inside each sub-env (``clip_actions``; the collected batch keeps
    the unclipped sample); float64 observations become float32. An action mask (``rlplug.envs.masks``: a bool
    ``"action_mask"`` entry) also masks the action spec (TorchRL's ``ActionMask``), so ``env.rand_action`` draws
    valid actions. Where the env records its own returns (``normalize_reward``), an ``EndedReturns`` reader reads them.
    """
    spec = EnvSpec.of(env, env_kwargs)
    with env_errors(spec.id, dict(spec.kwargs), "training environment"):
        vector_env = make_gym_vector_env(spec, None, num_envs)
    # an explicit CPU device makes every tensordict write check and cast devices: ~15-20 % fewer
    # frames/s when collecting CartPole; without one, tensors are created on the CPU anyway
    placement = {} if torch.device(device).type == "cpu" else {"device": device}
    dict_space = isinstance(vector_env.single_observation_space, gym.spaces.Dict)
    finals = final_observation_reader(DictFinalObservations if dict_space else FinalObservations)
    # the wrapper's spec probe steps the not yet seeded envs with random actions from torch's global RNG until
    # one ends (an invalid masked action ends TinyMasked at once): a varying number of draws, so it gets a fork
    # of the RNG and a seeded run's random stream does not depend on it
    with quiet_torchrl_info(), finals, torch.random.fork_rng(devices=[]):  # quiet: it logs the probe
        wrapped = GymWrapper(vector_env, categorical_action_encoding=True, **placement)
    if not isinstance(wrapped, TransformedEnv):
        wrapped = TransformedEnv(wrapped)
    observation_space = vector_env.single_observation_space
    if getattr(observation_space, "dtype", None) == np.float64:
        wrapped.append_transform(DoubleToFloat())
    if has_action_mask(observation_space):  # random actions (a warm-up's env.rand_action) among the valid ones
        wrapped.append_transform(ActionMask())
    if spec.normalize_reward:  # the training returns to report: the env's own, not the normalised rewards' sums
        wrapped.base_env.set_info_dict_reader(EndedReturns())
    wrapped.set_seed(seed)
    return wrapped


def make_collector(env: EnvBase, policy: nn.Module, frames_per_batch: int, total_frames: int = -1) -> Collector:
    """An in-process ``Collector`` yielding ``[num_envs, frames_per_batch // num_envs]`` batches.

    ``auto_register_policy_transforms=False`` pins today's behaviour: TorchRL 0.15 will append an
    ``InitTracker`` to the env by default, and 0.14 warns on every construction (reference §5, §13).
    The policy is used as is (no copy), so optimiser steps on it are seen by the next batch.
    """
    return Collector(
        env,
        policy,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        auto_register_policy_transforms=False,
    )


def collector_state(collector: Collector, raw_envs: Sequence[Any] | None = None) -> dict[str, Any]:
    """Where a collector stands: the gymnasium vector env under it (sub-envs mid-episode, RNGs), the
    carrier tensordict it steps from next, and its frame and batch counters.

    ``raw_envs``: the library envs under a multi-agent TorchRL env (PettingZoo, VMAS), saved with
    ``deep_snapshot`` instead of the gymnasium vector env.
    """
    from ...envs.state import deep_snapshot, vector_env_state

    state = {
        # a torch-native env's simulator (rlplug.envs.torch_native) cannot be captured: a resumed run starts new episodes
        "vector": vector_env_state(collector.env.base_env._env) if raw_envs is None and _gymnasium_under(collector.env) else None,
        "raw": None if raw_envs is None else [deep_snapshot(env) for env in raw_envs],
        "carrier": collector._carrier.to_dict(),
        "frames": int(collector._frames),
        "iter": int(collector._iter),
    }
    if getattr(collector, "_traj_pool_val", None) is not None:
        state["traj_pool"] = collector._traj_pool.state_dict()
    return state


def _gymnasium_under(env: EnvBase) -> bool:
    return isinstance(getattr(getattr(env, "base_env", None), "_env", None), gym.vector.VectorEnv)


def load_collector_state(collector: Collector, state: dict[str, Any], raw_envs: Sequence[Any] | None = None) -> None:
    """Restore ``collector_state``. Sub-envs whose state a checkpoint cannot capture (Box2D, ALE:
    ``rlplug.envs.state``) start new episodes instead, and the carrier steps on from their reset."""
    from ...envs.state import deep_restore, load_vector_env_state

    restarted = False
    if raw_envs is None and state["vector"] is None:  # a torch-native env (collector_state)
        restarted = True
    elif raw_envs is None:
        restarted = load_vector_env_state(collector.env.base_env._env, state["vector"])
    else:
        if len(raw_envs) != len(state["raw"]):
            raise ValueError(f"the checkpoint holds {len(state['raw'])} environments, this run has {len(raw_envs)}")
        for env, saved in zip(raw_envs, state["raw"]):
            deep_restore(env, saved)
    carrier = TensorDict.from_dict(state["carrier"], batch_size=collector._carrier.batch_size)
    collector._carrier.update(carrier)
    if restarted:
        collector._carrier.update(collector.env.reset())
    if ACTION_MASK_KEY in collector._carrier.keys():  # ActionMask's spec mask: the carrier's, not the fresh env's reset
        collector.env.input_spec["full_action_spec"]["action"].update_mask(collector._carrier.get(ACTION_MASK_KEY))
    collector._frames = state["frames"]
    collector._iter = state["iter"]
    if "traj_pool" in state:
        collector._traj_pool.load_state_dict(state["traj_pool"])
