"""QR-DQN's backend settings: DQN's, less what QR-DQN does not have, plus ``n_quantiles`` (no torch imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_dqn import settings as dqn

DQN_ONLY = ("double_dqn", "td_loss", "dueling", "value_estimator", "td_lambda", "trajectory_slice")
"""DQN's hyperparameters that QR-DQN does not have (the quantile loss replaces the TD loss and its target)."""
AS_QRDQN = {"double_dqn": False, "td_loss": "l2", "dueling": False, "value_estimator": "td0", "td_lambda": 0.95,
            "trajectory_slice": 8}
"""The values of those DQN's settings functions are called with."""
UNUSED = ("double_dqn", "td_loss", "loss_function", "dueling")


def _settings(settings: Mapping[str, Any], hp: Mapping[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in settings.items() if k not in UNUSED}, "n_quantiles": hp["n_quantiles"]}


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """DQN's ``DQN_CFG`` fields and rlplug's settings, with ``n_quantiles``."""
    return _settings(dqn.skrl_settings({**hp, **AS_QRDQN}, recipe), hp)


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """DQN's TorchRL settings (TD(0) estimator, epsilon-greedy, Adam), with ``n_quantiles``."""
    return _settings(dqn.torchrl_settings({**hp, **AS_QRDQN}, recipe), hp)
