"""A user's own wrapper module for the ``wrappers`` recipe field's tests (imported by path, like a user's)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class ScaleObservation(gym.ObservationWrapper):
    """Multiplies every observation by ``factor`` (the space scaled to match)."""

    def __init__(self, env: gym.Env, factor: float = 1.0) -> None:
        super().__init__(env)
        self.factor = factor
        space = env.observation_space
        self.observation_space = gym.spaces.Box(space.low * factor, space.high * factor, dtype=space.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return (observation * self.factor).astype(self.observation_space.dtype)


def refusing(env: gym.Env, reason: str = "no") -> gym.Env:
    raise ValueError(f"this wrapper refuses ({reason})")


def not_an_env(env: gym.Env) -> object:
    return object()


NOT_CALLABLE = 3
