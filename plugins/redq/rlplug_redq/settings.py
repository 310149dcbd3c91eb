"""REDQ's backend settings: SAC's, less the value estimators REDQ does not have, plus the ensemble (no torch
imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_sac import settings as sac

SAC_ONLY = ("value_estimator", "td_lambda", "trajectory_slice")
"""SAC's hyperparameters REDQ does not have: its target is TD(0) over a random subset of the target critics."""

_AS_TD0 = {"value_estimator": "td0", "td_lambda": 0.95, "trajectory_slice": 8}


def _ensemble(hp: Mapping[str, Any]) -> dict[str, Any]:
    if hp["critic_subset"] > hp["n_critics"]:
        raise ValueError(f"critic_subset ({hp['critic_subset']}) must be at most n_critics ({hp['n_critics']}): the target "
                         "takes the minimum over that many of the critics")  # fmt: skip
    return {"n_critics": hp["n_critics"], "critic_subset": hp["critic_subset"]}


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """SAC's ``SAC_CFG`` fields and rlplug's settings, with the ensemble."""
    own = _ensemble(hp)
    return {**sac.skrl_settings({**hp, **_AS_TD0}, recipe), **own}


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """SAC's TorchRL settings on a TD(0) estimator, ``num_qvalue_nets = n_critics``, with the ensemble."""
    own = _ensemble(hp)
    settings = sac.torchrl_settings({**hp, **_AS_TD0}, recipe)
    del settings["lmbda"], settings["trajectory_slice"]
    return {**settings, "num_qvalue_nets": hp["n_critics"], **own}
