"""Environment probing: the spaces of a Gymnasium id, and what kind of action space they are."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import RlplugError, SpaceError, UnknownNameError
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


@contextmanager
def env_errors(env_id: str, env_kwargs: dict[str, Any], where: str = "") -> Iterator[None]:
    """Make an environment inside this block: whatever its constructor raises becomes one line naming the
    env and its ``env_kwargs`` (``mpe:simple_spread`` with ``N = 0`` raises a numpy ``ValueError``, VMAS an
    ``AssertionError`` for an unknown scenario). rlplug's own errors pass through unchanged.

    Used around the probe in ``Session.prepare``; the run layer wraps its own environment constructions
    (the training and evaluation envs) the same way.
    """
    try:
        yield
    except RlplugError:
        raise
    except Exception as err:  # noqa: BLE001 - third-party constructors raise anything (AssertionError too)
        kwargs = f" with env_kwargs {env_kwargs}" if env_kwargs else ""
        message = " ".join(str(err).split()) or "(no message)"
        if len(message) > 200:
            message = message[:197] + "..."
        raise SpaceError(
            f"{where + ': ' if where else ''}environment '{env_id}' failed to start{kwargs}: {type(err).__name__}: {message}"
        ) from err
