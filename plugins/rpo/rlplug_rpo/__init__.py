"""rlplug-rpo: Robust Policy Optimization (RPO) on skrl and TorchRL, derived from rlplug-ppo.

RPO (Rahman and Xue, 2022) is PPO whose update evaluates each taken action under a Gaussian whose mean is moved by
uniform noise in ``[-alpha, alpha]``, which keeps the policy's entropy from collapsing. The declaration is PPO's
(continuous actions, no recurrent policies) plus ``alpha``; the backends reuse PPO's cells and override the policy
and the loss. Cheap: no torch.
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin, Param, both_backends
from rlplug.families import RECURRENT_PARAMS, ROLLOUT_RULES, clipped_family
from rlplug_ppo import PARAMS as PPO_PARAMS
from rlplug_ppo import PPO

from .settings import skrl_settings, torchrl_settings

PARAMS = (
    *(p for p in PPO_PARAMS if p not in RECURRENT_PARAMS),
    Param("alpha", 0.5, "half-width of the uniform noise added to the Gaussian's mean when the update evaluates the "
          "taken actions (RPO; skrl's and CleanRL's default 0.5)", bounds="[0, inf)", search=(0.1, 0.3, 0.5, 1.0)),
)

RPO = replace(
    PPO,
    name="rpo",
    summary="Robust Policy Optimization: PPO whose update perturbs the Gaussian's mean by U(-alpha, alpha)",
    params=PARAMS,
    **clipped_family(
        "rlplug_rpo", skrl_settings, torchrl_settings, loss="rpo", describe="rlplug_ppo.torchrl_backend:describe_clip_loss",
        skrl_doc="ppo's clipped loss with the taken actions' log-probabilities under the perturbed mean; skrl's own RPO math",
        torchrl_doc="torchrl.objectives.ClipPPOLoss (ppo's) whose actor's mean is perturbed during the loss's forward",
    ),
)
RPO = replace(RPO, rules=ROLLOUT_RULES,
              backends=both_backends("rlplug_rpo", ("continuous",), skrl_settings, torchrl_settings, distributed=True))

plugin = AlgorithmPlugin(RPO, source="rlplug-rpo")
