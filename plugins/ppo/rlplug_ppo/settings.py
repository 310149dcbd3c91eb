"""Translate PPO's neutral hyperparameters into each backend's own settings (no torch imports).

The dicts returned here are what ``rlplug show NAME --backend B`` prints, and a recipe's raw
``[recipes.X.skrl]`` / ``[recipes.X.torchrl]`` tables may override any of their keys. PPO's
parameters are the on-policy family's (``rlplug.families``), so is their translation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug.families import skrl_onpolicy_settings, torchrl_onpolicy_settings


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``PPO_CFG`` (class names as strings; the backend maps them to classes)."""
    return skrl_onpolicy_settings(hp, recipe)


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``ClipPPOLoss``, the GAE estimator, the collector and rlplug's TorchRL loop."""
    return {**torchrl_onpolicy_settings(hp, recipe), "value_estimator": "GAE", "normalize_advantage": True}
