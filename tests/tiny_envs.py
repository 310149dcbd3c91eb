"""A user's own environments, registered on import: what ``env = "tiny_envs:Tiny-v0"`` (or ``env_module``)
points at in the tests. Pure Python, so a checkpoint captures them mid-episode."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class TinyEnv(gym.Env):
    """Move a point on a line towards 0: observation (position, velocity, step fraction), reward -|position|."""

    metadata = {"render_modes": []}

    def __init__(self, continuous: bool = False, length: int = 50, fail: bool = False) -> None:
        if fail:
            raise ValueError("tiny env refuses to start (fail=True)")
        self.length = length
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32) if continuous else gym.spaces.Discrete(3)
        self.continuous = continuous
        self.position = self.velocity = 0.0
        self.steps = 0

    def _observation(self) -> np.ndarray:
        return np.array([self.position, self.velocity, self.steps / self.length], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.position = float(self.np_random.uniform(-1.0, 1.0))
        self.velocity, self.steps = 0.0, 0
        return self._observation(), {}

    def step(self, action):
        push = float(np.asarray(action).reshape(-1)[0]) if self.continuous else float(int(action) - 1)
        self.velocity = 0.8 * self.velocity + 0.1 * push + 0.01 * float(self.np_random.normal())
        self.position = float(np.clip(self.position + self.velocity, -2.0, 2.0))
        self.steps += 1
        return self._observation(), -abs(self.position), False, self.steps >= self.length, {}


gym.register("Tiny-v0", entry_point=TinyEnv)
gym.register("TinyContinuous-v0", entry_point=TinyEnv, kwargs={"continuous": True})
gym.register("TinyBroken-v0", entry_point=TinyEnv, kwargs={"fail": True})
