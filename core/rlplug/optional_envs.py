"""Gymnasium ids that need registering before ``gymnasium.make`` finds them: MinAtar's (``MinAtar/Breakout-v1``)
are registered by ``minatar.gym.register_envs()``, which nothing calls on import. Torch-free and cheap: a
package is imported only when an id of its family is asked for and it is installed.
"""

from __future__ import annotations

import importlib.util
import logging

_REGISTERED: set[str] = set()


def register_optional_envs(env_id: str) -> None:
    """Register the ids of the optional suite ``env_id`` belongs to, once, when its package is installed.

    Called where env ids are resolved (``Session.prepare``, before the environment is probed); an id of
    a suite that is not installed is left to the usual unknown-environment line.
    """
    if env_id.startswith("MinAtar/") and "minatar" not in _REGISTERED and importlib.util.find_spec("minatar"):
        _register_minatar()


def _register_minatar() -> None:
    import gymnasium as gym

    _REGISTERED.add("minatar")
    if any(name.startswith("MinAtar/") for name in gym.registry):
        return
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # minatar.gym logs a warning on import when seaborn (rendering only) is absent
    try:
        from minatar.gym import register_envs
    finally:
        root.setLevel(level)
    register_envs()
