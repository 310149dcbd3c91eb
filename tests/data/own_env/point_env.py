"""A one-dimensional point that moves toward the origin: the smallest continuous-control env."""
import gymnasium as gym
import numpy as np


class Point1D(gym.Env):
    observation_space = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = self.np_random.uniform(-5, 5, size=1).astype(np.float32)
        return self.x.copy(), {}

    def step(self, action):
        self.x = np.clip(self.x + np.clip(action, -1, 1).astype(np.float32), -10, 10).astype(np.float32)
        return self.x.copy(), -float(abs(self.x[0])), False, False, {}


gym.register("Point1D-v0", entry_point=Point1D, max_episode_steps=50)
