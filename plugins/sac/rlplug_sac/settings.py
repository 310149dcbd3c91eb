"""Translate SAC's neutral hyperparameters into each backend's own settings (no torch imports).

The dicts returned here are what ``rlplug show NAME --backend B`` prints, and a recipe's raw
``[recipes.X.skrl]`` / ``[recipes.X.torchrl]`` tables may override any of their keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug import RlplugError
from rlplug.families import critic_settings, optimizer_settings, sde_settings, replay_settings, skrl_estimator_check, torchrl_estimator_settings


def _target_entropy(hp: Mapping[str, Any]) -> float | None:
    """``None`` for "auto" (each backend then uses -action_dim), else the number."""
    value = hp["target_entropy"]
    return None if value == "auto" else float(value)


def _check_common(hp: Mapping[str, Any]) -> None:
    if hp["initial_alpha"] <= 0:
        raise ValueError(f"initial_alpha must be positive, got {hp['initial_alpha']}")
    if hp["grad_norm_clip"] < 0:
        raise ValueError(f"grad_norm_clip must be >= 0, got {hp['grad_norm_clip']}")
    if hp["exploration_std"] < 0 or not 0.0 <= hp["ou_theta"] <= 1.0:
        raise ValueError("exploration_std must not be negative and ou_theta must be in [0, 1]")


def refuse_discrete_noise(settings: Mapping[str, Any]) -> None:
    """Refuse ``exploration_noise``, ``use_sde`` or ``batched_critics`` on a Discrete build (both backends' discrete cells
    call it while building)."""
    if settings.get("batched_critics"):
        raise RlplugError("batched_critics = true: discrete SAC's critics are Q(s, .) networks (one value per action), "
                          "not Q(s, a) ones; set batched_critics = false")  # fmt: skip
    if settings.get("use_sde"):
        raise RlplugError("use_sde = true is for Box actions (gSDE perturbs a Gaussian's mean); discrete SAC explores "
                          "with its categorical policy's own samples (set use_sde = false)")  # fmt: skip
    if settings["exploration_noise"] is not None:
        raise RlplugError("exploration_noise = 'ou' is for Box actions; discrete SAC explores with its categorical "
                          "policy's own samples (set exploration_noise = 'none')")  # fmt: skip


def _exploration(hp: Mapping[str, Any]) -> dict[str, Any]:
    """The collection noise: ``None`` or ``"ou"`` with its sigma and theta (per env step, dt = 1); gSDE's keys."""
    noise = None if hp["exploration_noise"] == "none" else hp["exploration_noise"]
    return {"exploration_noise": noise, "exploration_std": hp["exploration_std"], "ou_theta": hp["ou_theta"],
            **sde_settings(hp), "initial_log_std": float(hp["initial_log_std"])}  # fmt: skip


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``SAC_CFG`` plus the models' shape and rlplug's replay/cadence settings."""
    _check_common(hp)
    skrl_estimator_check(hp)
    return {
        **optimizer_settings(hp),
        **replay_settings(hp, recipe),
        "discount_factor": hp["gamma"],
        "learning_rate": [hp["actor_learning_rate"], hp["critic_learning_rate"], hp["alpha_learning_rate"]],
        "grad_norm_clip": hp["grad_norm_clip"],
        "learn_entropy": hp["learn_alpha"],
        "initial_entropy_value": hp["initial_alpha"],
        "target_entropy": _target_entropy(hp),
        **_exploration(hp),
        **critic_settings(hp),
        "squash_actions": bool(hp["squash_actions"]),
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
    }


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``SACLoss``, its value estimator, the three Adam groups and rlplug's TorchRL loop."""
    _check_common(hp)
    return {
        **optimizer_settings(hp),
        **replay_settings(hp, recipe),
        **torchrl_estimator_settings(hp, recipe),
        # rlplug: false steps the gymnasium vector env on the lean path; true collects through TorchRL's Collector
        "collector": False,
        "gamma": hp["gamma"],
        "num_qvalue_nets": 2,
        "loss_function": "l2",
        "alpha_init": hp["initial_alpha"],
        "fixed_alpha": not hp["learn_alpha"],
        "target_entropy": "auto" if _target_entropy(hp) is None else _target_entropy(hp),
        "actor_lr": hp["actor_learning_rate"],
        "critic_lr": hp["critic_learning_rate"],
        "alpha_lr": hp["alpha_learning_rate"],
        "grad_norm_clip": hp["grad_norm_clip"],
        **_exploration(hp),
        **critic_settings(hp),
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
    }


TD0_ONLY = ("value_estimator", "td_lambda", "trajectory_slice")
"""SAC's hyperparameters an ensemble variant (tqc, redq) does not have: its target is TD(0) (TorchRL's ``TQCLoss``
and ``REDQLoss`` support only ``TD0Estimator``)."""

_AS_TD0 = {"value_estimator": "td0", "td_lambda": 0.95, "trajectory_slice": 8}


def ensemble_settings(sac_settings: Any, hp: Mapping[str, Any], recipe: Any, own: Mapping[str, Any]) -> dict[str, Any]:
    """``sac_settings`` (``skrl_settings`` or ``torchrl_settings``) of an ensemble variant: SAC's settings on a
    TD(0) target, without the multi-step estimator's, plus the variant's ``own`` (its critics: on TorchRL,
    ``num_qvalue_nets`` is their number)."""
    settings = sac_settings({**hp, **_AS_TD0}, recipe)
    for key in ("lmbda", "trajectory_slice"):
        settings.pop(key, None)
    if "num_qvalue_nets" in settings:
        settings["num_qvalue_nets"] = hp["n_critics"]
    return {**settings, **own}
