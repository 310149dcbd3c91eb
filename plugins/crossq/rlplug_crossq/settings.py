"""CrossQ's backend settings: SAC's on a TD(0) target without target networks, plus the critics' batch
renormalisation and the policy delay (no torch imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_sac import settings as sac

_NO_TARGETS = {"target_update": "soft", "tau": 1.0, "target_update_period": 1}
"""What SAC's settings read of the target update, which CrossQ does not have (popped from the result)."""


def _crossq(hp: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "n_critics": int(hp["n_critics"]),
        "policy_delay": int(hp["policy_delay"]),
        "adam_betas": [float(hp["adam_beta1"]), 0.999],
        "batch_renorm": {"momentum": float(hp["batch_norm_momentum"]), "eps": float(hp["batch_norm_eps"]),
                         "warmup_steps": int(hp["renorm_warmup_steps"])},  # fmt: skip
    }


def _settings(sac_settings: Any, hp: Mapping[str, Any], recipe: Any, kept: tuple[str, ...] = ()) -> dict[str, Any]:
    """``sac_settings`` on a TD(0) target, less the target update's keys (but those ``kept``), plus CrossQ's own."""
    settings = sac.ensemble_settings(sac_settings, {**hp, **_NO_TARGETS}, recipe, _crossq(hp))
    for key in _NO_TARGETS.keys() - set(kept):
        settings.pop(key, None)
    return settings


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """SAC's ``SAC_CFG`` fields and rlplug's settings without a target update, with the critics' normalisation.
    ``tau`` stays, at 1.0: ``SAC_CFG.polyak`` has no target to move (sb3-contrib's CrossQ passes its base 1.0 too)."""
    return _settings(sac.skrl_settings, hp, recipe, kept=("tau",))


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """SAC's TorchRL settings (``num_qvalue_nets = n_critics``) without a target update, with the critics'
    normalisation."""
    return _settings(sac.torchrl_settings, hp, recipe)
