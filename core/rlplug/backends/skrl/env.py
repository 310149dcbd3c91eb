"""skrl environments: seeding, the vectorised training env, and its state for checkpoints."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import skrl
import torch
from skrl.envs.wrappers.torch import Wrapper, wrap_env
from skrl.utils import set_seed

from ...envs.factory import env_errors, make_gym_vector_env
from ...envs.spec import EnvSpec
from ...envs.torch_native import FINAL_OBS_KEY

# ---- seeding ------------------------------------------------------------------------------------


def seed_skrl(seed: int) -> None:
    """skrl's ``set_seed``, quietly: python ``random``, numpy and torch (offset by rank in distributed
    runs) and ``skrl.config.torch.key``, which skrl's gymnasium wrapper reads when it is constructed
    (reference §8). Call ``configure_threads()`` too: one torch thread (reference §13).
    """
    level = skrl.logger.level
    skrl.logger.setLevel(max(level, logging.WARNING))  # skrl logs "Seed: N" at INFO on every call
    try:
        set_seed(seed)
    finally:
        skrl.logger.setLevel(level)


# ---- environments -------------------------------------------------------------------------------


def make_vector_env(env: str | EnvSpec, env_kwargs: Mapping[str, Any] | None, num_envs: int, seed: int, device: str) -> Wrapper:
    """A sync gymnasium vector env wrapped by skrl, seeded with ``seed`` (sub-env ``i`` gets ``seed + i``).

    ``env``: an id or the build's ``build.env_spec`` (the recipe's wrappers, ``rlplug.envs.factory``); each sub-env is
    ``rlplug.envs.factory.make_gym_env``'s chain, the same one the TorchRL backend and the evaluation make.

    Autoreset: gymnasium's default NEXT_STEP mode makes the step after an episode's end a no-op
    reset that skrl stores as a real transition (an ignored action, reward 0, not done): one junk
    sample per episode that PPO would train its policy and value on. SAME_STEP resets inside the
    ending step, so every stored transition is real; it hands the reset observation back as the next
    observation and the true last observation in ``infos["final_obs"]``, which
    ``true_next_observations`` puts back wherever truncation bootstrapping needs it.

    Box actions are clipped to the space's bounds inside each sub-env (``clip_actions``, on by default);
    the agent still stores the unclipped sample, so log-probabilities stay those of the Gaussian it drew from.
    """
    spec = EnvSpec.of(env, env_kwargs)
    with env_errors(spec.id, dict(spec.kwargs), "training environment"):
        vector_env = make_gym_vector_env(spec, None, num_envs)
    # the wrapper seeds the first reset with skrl's key, captured when it is constructed
    skrl.config.torch.key = seed
    wrapped = wrap_env(vector_env, wrapper="gymnasium", verbose=False)
    # skrl picks cuda whenever it is available; keep env tensors on the device the models live on
    wrapped._device = torch.device(device)
    return wrapped


def make_torch_native_vector_env(env_id: str, env_kwargs: Mapping[str, Any] | None, num_envs: int, seed: int, device: str,
                                 clip_actions: bool = True) -> Wrapper:  # fmt: skip
    """A torch-native env (``rlplug.envs.torch_native``) through skrl's own IsaacLab wrapper: tensors in, tensors out,
    on the env's device (a TorchRL ``EnvBase`` is first seen through ``EnvBaseAsIsaacLab``). Its first reset is
    seeded with ``seed``, as the gymnasium path's; Box actions are clamped into their bounds on their way in
    (``clip_actions``, the recipe's; the agent stores the unclamped sample)."""
    from ...envs.torch_native import isaaclab_style, make_torch_env

    with env_errors(env_id, dict(env_kwargs or {}), "training environment"):
        env = isaaclab_style(make_torch_env(env_id, env_kwargs, num_envs, device, seed), env_id, clip_actions)
    skrl.config.torch.key = seed  # the wrapper seeds its first reset with skrl's key, captured when it is constructed
    return wrap_env(env, wrapper="isaaclab", verbose=False)


def is_torch_native(env: Wrapper) -> bool:
    """Whether a skrl-wrapped env is a torch-native one (``make_torch_native_vector_env``'s)."""
    from skrl.envs.wrappers.torch.isaaclab_envs import IsaacLabWrapper

    return isinstance(env, IsaacLabWrapper)


def env_state(env: Wrapper) -> dict[str, Any] | None:
    """The vector env's state (sub-envs mid-episode, their RNGs, MuJoCo physics) and skrl's wrapper's, for checkpoints.
    ``None`` for a torch-native env, whose simulator state rlplug cannot capture: a resumed run starts new episodes."""
    from ...envs.state import snapshot, vector_env_state

    if is_torch_native(env):
        return None
    return {"vector": vector_env_state(env._env), "wrapper": snapshot(env)}


def load_env_state(env: Wrapper, state: dict[str, Any]) -> torch.Tensor | None:
    """Restore ``env_state``. Returns ``None`` when the sub-envs resume mid-episode, or the observations of
    freshly reset episodes when their state could not be captured (Box2D, ALE: ``rlplug.envs.state``); the
    trainer steps on from those instead of the checkpoint's."""
    from ...envs.state import load_vector_env_state, restore

    if state is None:  # a torch-native env: new episodes (env_state)
        env._reset_once, env._seed = True, None
        observations, _ = env.reset()
        return observations
    restarted = load_vector_env_state(env._env, state["vector"])
    restore(env, state["wrapper"])
    if not restarted:
        return None
    env._reset_once, env._seed = True, None  # skrl resets a vector env once; this is a second first reset
    observations, _ = env.reset()
    return observations


def true_next_observations(next_observations: torch.Tensor, infos: Mapping[str, Any]) -> torch.Tensor:
    """``next_observations`` with the last observation of every episode that ended in this step.

    Under SAME_STEP autoreset the rows of ended episodes already hold the next episode's first
    observation; bootstrapping a truncated episode must use the state it was cut in instead.
    """
    finals = infos.get(FINAL_OBS_KEY) if isinstance(infos, Mapping) else None
    if isinstance(finals, torch.Tensor):  # a torch-native env's last observations, every row (rlplug.envs.torch_native)
        return finals.reshape(next_observations.shape).to(next_observations.dtype)
    if "_final_obs" not in infos:
        return next_observations
    mask = np.asarray(infos["_final_obs"], dtype=bool)
    finals = np.stack([_flat(o) for o in infos["final_obs"][mask]])
    patched = next_observations.clone()
    patched[torch.as_tensor(mask, device=patched.device)] = torch.as_tensor(finals, device=patched.device)
    return patched


def _flat(observation: Any) -> np.ndarray:
    """One observation as skrl flattens it: float32, a Dict's keys concatenated in sorted order."""
    if isinstance(observation, Mapping):
        return np.concatenate([np.asarray(observation[k], dtype=np.float32).reshape(-1) for k in sorted(observation)])
    return np.asarray(observation, dtype=np.float32).reshape(-1)
