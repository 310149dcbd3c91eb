"""QMIX's backend settings: DQN's, less its single-agent switches, plus the mixer and the sharing (no torch imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_dqn import settings as dqn

DROPPED = ("double_dqn", "dueling", "n_step", "value_estimator", "td_lambda", "trajectory_slice")
"""DQN's hyperparameters QMIX does not have: the team's TD(0) target replaces DQN's target choices."""
_AS_DQN = {"double_dqn": False, "dueling": False, "n_step": 1, "value_estimator": "td0", "td_lambda": 0.95, "trajectory_slice": 8}
_UNUSED = {"double_dqn", "dueling", "n_step", "value_estimator", "lmbda", "trajectory_slice", "collector", "epsilon_per_step"}


def _own(hp: Mapping[str, Any]) -> dict[str, Any]:
    if hp["mixing_embed_dim"] < 1:
        raise ValueError(f"mixing_embed_dim must be at least 1, got {hp['mixing_embed_dim']}")
    return {"mixer": hp["mixer"], "mixing_embed_dim": int(hp["mixing_embed_dim"]), "share_parameters": hp["share_parameters"]}


def _qmix(dqn_settings: Any, hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    settings = dqn_settings({**hp, **_AS_DQN}, recipe)
    return {**{k: v for k, v in settings.items() if k not in _UNUSED}, **_own(hp)}


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """DQN's ``DQN_CFG`` fields and rlplug's replay settings (the epsilon decay in vector steps), plus the mixer."""
    return _qmix(dqn.skrl_settings, hp, recipe)


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``QMixerLoss`` (``loss_function``), its TD(0) estimator, ``EGreedyModule`` and Adam, plus the
    mixer. A multi-agent env always collects through TorchRL's ``Collector``: no ``collector`` setting."""
    return _qmix(dqn.torchrl_settings, hp, recipe)
