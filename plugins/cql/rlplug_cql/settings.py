"""Translate CQL's neutral hyperparameters into each backend's own settings (no torch imports).

The dicts returned here are what ``rlplug show NAME --backend B`` prints, and a recipe's raw
``[recipes.X.skrl]`` / ``[recipes.X.torchrl]`` tables may override any of their keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug.families import critic_settings, offline_settings, optimizer_settings, target_settings


def _target_entropy(hp: Mapping[str, Any]) -> float | None:
    """``None`` for "auto" (each backend then uses -action_dim), else the number."""
    value = hp["target_entropy"]
    return None if value == "auto" else float(value)


def _common(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Checks, then what both backends read under the same names: the offline loop and the target update."""
    if hp["initial_alpha"] <= 0:
        raise ValueError(f"initial_alpha must be positive, got {hp['initial_alpha']}")
    if hp["grad_norm_clip"] < 0:
        raise ValueError(f"grad_norm_clip must be >= 0, got {hp['grad_norm_clip']}")
    if hp["min_q_weight"] < 0:
        raise ValueError(f"min_q_weight must be >= 0, got {hp['min_q_weight']}")
    if hp["num_random"] < 1:
        raise ValueError(f"num_random must be at least 1, got {hp['num_random']}")
    if hp["temperature"] <= 0:
        raise ValueError(f"temperature must be positive, got {hp['temperature']}")
    return {
        **offline_settings(hp, recipe),
        **target_settings(hp),
        "grad_norm_clip": float(hp["grad_norm_clip"]),
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
    }


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of rlplug's ``CQL_CFG`` (skrl's SAC_CFG names where SAC has the field) plus the models' shape."""
    return {
        **optimizer_settings(hp),
        **critic_settings(hp),
        **_common(hp, recipe),
        "discount_factor": hp["gamma"],
        "learning_rate": [hp["actor_learning_rate"], hp["critic_learning_rate"], hp["alpha_learning_rate"]],
        "learn_entropy": hp["learn_alpha"],
        "initial_entropy_value": hp["initial_alpha"],
        "target_entropy": _target_entropy(hp),
        "min_q_weight": hp["min_q_weight"],
        "num_random": hp["num_random"],
        "temperature": hp["temperature"],
        "deterministic_backup": hp["deterministic_backup"],
        "td_loss": "mse" if hp["td_loss"] == "l2" else "huber",
    }


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``CQLLoss`` / ``DiscreteCQLLoss``, the TD(0) estimator and the Adam groups."""
    return {
        **optimizer_settings(hp),
        **critic_settings(hp),
        **_common(hp, recipe),
        "gamma": hp["gamma"],
        "value_estimator": "td0",
        "loss_function": "l2" if hp["td_loss"] == "l2" else "smooth_l1",
        "alpha_init": hp["initial_alpha"],
        "fixed_alpha": not hp["learn_alpha"],
        "target_entropy": "auto" if _target_entropy(hp) is None else _target_entropy(hp),
        "min_q_weight": hp["min_q_weight"],
        "num_random": hp["num_random"],
        "temperature": hp["temperature"],
        "deterministic_backup": hp["deterministic_backup"],
        "actor_lr": hp["actor_learning_rate"],
        "critic_lr": hp["critic_learning_rate"],
        "alpha_lr": hp["alpha_learning_rate"],
    }
