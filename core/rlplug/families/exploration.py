"""gSDE's hyperparameters (generalised state-dependent exploration, ``rlplug.backends.common.gsde``): SAC's
cells (and those derived from it) and PPO's take them; each backend's settings carry them as they are."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..schema import Param

SDE_PARAMS = (
    Param("use_sde", False, "explore with gSDE (generalised state-dependent exploration, Raffin et al. 2022): the "
          "action is mean(s) + z(s) @ M, z the policy's last hidden features and M a random matrix each env keeps "
          "for sde_sample_freq steps, so exploration is smooth in the state (SB3's use_sde; Box actions)"),
    Param("sde_sample_freq", -1, "with use_sde: vector-env steps between new exploration matrices (-1: one per "
          "rollout, i.e. per round of train_every steps off-policy)", bounds="[-1, 10**9]"),
    Param("use_expln", False, "with use_sde: each noise weight's std is exp(log_std) below 0 and log1p(log_std) + 1 "
          "above (the gSDE paper's expln: never zero, slow to grow; SB3's use_expln) instead of exp(log_std)"),
)
"""Whether a Gaussian policy explores with gSDE, and how often each env's exploration matrix is drawn."""

SDE_WARMUP_PARAMS = (
    Param("use_sde_at_warmup", False, "with use_sde: the learning_starts warm-up collects with the gSDE policy "
          "instead of uniformly random actions (SB3's use_sde_at_warmup)"),
)
"""An off-policy cell's choice of warm-up actions under gSDE."""


def sde_settings(hp: Mapping[str, Any]) -> dict[str, Any]:
    """The gSDE keys of both backends' settings (``use_sde_at_warmup`` where the family has it)."""
    settings = {"use_sde": bool(hp["use_sde"]), "sde_sample_freq": int(hp["sde_sample_freq"]), "use_expln": bool(hp["use_expln"])}
    if "use_sde_at_warmup" in hp:
        settings["use_sde_at_warmup"] = bool(hp["use_sde_at_warmup"])
    return settings
