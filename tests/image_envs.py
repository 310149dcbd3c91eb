"""Tiny generated environments for the encoder tests, registered with gymnasium when this module is imported.

* ``RlplugTinyImage-v0`` / ``RlplugTinyImageBox-v0``: a 12x12x1 uint8 frame with one bright 3x3 square;
  the reward is 1 for pointing at its side (left or right half): Discrete(2), or the sign of a Box(1) action.
* ``RlplugTinyDict-v0`` / ``RlplugTinyDictBox-v0``: ``Dict(image = 8x8x1 uint8, vector = 3 floats)``.
* ``RlplugTinyVolume-v0``: a 4-D Box (2x3x4x5) that no built-in encoder accepts.

Episodes end by a 16-step time limit, so every cell sees truncations and resets.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

EPISODE = 16


class _Tiny(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, continuous: bool = False) -> None:
        self.continuous = continuous
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32) if continuous else spaces.Discrete(2)
        self._side = 0

    def _frame(self, size: int) -> np.ndarray:
        frame = np.zeros((size, size, 1), dtype=np.uint8)
        self._side = int(self.np_random.integers(2))
        column = int(self.np_random.integers(0, size // 2 - 2)) + self._side * (size // 2)
        row = int(self.np_random.integers(0, size - 3))
        frame[row : row + 3, column : column + 3, 0] = 255
        return frame

    def _reward(self, action: object) -> float:
        chosen = int(np.asarray(action).reshape(-1)[0] > 0) if self.continuous else int(action)
        return float(chosen == self._side)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        return self._observe(), {}

    def step(self, action):
        reward = self._reward(action)
        return self._observe(), reward, False, False, {}


class TinyImageEnv(_Tiny):
    def __init__(self, continuous: bool = False) -> None:
        super().__init__(continuous)
        self.observation_space = spaces.Box(0, 255, (12, 12, 1), np.uint8)

    def _observe(self) -> np.ndarray:
        return self._frame(12)


class TinyDictEnv(_Tiny):
    def __init__(self, continuous: bool = False) -> None:
        super().__init__(continuous)
        self.observation_space = spaces.Dict(
            {"image": spaces.Box(0, 255, (8, 8, 1), np.uint8), "vector": spaces.Box(-1.0, 1.0, (3,), np.float32)}
        )

    def _observe(self) -> dict[str, np.ndarray]:
        image = self._frame(8)
        vector = self.np_random.uniform(-1, 1, 3).astype(np.float32)
        vector[0] = 1.0 if self._side else -1.0  # the side is in both parts
        return {"image": image, "vector": vector}


class TinyVolumeEnv(_Tiny):
    def __init__(self) -> None:
        super().__init__(False)
        self.observation_space = spaces.Box(0.0, 1.0, (2, 3, 4, 5), np.float32)

    def _observe(self) -> np.ndarray:
        volume = np.zeros((2, 3, 4, 5), dtype=np.float32)
        self._side = int(self.np_random.integers(2))
        volume[self._side] = 1.0
        return volume


def _register() -> None:
    for env_id, entry, kwargs in (
        ("RlplugTinyImage-v0", TinyImageEnv, {}),
        ("RlplugTinyImageBox-v0", TinyImageEnv, {"continuous": True}),
        ("RlplugTinyDict-v0", TinyDictEnv, {}),
        ("RlplugTinyDictBox-v0", TinyDictEnv, {"continuous": True}),
        ("RlplugTinyVolume-v0", TinyVolumeEnv, {}),
    ):
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry, kwargs=kwargs, max_episode_steps=EPISODE)


_register()
