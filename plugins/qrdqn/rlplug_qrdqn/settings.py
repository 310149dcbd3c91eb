"""QR-DQN's backend settings: DQN's, less what QR-DQN does not have, plus ``n_quantiles`` and its double-Q switch
(no torch imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_dqn import settings as dqn


def _own(hp: Mapping[str, Any]) -> dict[str, Any]:
    return {"n_quantiles": hp["n_quantiles"], "double_dqn": hp["double_dqn"]}


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """DQN's ``DQN_CFG`` fields and rlplug's settings, with ``n_quantiles``."""
    return dqn.distributional_settings(dqn.skrl_settings, hp, recipe, _own(hp))


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """DQN's TorchRL settings (TD(0) estimator, epsilon-greedy, Adam), with ``n_quantiles``."""
    return dqn.distributional_settings(dqn.torchrl_settings, hp, recipe, _own(hp))
