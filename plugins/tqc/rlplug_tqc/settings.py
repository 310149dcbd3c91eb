"""TQC's backend settings: SAC's, less the value estimators TQC does not have, plus the quantile critics
(no torch imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_sac import settings as sac

SAC_ONLY = ("value_estimator", "td_lambda", "trajectory_slice")
"""SAC's hyperparameters TQC does not have: its target is TD(0) over pooled quantiles (TorchRL's ``TQCLoss``
supports only ``TD0Estimator``)."""

_AS_TD0 = {"value_estimator": "td0", "td_lambda": 0.95, "trajectory_slice": 8}


def _check(hp: Mapping[str, Any]) -> dict[str, Any]:
    if hp["top_quantiles_to_drop_per_net"] >= hp["n_quantiles"]:
        raise ValueError(
            f"top_quantiles_to_drop_per_net ({hp['top_quantiles_to_drop_per_net']}) must be below n_quantiles "
            f"({hp['n_quantiles']}): the pooled target keeps n_critics x (n_quantiles - top_quantiles_to_drop_per_net) atoms"
        )
    return {"n_critics": hp["n_critics"], "n_quantiles": hp["n_quantiles"],
            "top_quantiles_to_drop_per_net": hp["top_quantiles_to_drop_per_net"]}  # fmt: skip


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """SAC's ``SAC_CFG`` fields and rlplug's settings, with the quantile critics."""
    own = _check(hp)
    return {**sac.skrl_settings({**hp, **_AS_TD0}, recipe), **own}


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """SAC's TorchRL settings on a TD(0) estimator, ``num_qvalue_nets = n_critics``, with the quantile critics
    (``TQCLoss`` fixes its critic distance, the quantile Huber loss: SAC's ``loss_function`` is not read)."""
    own = _check(hp)
    settings = sac.torchrl_settings({**hp, **_AS_TD0}, recipe)
    del settings["loss_function"], settings["lmbda"], settings["trajectory_slice"]
    return {**settings, "num_qvalue_nets": hp["n_critics"], **own}
