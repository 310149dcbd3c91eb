"""Translate DQN's neutral hyperparameters into each backend's own settings (no torch imports).

The dicts returned here are what ``rlplug show NAME --backend B`` prints, and a recipe's raw
``[recipes.X.skrl]`` / ``[recipes.X.torchrl]`` tables may override any of their keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug.families import optimizer_settings, replay_settings, skrl_estimator_check, torchrl_estimator_settings


def _check_common(hp: Mapping[str, Any]) -> None:
    for name in ("epsilon_start", "epsilon_end"):
        if not 0.0 <= hp[name] <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {hp[name]}")
    if hp["epsilon_decay_steps"] < 0:
        raise ValueError(f"epsilon_decay_steps must be >= 0, got {hp['epsilon_decay_steps']}")
    if hp["max_grad_norm"] < 0:
        raise ValueError(f"max_grad_norm must be >= 0, got {hp['max_grad_norm']}")
    if hp["dueling"] and not hp["hidden_sizes"]:
        raise ValueError("dueling = true needs at least one hidden layer: its value and advantage layers read the last one")


def _gradient_steps(hp: Mapping[str, Any], recipe: Any) -> int:
    """Gradient steps the recipe's budget gives: ``utd_ratio`` per transition after ``learning_starts``."""
    return max(1, int(hp["utd_ratio"] * max(0, recipe.steps - hp["learning_starts"])))


def _lr_schedule(hp: Mapping[str, Any], recipe: Any) -> tuple[str | None, dict[str, Any]]:
    """``(scheduler class name, kwargs)``: both backends step torch's ``LinearLR`` once per gradient step."""
    if hp["lr_schedule"] == "constant":
        return None, {}
    return "LinearLR", {"start_factor": 1.0, "end_factor": 0.0, "total_iters": _gradient_steps(hp, recipe)}


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``DQN_CFG`` plus the loss, the epsilon schedule and rlplug's replay/cadence settings.

    skrl calls its ``exploration_scheduler`` with the vector-env step, so the decay is converted from
    transitions to vector steps. ``target_update_interval`` / ``polyak`` are not here: the target
    updater from the target-updater stage replaces skrl's own (soft by default, reference §14.7).
    """
    _check_common(hp)
    skrl_estimator_check(hp)
    schedule, schedule_kwargs = _lr_schedule(hp, recipe)
    return {
        **optimizer_settings(hp),
        **replay_settings(hp, recipe),
        "learning_rate": hp["learning_rate"],
        "learning_rate_scheduler": schedule,
        "learning_rate_scheduler_kwargs": schedule_kwargs,
        "discount_factor": hp["gamma"],
        "double_dqn": hp["double_dqn"],
        "n_step": hp["n_step"],  # rlplug: read ahead in the memory at sampling time (skrl's DQN is one-step)
        "td_loss": "mse" if hp["td_loss"] == "l2" else "huber",
        "grad_norm_clip": hp["max_grad_norm"],
        "epsilon_start": hp["epsilon_start"],
        "epsilon_end": hp["epsilon_end"],
        "epsilon_decay_timesteps": hp["epsilon_decay_steps"] // recipe.num_envs,
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
        "dueling": hp["dueling"],
    }


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``DQNLoss``, its value estimator, ``EGreedyModule``, Adam and rlplug's TorchRL loop.

    ``epsilon_per_step`` (rlplug's, default true): epsilon follows its schedule at every environment step,
    as on skrl; false sets it once per collected batch of ``train_every`` steps, the way TorchRL's
    ``EGreedyModule.step(frames)`` is driven from a collector loop.
    """
    _check_common(hp)
    schedule, schedule_kwargs = _lr_schedule(hp, recipe)
    return {
        **optimizer_settings(hp),
        **replay_settings(hp, recipe),
        "lr": hp["learning_rate"],
        "lr_scheduler": schedule,
        "lr_scheduler_kwargs": schedule_kwargs,
        "gamma": hp["gamma"],
        "double_dqn": hp["double_dqn"],
        # rlplug: read ahead in the replay at sampling time into ("next", ...) and "steps_to_next_obs", the keys
        # TorchRL's MultiStepTransform writes and its TD(0) estimator reads
        "n_step": hp["n_step"],
        "loss_function": "l2" if hp["td_loss"] == "l2" else "smooth_l1",
        **torchrl_estimator_settings(hp, recipe),
        # rlplug: false steps the gymnasium vector env on the lean path; true collects through TorchRL's Collector
        "collector": False,
        "max_grad_norm": hp["max_grad_norm"],
        "eps_init": hp["epsilon_start"],
        "eps_end": hp["epsilon_end"],
        "annealing_num_steps": hp["epsilon_decay_steps"],
        # rlplug, not upstream: epsilon recomputed at every env step (skrl's DQN), not once per collected batch
        # (TorchRL's EGreedyModule.step(frames) in a collector loop); PerStepEGreedyModule in torchrl_backend
        "epsilon_per_step": True,
        "hidden_sizes": list(hp["hidden_sizes"]),
        "activation": hp["activation"],
        "dueling": hp["dueling"],
    }


DISTRIBUTIONAL_DROPS = ("double_dqn", "td_loss", "value_estimator", "td_lambda", "trajectory_slice")
"""DQN's hyperparameters that its distributional variants (qrdqn, c51) do not have: their own loss replaces the TD
loss and its target."""
_AS_DISTRIBUTIONAL = {"double_dqn": False, "td_loss": "l2", "value_estimator": "td0", "td_lambda": 0.95,
                      "trajectory_slice": 8}  # fmt: skip
_UNUSED = ("double_dqn", "td_loss", "loss_function")


def distributional_settings(dqn_settings: Any, hp: Mapping[str, Any], recipe: Any, own: Mapping[str, Any]) -> dict[str, Any]:
    """``dqn_settings`` (``skrl_settings`` or ``torchrl_settings``) of a distributional variant: DQN's settings
    without those of the TD loss it replaces, plus the variant's ``own``."""
    settings = dqn_settings({**hp, **_AS_DISTRIBUTIONAL}, recipe)
    return {**{k: v for k, v in settings.items() if k not in _UNUSED}, **own}
