"""rlplug-crossq: CrossQ (Bhatt, Palenicek et al. 2024) on skrl and TorchRL, derived from rlplug-sac.

CrossQ is SAC without target networks whose critics carry batch (re)normalisation: the critics see the current
(s, a) and the next (s', a' ~ pi) in one joint batch, so the normalisation's statistics are those of both, and the
Bellman target is read from that same forward pass (detached). The policy and alpha step every ``policy_delay``
critic steps, reading the critics with their running statistics. The declaration is SAC's less its multi-step
value estimators and its target-network update, plus the critics' normalisation and the delay; the backends reuse
SAC's cells and replace the critics, the loss and the update stages. Cheap: no torch.
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin, LossSpec, Param, both_backends
from rlplug.families import TARGET_PARAMS
from rlplug_sac import ENSEMBLE_PARAMS, ENSEMBLE_RULES, SAC

from .settings import skrl_settings, torchrl_settings

NO_TARGETS = frozenset(p.name for p in TARGET_PARAMS)
"""SAC's target-network hyperparameters, which CrossQ (no target networks) does not have."""

# batched_critics: CrossQ's critics carry batch renormalisation (no plain MLPs to stack); TorchRL's CrossQLoss vmaps them
PARAMS = tuple(p for p in ENSEMBLE_PARAMS if p.name not in NO_TARGETS | {"batched_critics"}) + (
    Param("n_critics", 2, "Q networks; the target and the policy take their minimum (the paper's 2)", bounds="[1, 64]"),
    Param("policy_delay", 3, "critic gradient steps per policy (and alpha) step (the paper's and sb3-contrib's 3)",
          bounds="[1, 1000]", search=(1, 2, 3)),
    Param("adam_beta1", 0.5, "Adam's beta1 for the policy and the critics (the paper's and sb3-contrib's 0.5; alpha's "
          "Adam keeps torch's 0.9)", bounds="[0, 1)", search=(0.5, 0.9)),
    Param("batch_norm_momentum", 0.01, "rate at which the critics' running statistics follow the batches'",
          bounds="(0, 1]"),
    Param("batch_norm_eps", 0.001, "added to the variances before their square root", bounds="(0, 1]"),
    Param("renorm_warmup_steps", 100_000, "critic training batches of plain batch norm before the renormalisation "
          "corrects towards the running statistics (sb3-contrib's 100k)", bounds="[0, 2**40]"),
)

CROSSQ = replace(
    SAC,
    name="crossq",
    summary="CrossQ: SAC with batch-renormalised critics on a joint (s, a) + (s', a') batch and no target networks",
    backends=both_backends("rlplug_crossq", ("continuous",), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    default_loss="crossq",
    backend_default_losses={},
    rules=tuple(r for r in ENSEMBLE_RULES if not set(r.fields) & NO_TARGETS),
    losses=(
        LossSpec(
            name="crossq",
            backend="skrl",
            factory="rlplug_crossq.skrl_backend:make_crossq_loss",
            terms=("loss_critic", "loss_policy", "loss_entropy"),
            optimisers={"loss_critic": "critic", "loss_policy": "policy", "loss_entropy": "entropy"},
            doc="CrossQLoss's math in SAC's three skrl stages: the critics on the joint batch in training mode, the "
            "target from its (s', a') half (detached), the policy and alpha every policy_delay steps",
        ),
        LossSpec(
            name="crossq",
            backend="torchrl",
            factory="rlplug_crossq.torchrl_backend:make_crossq_loss",
            terms=("loss_qvalue", "loss_actor", "loss_alpha"),
            optimisers={"loss_qvalue": "critic", "loss_actor": "actor", "loss_alpha": "actor"},
            reported=("alpha", "entropy"),
            doc="torchrl.objectives.CrossQLoss (no target networks, joint forward pass) with TD(0): qvalue_loss every "
            "step, actor_loss and alpha_loss every policy_delay steps",
            describe="rlplug_crossq.torchrl_backend:describe_crossq_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(CROSSQ, source="rlplug-crossq")
