"""Recipes translated from a neighbour's config (RL Baselines3 Zoo entries, skrl Runner files): one ``Row`` per
key saying what it became, or why it was dropped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def value_text(value: Any) -> str:
    """A value as the translation lines show it (TOML-like: ``true``, ``"x"``, ``0.0003``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float):
        return repr(float(f"{value:.6g}"))
    return repr(value)


@dataclass
class Row:
    key: str
    value: Any
    text: str
    """translated: the rlplug settings it became (``rollout_steps = 32``); dropped: why."""
    origin: str = "zoo"
    """Where the key came from: ``zoo`` / ``skrl`` (the file says it), ``sb3`` (SB3's default for a key a Zoo
    entry leaves out), ``behaviour`` (a fixed behaviour of the source library, not a key)."""
