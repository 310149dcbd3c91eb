"""C51's backend settings: DQN's, less what C51 does not have, plus the support (no torch imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_dqn import settings as dqn


def _support(hp: Mapping[str, Any]) -> dict[str, Any]:
    return {"n_atoms": hp["n_atoms"], "v_min": float(hp["v_min"]), "v_max": float(hp["v_max"])}


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """DQN's ``DQN_CFG`` fields and rlplug's settings, with the support."""
    return dqn.distributional_settings(dqn.skrl_settings, hp, recipe, _support(hp))


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """DQN's TorchRL settings (TD(0) estimator, epsilon-greedy, Adam), with the support."""
    return dqn.distributional_settings(dqn.torchrl_settings, hp, recipe, _support(hp))
