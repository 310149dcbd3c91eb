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


class TinyMaskedEnv(gym.Env):
    """Pick the best of the valid actions: each step shows one of ``states`` states (one-hot); in each state 3 of
    the ``actions`` actions are valid and one of those pays 1 (the others 0); an invalid action ends the episode
    with no reward. 20 steps, so the best return is 20; a random policy scores about 6.7 with the mask and far
    less without it (0.5 with the default 5 actions). Which actions are valid and best is a fixed table
    (``np.random.default_rng(0)``), the same for every seed.

    The mask of valid actions is the Dict observation key ``action_mask`` (``mask="dict"``, PettingZoo's form,
    int8) or ``info["action_mask"]`` (``mask="info"``, Gymnasium's Taxi form). ``continuous`` (Box actions) and
    ``mask_size`` (a mask of another length) are the refused cases."""

    metadata = {"render_modes": []}

    def __init__(self, mask: str = "dict", states: int = 4, actions: int = 5, length: int = 20, continuous: bool = False,
                 mask_size: int | None = None) -> None:  # fmt: skip
        if mask not in ("dict", "info"):
            raise ValueError(f"mask must be 'dict' or 'info', not {mask!r}")
        self.mask, self.length, self.mask_size = mask, length, mask_size or actions
        table = np.random.default_rng(0)
        self.valid = [sorted(int(a) for a in table.choice(actions, 3, replace=False)) for _ in range(states)]
        self.best = [valid[int(table.integers(3))] for valid in self.valid]
        features = gym.spaces.Box(0.0, 1.0, (states,), np.float32)
        if mask == "dict":
            mask_space = gym.spaces.Box(0, 1, (self.mask_size,), np.int8)
            self.observation_space = gym.spaces.Dict({"observation": features, "action_mask": mask_space})
        else:
            self.observation_space = features
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32) if continuous else gym.spaces.Discrete(actions)
        self.state = self.steps = 0

    def _outcome(self) -> tuple:
        features = np.zeros(len(self.valid), dtype=np.float32)
        features[self.state] = 1.0
        mask = np.zeros(self.mask_size, dtype=np.int8)
        mask[self.valid[self.state]] = 1
        if self.mask == "dict":
            return {"observation": features, "action_mask": mask}, {}
        return features, {"action_mask": mask}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.state, self.steps = int(self.np_random.integers(len(self.valid))), 0
        return self._outcome()

    def step(self, action):
        action = int(np.asarray(action).reshape(-1)[0])
        valid = action in self.valid[self.state]
        reward = 1.0 if action == self.best[self.state] else 0.0
        self.steps += 1
        self.state = int(self.np_random.integers(len(self.valid)))
        observation, info = self._outcome()
        return observation, reward, not valid, self.steps >= self.length and valid, info


gym.register("TinyMasked-v0", entry_point=TinyMaskedEnv)
gym.register("TinyMaskedInfo-v0", entry_point=TinyMaskedEnv, kwargs={"mask": "info"})
