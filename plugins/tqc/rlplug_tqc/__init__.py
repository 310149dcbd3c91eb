"""rlplug-tqc: Truncated Quantile Critics (Kuznetsov et al. 2020) on skrl and TorchRL, derived from rlplug-sac.

TQC is SAC whose ``n_critics`` critics each predict ``n_quantiles`` quantiles of the return instead of one value.
The Bellman target pools every target critic's quantiles at (s', a'), sorts them and drops the
``top_quantiles_to_drop_per_net x n_critics`` highest (the overestimation TQC controls), and each critic regresses
all its quantiles on all the kept atoms with the quantile Huber loss; the policy ascends the mean of every
quantile of every critic. The declaration is SAC's less its multi-step value estimators, plus the critics'
shape; the backends reuse SAC's cells and replace the critics and the loss. Cheap: no torch.
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin, LossSpec, Param, both_backends
from rlplug_sac import ENSEMBLE_PARAMS, ENSEMBLE_RULES, SAC

from .settings import skrl_settings, torchrl_settings

PARAMS = ENSEMBLE_PARAMS + (
    Param("n_critics", 5, "quantile critics in the ensemble (the paper's 5; SB3's default 2)", bounds="[1, 64]",
          search=(2, 3, 5)),
    Param("n_quantiles", 25, "quantiles each critic predicts (the paper's 25)", bounds="[1, 1024]", search=(10, 25, 50)),
    Param("top_quantiles_to_drop_per_net", 2, "highest pooled target atoms dropped per critic (the paper's 2 for "
          "most MuJoCo tasks; 0 is an untruncated distributional SAC)", bounds="[0, 1024]", search=(0, 1, 2, 3, 5)),
)

TQC = replace(
    SAC,
    name="tqc",
    summary="Truncated Quantile Critics: SAC with an ensemble of quantile critics whose pooled target drops its top atoms",
    backends=both_backends("rlplug_tqc", ("continuous",), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    default_loss="tqc",
    backend_default_losses={},
    rules=ENSEMBLE_RULES,
    losses=(
        LossSpec(
            name="tqc",
            backend="skrl",
            factory="rlplug_tqc.skrl_backend:make_tqc_loss",
            terms=("loss_critic", "loss_policy", "loss_entropy"),
            optimisers={"loss_critic": "critic", "loss_policy": "policy", "loss_entropy": "entropy"},
            doc="TQCLoss's math in SAC's three skrl stages: the quantile Huber loss of each critic against the pooled, "
            "truncated target (averaged over the critics, as skrl's SAC and SB3's TQC), the policy on the mean quantile",
        ),
        LossSpec(
            name="tqc",
            backend="torchrl",
            factory="rlplug_tqc.torchrl_backend:make_tqc_loss",
            terms=("loss_actor", "loss_qvalue", "loss_alpha"),
            reported=("alpha", "entropy"),
            doc="torchrl.objectives.TQCLoss (SACLoss with quantile critics; the critics' losses summed) with TD(0)",
            describe="rlplug_tqc.torchrl_backend:describe_tqc_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(TQC, source="rlplug-tqc")
