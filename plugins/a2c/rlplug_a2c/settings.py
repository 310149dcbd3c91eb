"""Translate A2C's neutral hyperparameters into each backend's own settings (no torch imports): the on-policy
family's translation, plus ``normalize_advantage``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug.families import skrl_onpolicy_settings, torchrl_onpolicy_settings


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``A2C_CFG``, the loss's scales, the optimiser, and ``normalize_advantage``."""
    return {**skrl_onpolicy_settings(hp, recipe), "normalize_advantage": hp["normalize_advantage"]}


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``A2CLoss``, its GAE estimator, the collector, the optimiser and rlplug's TorchRL loop; advantages
    standardised once over the rollout as skrl's ``compute_gae`` does (``advantage_norm_scope``)."""
    return {**torchrl_onpolicy_settings(hp, recipe), "value_estimator": "GAE",
            "normalize_advantage": hp["normalize_advantage"], "advantage_norm_scope": "rollout"}  # fmt: skip
