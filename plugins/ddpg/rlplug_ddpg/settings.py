"""DDPG's backend settings: TD3's, for TD3 with one critic, no smoothing and no delay (no torch imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug_td3 import settings as td3

TD3_ONLY = ("policy_delay", "target_policy_noise", "target_noise_clip", "batched_critics")
"""TD3's hyperparameters that DDPG does not have (one critic: no ensemble to batch)."""
AS_DDPG = {"policy_delay": 1, "target_policy_noise": 0.0, "target_noise_clip": 0.0}
"""The values of those that make TD3's settings DDPG's."""


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``DDPG_CFG``: TD3's less the delay and smoothing ones ``DDPG_CFG`` lacks."""
    settings = td3.skrl_settings({**hp, **AS_DDPG}, recipe)
    return {k: v for k, v in settings.items() if k != "policy_delay" and not k.startswith("smooth_regularization")}


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``DDPGLoss``, its estimator, the exploration and the optimisers; ``policy_delay`` stays,
    at 1, for TD3's trainer (the actor and the targets step with the critic)."""
    settings = td3.torchrl_settings({**hp, **AS_DDPG}, recipe)
    return {k: v for k, v in settings.items() if k not in ("policy_noise", "noise_clip")}
