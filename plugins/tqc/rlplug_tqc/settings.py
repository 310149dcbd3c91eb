"""TQC's backend settings: SAC's on a TD(0) target, plus the quantile critics (no torch imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_sac import settings as sac


def _critics(hp: Mapping[str, Any]) -> dict[str, Any]:
    if hp["top_quantiles_to_drop_per_net"] >= hp["n_quantiles"]:
        raise ValueError(
            f"top_quantiles_to_drop_per_net ({hp['top_quantiles_to_drop_per_net']}) must be below n_quantiles "
            f"({hp['n_quantiles']}): the pooled target keeps n_critics x (n_quantiles - top_quantiles_to_drop_per_net) atoms"
        )
    return {"n_critics": hp["n_critics"], "n_quantiles": hp["n_quantiles"],
            "top_quantiles_to_drop_per_net": hp["top_quantiles_to_drop_per_net"]}  # fmt: skip


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """SAC's ``SAC_CFG`` fields and rlplug's settings, with the quantile critics."""
    return sac.ensemble_settings(sac.skrl_settings, hp, recipe, _critics(hp))


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """SAC's TorchRL settings with the quantile critics (``TQCLoss`` fixes its critic distance, the quantile Huber
    loss: SAC's ``loss_function`` is not read)."""
    settings = sac.ensemble_settings(sac.torchrl_settings, hp, recipe, _critics(hp))
    del settings["loss_function"]
    return settings
