"""skrl environments: seeding, the vectorised training env, and its state for checkpoints."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
import skrl
import torch
from skrl.envs.wrappers.torch import Wrapper, wrap_env
from skrl.utils import set_seed

from ...envs import env_errors

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


def make_vector_env(env_id: str, env_kwargs: Mapping[str, Any], num_envs: int, seed: int, device: str) -> Wrapper:
    """A sync gymnasium vector env wrapped by skrl, seeded with ``seed`` (sub-env ``i`` gets ``seed + i``).

    Autoreset: gymnasium's default NEXT_STEP mode makes the step after an episode's end a no-op
    reset that skrl stores as a real transition (an ignored action, reward 0, not done): one junk
    sample per episode that PPO would train its policy and value on. SAME_STEP resets inside the
    ending step, so every stored transition is real; it hands the reset observation back as the next
    observation and the true last observation in ``infos["final_obs"]``, which
    ``true_next_observations`` puts back wherever truncation bootstrapping needs it.

    Box actions are clipped to the space's bounds before they reach the env; the agent still stores the
    unclipped sample, so log-probabilities stay those of the Gaussian it drew from.
    """
    with env_errors(env_id, dict(env_kwargs), "training environment"):
        vector_env = gym.make_vec(
            env_id,
            num_envs=num_envs,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
            **env_kwargs,
        )
    space = vector_env.single_action_space
    if isinstance(space, gym.spaces.Box):
        # one np.clip over the whole batch per step
        vector_env = gym.wrappers.vector.TransformAction(vector_env, func=partial(np.clip, a_min=space.low, a_max=space.high))
    # the wrapper seeds the first reset with skrl's key, captured when it is constructed
    skrl.config.torch.key = seed
    env = wrap_env(vector_env, wrapper="gymnasium", verbose=False)
    # skrl picks cuda whenever it is available; keep env tensors on the device the models live on
    env._device = torch.device(device)
    return env


def env_state(env: Wrapper) -> dict[str, Any]:
    """The vector env's state (sub-envs mid-episode, their RNGs) and skrl's wrapper's, for checkpoints."""
    from ...envstate import snapshot, vector_env_state

    return {"vector": vector_env_state(env._env), "wrapper": snapshot(env)}


def load_env_state(env: Wrapper, state: dict[str, Any]) -> None:
    from ...envstate import load_vector_env_state, restore

    load_vector_env_state(env._env, state["vector"])
    restore(env, state["wrapper"])


def true_next_observations(next_observations: torch.Tensor, infos: Mapping[str, Any]) -> torch.Tensor:
    """``next_observations`` with the last observation of every episode that ended in this step.

    Under SAME_STEP autoreset the rows of ended episodes already hold the next episode's first
    observation; bootstrapping a truncated episode must use the state it was cut in instead.
    """
    if "_final_obs" not in infos:
        return next_observations
    mask = np.asarray(infos["_final_obs"], dtype=bool)
    finals = np.stack([np.asarray(o, dtype=np.float32).reshape(-1) for o in infos["final_obs"][mask]])
    patched = next_observations.clone()
    patched[torch.as_tensor(mask, device=patched.device)] = torch.as_tensor(finals, device=patched.device)
    return patched
