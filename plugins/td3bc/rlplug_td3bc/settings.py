"""Translate TD3+BC's neutral hyperparameters into the settings td3's backends read (no torch imports).

The dicts returned here are what ``rlplug show td3bc --backend B`` prints, and a recipe's raw
``[recipes.X.skrl]`` / ``[recipes.X.torchrl]`` tables may override any of their keys. They are TD3's
settings with the offline loop's in place of the replay and exploration ones: skrl's ``TD3_CFG`` still
has exploration fields, which get the values that turn exploration off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug.families import offline_settings, optimizer_settings, target_settings


def _common(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Checks, then what both backends read under the same names."""
    if hp["policy_delay"] < 1:
        raise ValueError(f"policy_delay must be at least 1, got {hp['policy_delay']}")
    if hp["alpha"] < 0 or hp["target_policy_noise"] < 0 or hp["target_noise_clip"] < 0:
        raise ValueError("alpha, target_policy_noise and target_noise_clip must not be negative")
    return {
        **optimizer_settings(hp),
        **offline_settings(hp, recipe),
        **target_settings(hp),
        "policy_delay": int(hp["policy_delay"]),
        "alpha": float(hp["alpha"]),
        "normalize_observations": bool(hp["normalize_observations"]),
        "grad_norm_clip": hp["grad_norm_clip"],
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
    }


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``TD3_CFG`` as td3's skrl backend reads them, exploration off."""
    return {
        **_common(hp, recipe),
        "discount_factor": hp["gamma"],
        "learning_rate": [hp["actor_learning_rate"], hp["critic_learning_rate"]],
        "smooth_regularization_noise": "GaussianNoise" if hp["target_policy_noise"] > 0 else None,
        "smooth_regularization_noise_kwargs": {"mean": 0.0, "std": hp["target_policy_noise"]},
        "smooth_regularization_clip": hp["target_noise_clip"],
        "exploration_noise": None,
        "exploration_noise_kwargs": {},
        "exploration_scale_start": 1.0,
        "exploration_scale_end": 1.0,
        "exploration_decay_steps": 0,
    }


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``TD3BCLoss`` and its TD(0) estimator, and the learning rates of its two parameter groups."""
    return {
        **_common(hp, recipe),
        "gamma": hp["gamma"],
        "value_estimator": "td0",
        "policy_noise": hp["target_policy_noise"],
        "noise_clip": hp["target_noise_clip"],
        "loss_function": "l2",  # the paper's MSE; TD3BCLoss defaults to smooth_l1
        "actor_lr": hp["actor_learning_rate"],
        "critic_lr": hp["critic_learning_rate"],
    }
