"""Environments that break the Gymnasium API, one way each, registered on import: what
``env = "broken_envs:WrongShape-v0"`` points at in the tests (``rlplug.envs.check`` must name them)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class Line(gym.Env):
    """A point on a line: observation (position, step fraction) as float32, reward -|position|, 20 steps an episode."""

    metadata = {"render_modes": []}

    def __init__(self, continuous: bool = False, low: float = -1.0) -> None:
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
        self.action_space = gym.spaces.Box(low, 1.0, (1,), np.float32) if continuous else gym.spaces.Discrete(2)
        self.continuous = continuous
        self.position, self.steps = 0.0, 0

    def observe(self):
        return np.array([self.position, self.steps / 20], dtype=np.float32)

    def reward(self) -> float:
        return -abs(self.position)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position, self.steps = float(self.np_random.uniform(-1.0, 1.0)), 0
        return self.observe(), {}

    def step(self, action):
        push = float(np.asarray(action).reshape(-1)[0]) if self.continuous else float(int(action)) * 2 - 1
        self.position = float(np.clip(self.position + 0.1 * push, -5.0, 5.0))
        self.steps += 1
        return self.observe(), self.reward(), False, self.steps >= 20, {}


class WrongShape(Line):
    def observe(self):
        return np.zeros(3, dtype=np.float32)


class WrongDtype(Line):
    def observe(self):
        return super().observe().astype(np.float64)


class OldStep(Line):
    """The gym < 0.26 API: ``step`` returns ``(obs, reward, done, info)``."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated or truncated, info


class ResetWithoutInfo(Line):
    def reset(self, *, seed=None, options=None):
        return super().reset(seed=seed, options=options)[0]


class StepRaises(Line):
    """Raises inside ``step`` after 30 steps in all (its second episode)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.total = 0

    def step(self, action):
        self.total += 1
        if self.total > 30:
            raise RuntimeError("the simulator lost its state")
        return super().step(action)


class NaNObservation(Line):
    def observe(self):
        observation = super().observe()
        if self.steps == 5:
            observation[0] = np.nan
        return observation


class InfReward(Line):
    def reward(self) -> float:
        return float("inf") if self.steps == 5 else super().reward()


for _name, _entry, _kwargs in [
    ("WrongShape-v0", WrongShape, {}), ("WrongDtype-v0", WrongDtype, {}), ("OldStep-v0", OldStep, {}),
    ("ResetWithoutInfo-v0", ResetWithoutInfo, {}), ("StepRaises-v0", StepRaises, {}),
    ("NaNObservation-v0", NaNObservation, {}), ("InfReward-v0", InfReward, {}),
    ("Line-v0", Line, {}), ("LineContinuous-v0", Line, {"continuous": True}),
    ("UnboundedActions-v0", Line, {"continuous": True, "low": -np.inf}),
]:
    gym.register(_name, entry_point=_entry, kwargs=_kwargs)
