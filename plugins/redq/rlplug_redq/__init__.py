"""rlplug-redq: Randomized Ensembled Double Q-learning (Chen et al. 2021) on skrl and TorchRL, derived from rlplug-sac.

REDQ is SAC with an ensemble of ``n_critics`` Q networks, each trained on one Bellman target whose next value is
the minimum over a random subset of ``critic_subset`` target critics (drawn anew for every gradient step), a policy
that ascends the mean of all critics, and many gradient steps per environment step (``utd_ratio``, the paper's
G = 20): sample efficiency from the update-to-data ratio, with the subset's minimum keeping the ensemble's
overestimation in check. As TorchRL's ``REDQLoss``, every gradient step also steps the policy and alpha (the paper
steps the policy once per G). The declaration is SAC's less its multi-step value estimators, plus the ensemble;
the backends reuse SAC's cells and replace the critics and the loss. Cheap: no torch.
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin, LossSpec, Param, both_backends
from rlplug_sac import ENSEMBLE_PARAMS, ENSEMBLE_RULES, SAC

from .settings import skrl_settings, torchrl_settings

PARAMS = ENSEMBLE_PARAMS + (
    Param("n_critics", 10, "Q networks in the ensemble (the paper's N = 10)", bounds="[1, 256]", search=(2, 5, 10)),
    Param("critic_subset", 2, "target critics drawn at random for each target's minimum (the paper's M = 2)",
          bounds="[1, 256]", search=(1, 2, 3)),
)

REDQ = replace(
    SAC,
    name="redq",
    summary="Randomized Ensembled Double Q-learning: SAC with N critics, a random subset's minimum as target, high UTD",
    backends=both_backends("rlplug_redq", ("continuous",), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    default_loss="redq",
    backend_default_losses={},
    rules=ENSEMBLE_RULES,
    losses=(
        LossSpec(
            name="redq",
            backend="skrl",
            factory="rlplug_redq.skrl_backend:make_redq_loss",
            terms=("loss_critic", "loss_policy", "loss_entropy"),
            optimisers={"loss_critic": "critic", "loss_policy": "policy", "loss_entropy": "entropy"},
            doc="REDQLoss's math in SAC's three skrl stages: every critic against r + gamma * (min over a random "
            "subset of target critics - alpha * log pi), the policy on the mean of all critics",
        ),
        LossSpec(
            name="redq",
            backend="torchrl",
            factory="rlplug_redq.torchrl_backend:make_redq_loss",
            terms=("loss_actor", "loss_qvalue", "loss_alpha"),
            reported=("alpha", "entropy"),
            doc="torchrl.objectives.REDQLoss (N critics, a random subset in the target) with TD(0), alpha unclamped",
            describe="rlplug_redq.torchrl_backend:describe_redq_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(REDQ, source="rlplug-redq")
