"""Translate IQL's neutral hyperparameters into each backend's own settings (no torch imports).

The dicts returned here are what ``rlplug show NAME --backend B`` prints, and a recipe's raw
``[recipes.X.skrl]`` / ``[recipes.X.torchrl]`` tables may override any of their keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug.families import offline_settings, optimizer_settings, target_settings


def _check(hp: Mapping[str, Any]) -> None:
    if not 0.0 < hp["expectile"] < 1.0:
        raise ValueError(f"expectile must be in (0, 1), got {hp['expectile']}")
    if hp["temperature"] < 0:
        raise ValueError(f"temperature must not be negative, got {hp['temperature']}")
    if hp["grad_norm_clip"] < 0:
        raise ValueError(f"grad_norm_clip must be >= 0, got {hp['grad_norm_clip']}")


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of rlplug's skrl ``IQL_CFG`` plus the models' shape and the offline loop's settings."""
    _check(hp)
    return {
        **optimizer_settings(hp),
        **offline_settings(hp, recipe),
        **target_settings(hp),
        "discount_factor": hp["gamma"],
        "expectile": hp["expectile"],
        "temperature": hp["temperature"],
        "learning_rate": [hp["actor_learning_rate"], hp["critic_learning_rate"], hp["value_learning_rate"]],
        "grad_norm_clip": hp["grad_norm_clip"],
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
    }


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``IQLLoss``, its TD(0) value estimator, the three Adam groups and the offline loop."""
    _check(hp)
    return {
        **optimizer_settings(hp),
        **offline_settings(hp, recipe),
        **target_settings(hp),
        "value_estimator": "td0",
        "gamma": hp["gamma"],
        "num_qvalue_nets": 2,
        "loss_function": "l2",
        "expectile": hp["expectile"],
        "temperature": hp["temperature"],
        "actor_lr": hp["actor_learning_rate"],
        "critic_lr": hp["critic_learning_rate"],
        "value_lr": hp["value_learning_rate"],
        "grad_norm_clip": hp["grad_norm_clip"],
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
    }
