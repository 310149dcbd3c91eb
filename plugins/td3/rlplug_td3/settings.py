"""Translate TD3's neutral hyperparameters into each backend's own settings (no torch imports).

The dicts returned here are what ``rlplug show NAME --backend B`` prints, and a recipe's raw
``[recipes.X.skrl]`` / ``[recipes.X.torchrl]`` tables may override any of their keys. Both carry the
shared replay / cadence / target-update settings of ``rlplug.families.replay_settings``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug.families import critic_settings, optimizer_settings, replay_settings, skrl_estimator_check, torchrl_estimator_settings


def _check(hp: Mapping[str, Any]) -> None:
    if hp["policy_delay"] < 1:
        raise ValueError(f"policy_delay must be at least 1, got {hp['policy_delay']}")
    if not 0.0 <= hp["exploration_final_scale"] <= 1.0:
        raise ValueError(f"exploration_final_scale must be in [0, 1], got {hp['exploration_final_scale']}")
    if hp["exploration_std"] < 0 or hp["target_policy_noise"] < 0 or hp["target_noise_clip"] < 0:
        raise ValueError("exploration_std, target_policy_noise and target_noise_clip must not be negative")


def _exploration(hp: Mapping[str, Any]) -> dict[str, Any]:
    """The exploration-noise scale schedule, in environment steps (transitions summed over envs)."""
    return {
        "exploration_scale_start": 1.0,
        "exploration_scale_end": float(hp["exploration_final_scale"]),
        "exploration_decay_steps": int(hp["exploration_decay_steps"]),
    }


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``TD3_CFG`` (noise classes as names; the backend maps them to classes)."""
    _check(hp)
    skrl_estimator_check(hp)
    if hp["exploration_noise"] == "ou":
        noise = "OrnsteinUhlenbeckNoise"
        noise_kwargs = {"theta": hp["ou_theta"], "sigma": hp["exploration_std"], "base_scale": 1.0}
    else:
        noise, noise_kwargs = "GaussianNoise", {"mean": 0.0, "std": hp["exploration_std"]}
    return {
        **optimizer_settings(hp),
        **replay_settings(hp, recipe),
        "discount_factor": hp["gamma"],
        "learning_rate": [hp["actor_learning_rate"], hp["critic_learning_rate"]],
        "policy_delay": int(hp["policy_delay"]),
        "smooth_regularization_noise": "GaussianNoise" if hp["target_policy_noise"] > 0 else None,
        "smooth_regularization_noise_kwargs": {"mean": 0.0, "std": hp["target_policy_noise"]},
        "smooth_regularization_clip": hp["target_noise_clip"],
        "exploration_noise": noise,
        "exploration_noise_kwargs": noise_kwargs,
        **_exploration(hp),
        "grad_norm_clip": hp["grad_norm_clip"],
        **critic_settings(hp),
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
    }


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``TD3Loss``, its value estimator, the exploration module and the two optimisers."""
    _check(hp)
    return {
        **optimizer_settings(hp),
        **replay_settings(hp, recipe),
        "gamma": hp["gamma"],
        **torchrl_estimator_settings(hp, recipe),
        # rlplug: false steps the gymnasium vector env on the lean path; true collects through TorchRL's Collector
        "collector": False,
        "policy_noise": hp["target_policy_noise"],
        "noise_clip": hp["target_noise_clip"],
        "loss_function": "l2",  # skrl's MSE; TD3Loss defaults to smooth_l1
        "actor_lr": hp["actor_learning_rate"],
        "critic_lr": hp["critic_learning_rate"],
        "policy_delay": int(hp["policy_delay"]),
        "exploration_noise": hp["exploration_noise"],
        "exploration_std": hp["exploration_std"],
        "ou_theta": hp["ou_theta"],
        **_exploration(hp),
        "grad_norm_clip": hp["grad_norm_clip"],
        **critic_settings(hp),
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
    }
