"""QR-DQN's backend settings: DQN's, less what QR-DQN does not have, plus ``n_quantiles`` and its double-Q switch
(no torch imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_dqn import settings as dqn
from rlplug_dqn.settings import DISTRIBUTIONAL_DROPS as DQN_ONLY  # noqa: F401 -- the declaration's

__all__ = ["DQN_ONLY", "skrl_settings", "torchrl_settings"]


def _own(hp: Mapping[str, Any]) -> dict[str, Any]:
    return {"n_quantiles": hp["n_quantiles"], "double_dqn": hp["double_dqn"]}


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """DQN's ``DQN_CFG`` fields and rlplug's settings, with ``n_quantiles``."""
    return dqn.distributional_settings(dqn.skrl_settings, hp, recipe, _own(hp))


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """DQN's TorchRL settings (TD(0) estimator, epsilon-greedy, Adam), with ``n_quantiles``."""
    return dqn.distributional_settings(dqn.torchrl_settings, hp, recipe, _own(hp))
