"""rlplug-ppo: Proximal Policy Optimization on skrl and TorchRL.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
The backends live in ``skrl_backend`` and ``torchrl_backend`` and are imported only when built.
"""

from __future__ import annotations

from rlplug import AlgorithmPlugin, AlgorithmSpec
from rlplug.families import (
    CLIP_PARAMS,
    GYMNASIUM_PARAMS,
    NETWORK_PARAMS,
    ONPOLICY_PARAMS,
    RECURRENT_PARAMS,
    RECURRENT_RULES,
    SCHEDULE_PARAMS,
    SDE_PARAMS,
    SDE_RULES,
    clipped_family,
)

from .settings import skrl_settings, torchrl_settings

# the on-policy family's parameters, all of them, and gSDE's (rlplug.families)
PARAMS = (*ONPOLICY_PARAMS, *SCHEDULE_PARAMS, *CLIP_PARAMS, *GYMNASIUM_PARAMS, *NETWORK_PARAMS, *RECURRENT_PARAMS, *SDE_PARAMS)

SKRL_DOC = "clipped surrogate + (clipped) MSE value loss + entropy bonus; skrl's own PPO math"
TORCHRL_DOC = "torchrl.objectives.ClipPPOLoss with a GAE value estimator"

PPO = AlgorithmSpec(
    name="ppo",
    summary="Proximal Policy Optimization (clipped surrogate, GAE)",
    kind="on-policy",
    params=PARAMS,
    api_version=1,
    # both backends (discrete and continuous actions, data-parallel), the rollout and recurrent rules, the "clip" loss
    **clipped_family("rlplug_ppo", skrl_settings, torchrl_settings, loss="clip", skrl_doc=SKRL_DOC, torchrl_doc=TORCHRL_DOC,
                     describe="rlplug_ppo.torchrl_backend:describe_clip_loss", rules=RECURRENT_RULES + SDE_RULES, action_masks=True),
)

plugin = AlgorithmPlugin(PPO, source="rlplug-ppo")
