"""REDQ's backend settings: SAC's on a TD(0) target, plus the ensemble (no torch imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_sac import settings as sac


def _ensemble(hp: Mapping[str, Any]) -> dict[str, Any]:
    if hp["critic_subset"] > hp["n_critics"]:
        raise ValueError(f"critic_subset ({hp['critic_subset']}) must be at most n_critics ({hp['n_critics']}): the target "
                         "takes the minimum over that many of the critics")  # fmt: skip
    return {"n_critics": hp["n_critics"], "critic_subset": hp["critic_subset"]}


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """SAC's ``SAC_CFG`` fields and rlplug's settings, with the ensemble."""
    return sac.ensemble_settings(sac.skrl_settings, hp, recipe, _ensemble(hp))


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """SAC's TorchRL settings (``num_qvalue_nets = n_critics``), with the ensemble."""
    return sac.ensemble_settings(sac.torchrl_settings, hp, recipe, _ensemble(hp))
