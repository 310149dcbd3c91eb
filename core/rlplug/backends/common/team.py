"""The joint spaces of a team of homogeneous agents, as value-decomposition cells see it (both backends)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from ...errors import SpaceError


def team_spaces(build: Any) -> tuple[gym.spaces.Box, gym.spaces.MultiDiscrete]:
    """The joint ``(observation, action)`` spaces of a build's homogeneous agents (``MultiAgentSpaces``)."""
    spaces = build.extras["multiagent"]
    if spaces.masked:
        raise SpaceError(
            f"environment '{build.env_id}' has action masks; {build.algorithm.name} learns joint values without them "
            "(use mappo or ippo, which honour masks)"
        )
    if not isinstance(spaces.action_space, gym.spaces.Discrete):
        raise SpaceError(
            f"{build.algorithm.name} needs Discrete actions, '{build.env_id}' has {type(spaces.action_space).__name__} "
            "ones (MPE: env_kwargs continuous_actions = false)"
        )
    size = int(np.prod(spaces.observation_space.shape))
    observation = gym.spaces.Box(-np.inf, np.inf, (spaces.n_agents * size,), np.float32)
    return observation, gym.spaces.MultiDiscrete([int(spaces.action_space.n)] * spaces.n_agents)
