"""IPPO's backend settings: MAPPO's, with the critic on each agent's own observation (no torch imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_mappo import settings as mappo

LOCAL = {"centralised_critic": False}
"""The MAPPO setting that makes its cell IPPO's: per-agent critics on local observations."""


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``IPPO_CFG`` (applied to every agent) plus the model settings."""
    return mappo.skrl_settings({**hp, **LOCAL}, recipe)


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``IPPOLoss``, its MAGAE estimator and rlplug's TorchRL loop."""
    return mappo.torchrl_settings({**hp, **LOCAL}, recipe)
