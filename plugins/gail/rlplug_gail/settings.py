"""GAIL's backend settings: PPO's, plus the discriminator's (the same names on both backends)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_ppo import settings as ppo

DISCRIMINATOR_SETTINGS = ("discriminator_lr", "discriminator_steps", "discriminator_batch_size", "use_grad_penalty", "gp_lambda")


def _discriminator(hp: Mapping[str, Any]) -> dict[str, Any]:
    return {"discriminator_hidden_sizes": list(hp["discriminator_hidden_sizes"]), **{name: hp[name] for name in DISCRIMINATOR_SETTINGS}}


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``PPO_CFG`` and the discriminator's settings."""
    return {**ppo.skrl_settings(hp, recipe), **_discriminator(hp)}


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """PPO's ``ClipPPOLoss`` and loop settings, and the discriminator's (``GAILLoss``'s ``use_grad_penalty``, ``gp_lambda``)."""
    return {**ppo.torchrl_settings(hp, recipe), **_discriminator(hp)}
