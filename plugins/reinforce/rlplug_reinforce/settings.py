"""REINFORCE's backend settings: A2C's with its fixed values (no torch imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_a2c import settings as a2c

FIXED = {"minibatches": 1, "gae_lambda": 1.0, "entropy_coef": 0.0, "value_coef": 1.0}
"""A2C's parameters REINFORCE fixes: one gradient step per rollout on Monte-Carlo returns, no entropy bonus, the
critic's squared error unscaled (TorchRL's ``ReinforceLoss`` has no coefficient for it)."""


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``A2C_CFG`` (lambda = 1, one minibatch) and the baseline switch."""
    return {**a2c.skrl_settings({**hp, **FIXED, "kl_target": 0.0}, recipe), "baseline": hp["baseline"]}


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``ReinforceLoss`` and its TD(1) estimator, the loop's, and the baseline switch."""
    settings = a2c.torchrl_settings({**hp, **FIXED, "kl_target": 0.0}, recipe)
    for name in ("entropy_coeff", "critic_coeff", "lmbda", "kl_target"):
        settings.pop(name, None)
    return {**settings, "value_estimator": "TD1", "advantage_baseline": hp["baseline"]}
