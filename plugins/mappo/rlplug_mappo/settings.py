"""Translate MAPPO's neutral hyperparameters into each backend's own settings (no torch imports).

The dicts returned here are what ``rlplug show NAME --backend B`` prints; a recipe's raw
``[recipes.X.skrl]`` / ``[recipes.X.torchrl]`` tables may override any of their keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _models(hp: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "centralised_critic": hp["centralised_critic"],
        "share_parameters": hp["share_parameters"],
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
        "initial_log_std": hp["initial_log_std"],
    }


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``MAPPO_CFG`` (applied to every agent) plus the model settings."""
    return {
        "rollouts": hp["rollout_steps"],
        "learning_epochs": hp["epochs"],
        "mini_batches": hp["minibatches"],
        "discount_factor": hp["gamma"],
        "gae_lambda": hp["gae_lambda"],
        "learning_rate": hp["learning_rate"],
        "grad_norm_clip": hp["max_grad_norm"],
        "ratio_clip": hp["clip_ratio"],
        "value_clip": hp["value_clip"],
        "entropy_loss_scale": hp["entropy_coef"],
        "value_loss_scale": hp["value_coef"],
        "value_preprocessor": "RunningStandardScaler" if hp["normalize_values"] else None,
        **_models(hp),
    }


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``MAPPOLoss``, its MAGAE estimator, the collector and rlplug's TorchRL loop."""
    frames_per_batch = hp["rollout_steps"] * recipe.num_envs
    return {
        "frames_per_batch": frames_per_batch,
        "num_epochs": hp["epochs"],
        "minibatch_size": max(1, frames_per_batch // hp["minibatches"]),
        "gamma": hp["gamma"],
        "lmbda": hp["gae_lambda"],
        "clip_epsilon": hp["clip_ratio"],
        "clip_value": hp["value_clip"] or None,
        "entropy_coeff": hp["entropy_coef"],
        "critic_coeff": hp["value_coef"],
        "loss_critic_type": "l2",
        "lr": hp["learning_rate"],
        "max_grad_norm": hp["max_grad_norm"],
        "normalize_values": hp["normalize_values"],
        **_models(hp),
    }
