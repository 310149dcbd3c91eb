"""Translate BC's neutral hyperparameters into each backend's own settings (no torch imports).

The dicts returned here are what ``rlplug show NAME --backend B`` prints, and a recipe's raw
``[recipes.X.skrl]`` / ``[recipes.X.torchrl]`` tables may override any of their keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug.families import offline_settings, optimizer_settings


def _common(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    if hp["grad_norm_clip"] < 0:
        raise ValueError(f"grad_norm_clip must be >= 0, got {hp['grad_norm_clip']}")
    return {
        **optimizer_settings(hp),
        **offline_settings(hp, recipe),
        "loss_function": hp["loss_function"],
        "grad_norm_clip": hp["grad_norm_clip"],
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
    }


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of rlplug's skrl ``BC_CFG`` plus the model's shape and the offline loop's settings."""
    return {**_common(hp, recipe), "learning_rate": hp["learning_rate"]}


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``BCLoss``, the Adam's learning rate and the offline loop's settings."""
    return {**_common(hp, recipe), "lr": hp["learning_rate"]}
