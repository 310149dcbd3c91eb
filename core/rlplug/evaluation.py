"""The one deterministic evaluation loop every cell uses: its own gymnasium environment, no exploration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

EVAL_SEED_OFFSET = 10_000
"""Evaluation environments are seeded ``seed + EVAL_SEED_OFFSET + episode`` so they never replay training resets."""


def evaluate_policy(
    env_id: str,
    env_kwargs: dict[str, Any],
    act: Callable[[np.ndarray], np.ndarray],
    episodes: int,
    seed: int,
    max_steps: int = 100_000,
    video_dir: str | None = None,
) -> list[float]:
    """Run ``episodes`` episodes with ``act(observation[None]) -> action[None]`` and return their returns.

    ``act`` receives a batch of one observation and must return a batch of one action chosen
    deterministically (argmax / distribution mean); no exploration noise. ``video_dir`` records every
    episode there with gymnasium's ``RecordVideo`` (which needs ``moviepy``).
    """
    import gymnasium as gym

    from .envs import env_errors

    with env_errors(env_id, env_kwargs, "evaluation"):
        if video_dir is None:
            env = gym.make(env_id, **env_kwargs)
        else:
            env = gym.wrappers.RecordVideo(
                gym.make(env_id, render_mode="rgb_array", **env_kwargs), video_dir, episode_trigger=lambda _: True,
                name_prefix="eval", disable_logger=True,
            )
    returns: list[float] = []
    try:
        for episode in range(episodes):
            obs, _ = env.reset(seed=seed + EVAL_SEED_OFFSET + episode)
            total, done, steps = 0.0, False, 0
            while not done and steps < max_steps:
                action = act(np.asarray(obs, dtype=np.float32)[None])[0]
                if isinstance(env.action_space, gym.spaces.Discrete):
                    action = int(np.asarray(action).reshape(-1)[0])
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                done = terminated or truncated
                steps += 1
            returns.append(total)
    finally:
        env.close()
    return returns
