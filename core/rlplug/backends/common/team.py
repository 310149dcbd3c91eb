"""The joint spaces of a team of homogeneous agents, as value-decomposition cells see it (both backends)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from ...errors import SpaceError


def team_spaces(build: Any) -> tuple[gym.spaces.Box, gym.spaces.MultiDiscrete]:
    """The joint ``(observation, action)`` spaces of a build's homogeneous agents (``MultiAgentSpaces``): every
    agent's flat observation side by side (a masked agent's ``[action_mask, observation]``, as skrl flattens a
    Dict) and one action index per agent. Non-Discrete actions are refused in one line."""
    spaces = build.extras["multiagent"]
    if not isinstance(spaces.action_space, gym.spaces.Discrete):
        raise SpaceError(
            f"{build.algorithm.name} needs Discrete actions, '{build.env_id}' has {type(spaces.action_space).__name__} "
            "ones (MPE: env_kwargs continuous_actions = false)"
        )
    size = spaces.mask_size + int(np.prod(spaces.feature_space.shape))
    observation = gym.spaces.Box(-np.inf, np.inf, (spaces.n_agents * size,), np.float32)
    return observation, gym.spaces.MultiDiscrete([int(spaces.action_space.n)] * spaces.n_agents)
