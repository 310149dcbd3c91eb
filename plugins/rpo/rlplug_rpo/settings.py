"""RPO's backend settings: PPO's, plus ``alpha`` (a field of skrl's ``RPO_CFG``; the TorchRL cell's perturbation)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_ppo import settings as ppo


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``RPO_CFG``: ``PPO_CFG``'s and ``alpha``."""
    return {**ppo.skrl_settings(hp, recipe), "alpha": hp["alpha"]}


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """PPO's ``ClipPPOLoss`` and loop settings (skrl's semantics, ``TORCHRL_PARITY_SETTINGS``), and ``alpha``."""
    return {**ppo.torchrl_settings(hp, recipe), "alpha": hp["alpha"]}
