"""rlplug-trpo: TRPO (trust region policy optimisation) on skrl and TorchRL.

TRPO (Schulman et al., 2015) steps the policy once per rollout along the natural gradient of the importance-weighted
surrogate, as far as a bound on the mean KL from the collecting policy allows (conjugate gradient, then a backtracking
line search: ``rlplug.backends.*.trust_region_step``), and fits the value function with Adam over ``epochs`` passes of
minibatches. The on-policy family's parameters with sb3-contrib's TRPO defaults, less the loss weights TRPO has not
(no entropy bonus; the value loss has its own optimiser), plus the trust region's. The backends live in
``skrl_backend`` (skrl's ``TRPO`` agent) and ``torchrl_backend`` (built from TorchRL's ``PPOLoss`` and GAE).
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin, AlgorithmSpec, LossSpec, Param, both_backends
from rlplug.families import GYMNASIUM_PARAMS, NETWORK_PARAMS, ONPOLICY_PARAMS, ROLLOUT_RULES, SCHEDULE_PARAMS, adjusted

from .settings import skrl_settings, torchrl_settings

DOCS = {
    "learning_rate": "Adam learning rate of the value network (the policy steps by natural gradient)",
    "epochs": "passes of the value network over each rollout (sb3-contrib's n_critic_updates)",
    "minibatches": "value minibatches per pass, at most rollout_steps x num_envs",
    "max_grad_norm": "gradient-norm clip of the value network's steps (0 disables; skrl's TRPO clips at 0.5, "
    "sb3-contrib's not)",
}

PARAMS = (
    # sb3-contrib's TRPO constructor defaults: value lr 1e-3, n_steps 2048, batch_size 128 (16 of a 2048 rollout),
    # n_critic_updates 10, no gradient clip
    *(
        replace(p, doc=DOCS[p.name]) if p.name in DOCS else p
        for p in adjusted(ONPOLICY_PARAMS, drop=("entropy_coef", "value_coef"), learning_rate=1e-3, rollout_steps=2048,
                          epochs=10, minibatches=16, max_grad_norm=0.0)  # fmt: skip
    ),
    *(
        replace(p, choices=("constant", "linear"), search=("constant", "linear"))
        for p in adjusted(SCHEDULE_PARAMS, drop=("kl_target", "kl_early_stop"))
    ),
    Param("max_kl", 0.01, "bound on the mean KL(old policy || new policy) of one policy step (sb3-contrib's target_kl, "
          "skrl's max_kl_divergence)", bounds="(0, inf)", search=(0.005, 0.01, 0.02, 0.05)),
    Param("cg_damping", 0.1, "added to the Fisher matrix's diagonal in the conjugate-gradient solve", bounds="[0, inf)",
          search=(1e-3, 1e-2, 0.1)),
    Param("cg_steps", 15, "conjugate-gradient iterations (skrl's default 10)", bounds="[1, 1000]", search=(10, 15, 25)),
    Param("line_search_steps", 10, "backtracking line-search tries before the step is given up", bounds="[1, 1000]"),
    Param("line_search_shrink", 0.8, "each try's step as a fraction of the previous one (skrl's 0.5)", bounds="(0, 1)"),
    Param("accept_ratio", 0.0, "share of the first-order improvement a try must achieve (0: any improvement, as "
          "sb3-contrib; skrl's 0.5)", bounds="[0, 1)"),
    Param("normalize_advantage", True, "standardise the advantages over each rollout"),
    *GYMNASIUM_PARAMS,
    *NETWORK_PARAMS,
)

TRPO = AlgorithmSpec(
    name="trpo",
    summary="Trust region policy optimisation: one natural-gradient policy step per rollout under a KL bound",
    kind="on-policy",
    # data-parallel: the trust-region step averages its gradient, Fisher-vector products and line search over ranks
    backends=both_backends("rlplug_trpo", ("discrete", "continuous"), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    api_version=1,
    default_loss="trpo",
    rules=ROLLOUT_RULES,
    losses=(
        LossSpec(
            name="trpo",
            backend="skrl",
            factory="rlplug_trpo.skrl_backend:make_trpo_loss",
            terms=("loss_policy", "loss_value"),
            reported=("kl",),
            doc="loss_policy = -mean(A pi/pi_old), lowered by the natural-gradient step under max_kl on the mean KL it "
            "reports (with its gradient); loss_value = MSE(V, returns), Adam's; skrl's TRPO math",
        ),
        LossSpec(
            name="trpo",
            backend="torchrl",
            factory="rlplug_trpo.torchrl_backend:make_trpo_loss",
            terms=("loss_objective", "loss_critic"),
            reported=("kl",),
            doc="torchrl.objectives.PPOLoss's unclipped surrogate (lowered by the natural-gradient step) and l2 critic "
            "loss (Adam's) with a GAE estimator, plus the mean KL from the collecting policy with its gradient",
            describe="rlplug_trpo.torchrl_backend:describe_trpo_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(TRPO, source="rlplug-trpo")
