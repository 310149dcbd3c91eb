"""Translate TRPO's neutral hyperparameters into each backend's own settings (no torch imports): the on-policy
family's translation (no entropy bonus, the value loss unscaled) and the trust region's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug.families import skrl_onpolicy_settings, torchrl_onpolicy_settings

NOT_TRPOS = {"entropy_coef": 0.0, "value_coef": 1.0, "kl_target": 0.0}
"""Family parameters TRPO has not: no entropy bonus, a value loss with an optimiser of its own, no KL-adaptive rate."""

TRUST_REGION = ("max_kl", "cg_damping", "cg_steps", "line_search_steps", "line_search_shrink", "accept_ratio")
"""The trust region's parameters, named alike in the TorchRL settings."""

SKRL_NAMES = {"max_kl": "max_kl_divergence", "cg_damping": "damping", "cg_steps": "conjugate_gradient_steps",
              "line_search_steps": "max_backtrack_steps"}  # fmt: skip
"""The trust region's parameters that are fields of skrl's ``TRPO_CFG``, by their skrl names (the shrink factor is a
constant 0.5 there, so ``line_search_shrink`` keeps its name)."""


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``TRPO_CFG``, ``line_search_shrink`` and ``normalize_advantage``."""
    settings = skrl_onpolicy_settings({**hp, **NOT_TRPOS}, recipe)
    del settings["entropy_loss_scale"], settings["value_loss_scale"]
    region = {SKRL_NAMES.get(name, name): hp[name] for name in TRUST_REGION}
    return {**settings, **region, "normalize_advantage": hp["normalize_advantage"]}


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """``PPOLoss``'s arguments (l2 critic loss, no entropy term), its GAE estimator, the loop's (``epochs`` of value
    minibatches) and the trust region's; advantages standardised once over the rollout."""
    settings = torchrl_onpolicy_settings({**hp, **NOT_TRPOS}, recipe)
    for name in ("entropy_coeff", "critic_coeff", "kl_target"):
        del settings[name]
    return {**settings, **{name: hp[name] for name in TRUST_REGION}, "value_estimator": "GAE",
            "normalize_advantage": hp["normalize_advantage"], "advantage_norm_scope": "rollout"}  # fmt: skip
