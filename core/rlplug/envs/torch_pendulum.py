"""Pendulum-v1 in pure torch, batched on one device: a torch-native env with continuous actions (SAC's test bed).

IsaacLab-style like ``rlplug.envs.torch_cartpole`` (whose module doc says how it stands beside gymnasium's):
``env = "torch:rlplug.envs.torch_pendulum:pendulum"``.
"""

from __future__ import annotations

import math
from typing import Any


class TorchPendulum:
    """Gymnasium's Pendulum-v1 in torch, batched, IsaacLab-style (as ``TorchCartPole``): the same constants and
    step (torque clipped to [-2, 2], speed to [-8, 8], reward -(angle^2 + 0.1 speed^2 + 0.001 torque^2)), starts
    uniform in [-pi, pi] x [-1, 1], truncation after 200 steps, no termination; float32 state."""

    MAX_SPEED, MAX_TORQUE, DT, G, M, L = 8.0, 2.0, 0.05, 10.0, 1.0, 1.0

    def __init__(self, num_envs: int, device: Any = "cpu", seed: int = 0, max_episode_steps: int = 200) -> None:
        import gymnasium as gym
        import numpy as np
        import torch

        self.num_envs = int(num_envs)
        self.device = torch.device(device)
        self.max_episode_steps = int(max_episode_steps)
        high = np.array([1.0, 1.0, self.MAX_SPEED], dtype=np.float32)
        self.single_observation_space = gym.spaces.Dict({"policy": gym.spaces.Box(-high, high, dtype=np.float32)})
        self.single_action_space = gym.spaces.Box(-self.MAX_TORQUE, self.MAX_TORQUE, (1,), np.float32)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(seed))
        self.state = torch.zeros(self.num_envs, 2, device=self.device)
        self.steps = torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)

    @property
    def unwrapped(self) -> TorchPendulum:
        return self

    def _starts(self) -> Any:
        import torch

        unit = torch.rand(self.num_envs, 2, generator=self.generator, device=self.device) * 2 - 1
        return unit * torch.tensor([math.pi, 1.0], device=self.device)

    def _observations(self, state: Any) -> Any:
        import torch

        theta, speed = state.unbind(1)
        return torch.stack([torch.cos(theta), torch.sin(theta), speed], dim=1)

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
        if seed is not None:
            self.generator.manual_seed(int(seed))
        self.state = self._starts()
        self.steps.zero_()
        return {"policy": self._observations(self.state)}, {}

    def step(self, actions: Any) -> tuple[dict[str, Any], Any, Any, Any, dict[str, Any]]:
        import torch

        theta, speed = self.state.unbind(1)
        torque = actions.reshape(-1).to(self.device, torch.float32).clamp(-self.MAX_TORQUE, self.MAX_TORQUE)
        angle = torch.remainder(theta + math.pi, 2 * math.pi) - math.pi
        reward = -(angle**2 + 0.1 * speed**2 + 0.001 * torque**2)
        speed = speed + (3 * self.G / (2 * self.L) * torch.sin(theta) + 3.0 / (self.M * self.L**2) * torque) * self.DT
        speed = speed.clamp(-self.MAX_SPEED, self.MAX_SPEED)
        theta = theta + speed * self.DT
        final = torch.stack([theta, speed], dim=1)
        self.steps += 1
        truncated = self.steps >= self.max_episode_steps
        terminated = torch.zeros_like(truncated)
        self.state = torch.where(truncated.unsqueeze(1), self._starts(), final)
        self.steps = torch.where(truncated, 0, self.steps)
        return {"policy": self._observations(self.state)}, reward, terminated, truncated, {"final_obs": self._observations(final)}

    def close(self) -> None:
        pass


def pendulum(num_envs: int, device: str = "cpu", seed: int = 0, max_episode_steps: int = 200) -> TorchPendulum:
    """The IsaacLab-style factory: ``env = "torch:rlplug.envs.torch_pendulum:pendulum"``."""
    return TorchPendulum(num_envs, device, seed, max_episode_steps)
