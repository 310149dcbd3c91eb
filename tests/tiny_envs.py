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
    """Pick the best of the valid actions: each step shows one of 4 states (one-hot); in each state 3 of the 5
    actions are valid and one of those pays 1 (the others 0); an invalid action ends the episode with no
    reward. 20 steps. The mask of valid actions is the Dict observation key ``action_mask`` (``mask="dict"``,
    PettingZoo's form, int8) or ``info["action_mask"]`` (``mask="info"``, Gymnasium's Taxi form). A random
    policy scores about 6.7 with the mask and about 0.4 without it; the best policy scores 20.

    ``continuous`` (Box actions) and ``mask_size`` (a mask of another length) are the refused cases."""

    metadata = {"render_modes": []}
    VALID = ((0, 1, 3), (1, 2, 4), (0, 2, 3), (2, 3, 4))
    BEST = (3, 1, 0, 4)

    def __init__(self, mask: str = "dict", length: int = 20, continuous: bool = False, mask_size: int = 5) -> None:
        if mask not in ("dict", "info"):
            raise ValueError(f"mask must be 'dict' or 'info', not {mask!r}")
        self.mask, self.length, self.mask_size = mask, length, mask_size
        features = gym.spaces.Box(0.0, 1.0, (len(self.VALID),), np.float32)
        if mask == "dict":
            mask_space = gym.spaces.Box(0, 1, (mask_size,), np.int8)
            self.observation_space = gym.spaces.Dict({"observation": features, "action_mask": mask_space})
        else:
            self.observation_space = features
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32) if continuous else gym.spaces.Discrete(5)
        self.state = self.steps = 0

    def _outcome(self) -> tuple:
        features = np.zeros(len(self.VALID), dtype=np.float32)
        features[self.state] = 1.0
        mask = np.zeros(self.mask_size, dtype=np.int8)
        mask[list(self.VALID[self.state])] = 1
        if self.mask == "dict":
            return {"observation": features, "action_mask": mask}, {}
        return features, {"action_mask": mask}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.state, self.steps = int(self.np_random.integers(len(self.VALID))), 0
        return self._outcome()

    def step(self, action):
        action = int(np.asarray(action).reshape(-1)[0])
        valid = action in self.VALID[self.state]
        reward = 1.0 if action == self.BEST[self.state] else 0.0
        self.steps += 1
        self.state = int(self.np_random.integers(len(self.VALID)))
        observation, info = self._outcome()
        return observation, reward, not valid, self.steps >= self.length and valid, info


gym.register("TinyMasked-v0", entry_point=TinyMaskedEnv)
gym.register("TinyMaskedInfo-v0", entry_point=TinyMaskedEnv, kwargs={"mask": "info"})
