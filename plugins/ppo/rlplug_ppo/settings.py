"""Translate PPO's neutral hyperparameters into each backend's own settings (no torch imports).

The dicts returned here are what ``rlplug show NAME --backend B`` prints, and a recipe's raw
``[recipes.X.skrl]`` / ``[recipes.X.torchrl]`` tables may override any of their keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _updates(hp: Mapping[str, Any], recipe: Any) -> int:
    """Number of rollouts (= updates) the recipe's step budget gives."""
    per_update = hp["rollout_steps"] * recipe.num_envs
    return max(1, -(-recipe.steps // per_update))


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``PPO_CFG`` (class names as strings; the backend maps them to classes)."""
    schedule, schedule_kwargs = None, {}
    if hp["lr_schedule"] == "kl_adaptive":
        schedule, schedule_kwargs = "KLAdaptiveLR", {"kl_threshold": hp["kl_target"]}
    elif hp["lr_schedule"] == "linear":
        # skrl steps PPO schedulers once per epoch
        schedule = "LinearLR"
        schedule_kwargs = {"start_factor": 1.0, "end_factor": 0.0, "total_iters": _updates(hp, recipe) * hp["epochs"]}
    return {
        "rollouts": hp["rollout_steps"],
        "learning_epochs": hp["epochs"],
        "mini_batches": hp["minibatches"],
        "discount_factor": hp["gamma"],
        "gae_lambda": hp["gae_lambda"],
        "learning_rate": hp["learning_rate"],
        "learning_rate_scheduler": schedule,
        "learning_rate_scheduler_kwargs": schedule_kwargs,
        "observation_preprocessor": "RunningStandardScaler" if hp["normalize_observations"] else None,
        "value_preprocessor": "RunningStandardScaler" if hp["normalize_values"] else None,
        "grad_norm_clip": hp["max_grad_norm"],
        "ratio_clip": hp["clip_ratio"],
        "value_clip": hp["value_clip"],
        "entropy_loss_scale": hp["entropy_coef"],
        "value_loss_scale": hp["value_coef"],
        "kl_threshold": hp["kl_early_stop"],
        "time_limit_bootstrap": hp["bootstrap_truncated"],
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
        "initial_log_std": hp["initial_log_std"],
    }


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``ClipPPOLoss``, the GAE estimator, the collector and rlplug's TorchRL loop."""
    frames_per_batch = hp["rollout_steps"] * recipe.num_envs
    return {
        "frames_per_batch": frames_per_batch,
        "num_epochs": hp["epochs"],
        "minibatch_size": max(1, frames_per_batch // hp["minibatches"]),
        "value_estimator": "GAE",
        "gamma": hp["gamma"],
        "lmbda": hp["gae_lambda"],
        "clip_epsilon": hp["clip_ratio"],
        "clip_value": hp["value_clip"] or None,
        "entropy_coeff": hp["entropy_coef"],
        "critic_coeff": hp["value_coef"],
        "loss_critic_type": "l2",
        "normalize_advantage": True,
        "lr": hp["learning_rate"],
        "lr_schedule": hp["lr_schedule"],
        "kl_target": hp["kl_target"],
        "total_updates": _updates(hp, recipe) * hp["epochs"],
        "max_grad_norm": hp["max_grad_norm"],
        "kl_early_stop": hp["kl_early_stop"],
        "normalize_observations": hp["normalize_observations"],
        "normalize_values": hp["normalize_values"],
        "bootstrap_truncated": hp["bootstrap_truncated"],
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
        "initial_log_std": hp["initial_log_std"],
    }
