"""Translate MAPPO's neutral hyperparameters into each backend's own settings (no torch imports).

The dicts returned here are what ``rlplug show NAME --backend B`` prints; a recipe's raw
``[recipes.X.skrl]`` / ``[recipes.X.torchrl]`` tables may override any of their keys. The on-policy
family (``rlplug.families``) translates everything but the two multi-agent model choices.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug.families import skrl_onpolicy_settings, torchrl_onpolicy_settings


def _team(hp: Mapping[str, Any]) -> dict[str, Any]:
    return {"centralised_critic": hp["centralised_critic"], "share_parameters": hp["share_parameters"]}


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``MAPPO_CFG`` (applied to every agent) plus the model settings."""
    return {**skrl_onpolicy_settings(hp, recipe), **_team(hp)}


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``MAPPOLoss``, its MAGAE estimator, the collector and rlplug's TorchRL loop."""
    # no collector setting: a multi-agent env (PettingZoo, VMAS) always collects through TorchRL's Collector
    settings = {key: value for key, value in torchrl_onpolicy_settings(hp, recipe).items() if key != "collector"}
    return {**settings, **_team(hp)}
