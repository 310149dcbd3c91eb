"""CartPole-v1 in pure torch, batched on one device: a torch-native env for ``env = "torch:..."`` recipes.

``rlplug.envs.torch_native`` describes the two interfaces a torch-native env can have; this env is written in the
IsaacLab style (``TorchCartPole``, factory ``torch:rlplug.envs.torch_cartpole:cartpole``);
``rlplug.backends.torchrl.torch_env.IsaacLabEnv(TorchCartPole(...))`` is the same env as a TorchRL ``EnvBase``
(the tests train both).

Gymnasium's CartPole-v1 step for step: the same constants, Euler integration, the same termination (|x| > 2.4,
|theta| > 12 degrees), reward 1 on every step (the terminating one too), truncation after 500 steps (TimeLimit),
starting states uniform in [-0.05, 0.05]. Two differences: the state is float32 (gymnasium keeps float64 and
returns float32 observations), and an ended episode resets inside the step (IsaacLab's autoreset) with its last
observation in ``extras["final_obs"]``. Nothing leaves the device: no step synchronises with the host.
"""

from __future__ import annotations

import math
from typing import Any

GRAVITY, MASS_CART, MASS_POLE, LENGTH, FORCE, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
TOTAL_MASS = MASS_CART + MASS_POLE
POLE_MASS_LENGTH = MASS_POLE * LENGTH
THETA_LIMIT = 12 * 2 * math.pi / 360
X_LIMIT = 2.4
MAX_EPISODE_STEPS = 500


class TorchCartPole:
    """``num_envs`` CartPoles on ``device`` with the IsaacLab-style interface (``rlplug.envs.torch_native``)."""

    def __init__(self, num_envs: int, device: Any = "cpu", seed: int = 0, max_episode_steps: int = MAX_EPISODE_STEPS) -> None:
        import gymnasium as gym
        import numpy as np
        import torch

        self.num_envs = int(num_envs)
        self.device = torch.device(device)
        self.max_episode_steps = int(max_episode_steps)
        high = np.array([X_LIMIT * 2, np.inf, THETA_LIMIT * 2, np.inf], dtype=np.float32)
        self.single_observation_space = gym.spaces.Dict({"policy": gym.spaces.Box(-high, high, dtype=np.float32)})
        self.single_action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Dict({"policy": gym.vector.utils.batch_space(self.single_observation_space["policy"], self.num_envs)})
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(seed))
        self.state = torch.zeros(self.num_envs, 4, device=self.device)
        self.steps = torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)

    @property
    def unwrapped(self) -> TorchCartPole:
        return self

    def _starts(self) -> Any:
        import torch

        return torch.rand(self.num_envs, 4, generator=self.generator, device=self.device) * 0.1 - 0.05

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
        if seed is not None:
            self.generator.manual_seed(int(seed))
        self.state = self._starts()
        self.steps.zero_()
        return {"policy": self.state.clone()}, {}

    def step(self, actions: Any) -> tuple[dict[str, Any], Any, Any, Any, dict[str, Any]]:
        import torch

        x, x_dot, theta, theta_dot = self.state.unbind(1)
        force = torch.where(actions.reshape(-1).to(self.device) == 1, FORCE, -FORCE)
        cos, sin = torch.cos(theta), torch.sin(theta)
        temp = (force + POLE_MASS_LENGTH * theta_dot**2 * sin) / TOTAL_MASS
        theta_acc = (GRAVITY * sin - cos * temp) / (LENGTH * (4.0 / 3.0 - MASS_POLE * cos**2 / TOTAL_MASS))
        x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos / TOTAL_MASS
        x, x_dot = x + TAU * x_dot, x_dot + TAU * x_acc
        theta, theta_dot = theta + TAU * theta_dot, theta_dot + TAU * theta_acc
        final = torch.stack([x, x_dot, theta, theta_dot], dim=1)
        self.steps += 1
        terminated = (x.abs() > X_LIMIT) | (theta.abs() > THETA_LIMIT)
        truncated = self.steps >= self.max_episode_steps
        ended = terminated | truncated
        # every env draws a start each step, used where its episode ended: no data-dependent branch, no sync
        self.state = torch.where(ended.unsqueeze(1), self._starts(), final)
        self.steps = torch.where(ended, 0, self.steps)
        reward = torch.ones(self.num_envs, device=self.device)
        return {"policy": self.state.clone()}, reward, terminated, truncated, {"final_obs": final}

    def close(self) -> None:
        pass


def cartpole(num_envs: int, device: str = "cpu", seed: int = 0, max_episode_steps: int = MAX_EPISODE_STEPS) -> TorchCartPole:
    """The IsaacLab-style factory: ``env = "torch:rlplug.envs.torch_cartpole:cartpole"``."""
    return TorchCartPole(num_envs, device, seed, max_episode_steps)
