"""Environment probing: the spaces of a Gymnasium id, and what kind of action space they are."""

from __future__ import annotations

from typing import Any

from .errors import SpaceError, UnknownNameError
from .suggest import did_you_mean


def probe_spaces(env_id: str, env_kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """Make the environment once and return ``(observation_space, action_space)``."""
    import gymnasium as gym

    if env_id not in gym.registry:
        raise UnknownNameError(f"unknown environment '{env_id}'" + did_you_mean(env_id, gym.registry.keys()))
    try:
        env = gym.make(env_id, **env_kwargs)
    except TypeError as err:
        raise SpaceError(f"environment '{env_id}' rejected env_kwargs {env_kwargs}: {err}") from None
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def action_space_kind(space: Any) -> str:
    """``discrete``, ``continuous`` or ``multi-discrete``; anything else is refused."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Discrete):
        return "discrete"
    if isinstance(space, gym.spaces.Box):
        return "continuous"
    if isinstance(space, gym.spaces.MultiDiscrete):
        return "multi-discrete"
    raise SpaceError(f"action space {space} is not supported (discrete, continuous or multi-discrete)")


def check_observation_space(space: Any, env_id: str) -> None:
    import gymnasium as gym

    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise SpaceError(
            f"environment '{env_id}' has observation space {space}; rlplug's default models need a flat Box "
            "(override rlplug_build_models in a plugin for images or dict observations)"
        )
