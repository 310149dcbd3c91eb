"""rlplug-sac: Soft Actor-Critic on skrl and TorchRL.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
The backends live in ``skrl_backend`` and ``torchrl_backend`` (Box actions) and are imported only when built;
``skrl_discrete`` and ``torchrl_discrete`` are the modules the declaration names: they hand a Box build to those
and give a Discrete one discrete SAC (a categorical policy, Q(s, .) critics, exact expectations over the actions).
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

from rlplug import AlgorithmPlugin, AlgorithmSpec, AutoOrFloat, LossSpec, Param, Search, both_backends
from rlplug.families import CRITIC_PARAMS, ESTIMATOR_PARAMS, OPTIMIZER_PARAMS, REPLAY_PARAMS, SDE_PARAMS, SDE_WARMUP_PARAMS, TARGET_PARAMS
from rlplug.families import ESTIMATOR_RULES, REPLAY_RULES

from .settings import TD0_ONLY, skrl_settings, torchrl_settings


PARAMS = (
    Param("actor_learning_rate", 3e-4, "Adam learning rate of the policy", bounds="(0, inf)", search=Search(1e-5, 3e-3, log=True)),
    Param("critic_learning_rate", 3e-4, "Adam learning rate of the two Q networks", bounds="(0, inf)", search=Search(1e-5, 3e-3, log=True)),
    Param("alpha_learning_rate", 3e-4, "Adam learning rate of log(alpha), the entropy coefficient", bounds="(0, inf)"),
    Param("gamma", 0.99, "discount factor", bounds="[0, 1]", search=(0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999)),
    Param("initial_alpha", 1.0, "initial entropy coefficient alpha (the fixed value when learn_alpha is false)",
          bounds="(0, inf)"),
    Param("learn_alpha", True, "tune alpha towards target_entropy (false: keep initial_alpha)"),
    AutoOrFloat("target_entropy", "auto", "entropy the tuned alpha steers the policy towards: 'auto' = -action_dim, or a number"),
    Param("hidden_sizes", [256, 256], "hidden layer widths of the policy and Q networks", item_type=int,
          item_bounds="[1, 8192]", length="[0, 16]", search=([64, 64], [256, 256], [400, 300])),
    Param("activation", "relu", "hidden activation", choices=("relu", "tanh", "elu")),
    Param("grad_norm_clip", 0.0, "gradient-norm clip per optimiser (0 disables)", bounds="[0, inf)"),
    Param("squash_actions", False, "skrl: tanh-squash the Gaussian policy's samples into the action bounds with the "
          "log-prob correction (the SAC paper's policy; false: skrl's unsquashed Gaussian, clipped by the env). "
          "TorchRL's TanhNormal actor always squashes"),
    Param("exploration_noise", "none", "extra noise on the sampled action while collecting: 'none' (the policy's own "
          "samples) or 'ou' (Ornstein-Uhlenbeck, temporally correlated; for sparse rewards such as MountainCar)",
          choices=("none", "ou")),
    Param("exploration_std", 0.5, "sigma of the Ornstein-Uhlenbeck exploration noise (per environment step)",
          bounds="[0, inf)"),
    Param("ou_theta", 0.15, "mean-reversion rate of the Ornstein-Uhlenbeck noise (per environment step)",
          bounds="[0, 1]"),
    *SDE_PARAMS,
    *SDE_WARMUP_PARAMS,
    Param("initial_log_std", -3.0, "with use_sde: the initial log std of every gSDE noise weight (SB3's log_std_init; "
          "unused without gSDE)", bounds="[-20, 2]"),
) + ESTIMATOR_PARAMS + REPLAY_PARAMS + TARGET_PARAMS + OPTIMIZER_PARAMS + CRITIC_PARAMS

SAC = AlgorithmSpec(
    name="sac",
    summary="Soft Actor-Critic (twin Q networks, entropy-regularised, tuned alpha)",
    kind="off-policy",
    # the backend modules route Box builds to skrl_backend / torchrl_backend and Discrete ones to their discrete cells
    backends={backend: dataclasses.replace(spec, module=f"rlplug_sac.{backend}_discrete") for backend, spec in
              both_backends("rlplug_sac", ("continuous", "discrete"), skrl_settings, torchrl_settings, distributed=True).items()},
    params=PARAMS,
    api_version=1,
    default_loss="sac",
    backend_default_losses={"torchrl": "sac-lean"},  # the same values as "sac", fewer Python calls per update (issue 18)
    rules=REPLAY_RULES + ESTIMATOR_RULES,
    losses=(
        LossSpec(
            name="sac",
            backend="skrl",
            factory="rlplug_sac.skrl_discrete:make_sac_loss",
            terms=("loss_critic", "loss_policy", "loss_entropy"),
            optimisers={"loss_critic": "critic", "loss_policy": "policy", "loss_entropy": "entropy"},
            doc="skrl's SAC math in three stages (critic, policy, entropy), one optimiser each; on Discrete actions "
            "DiscreteSACLoss's (exact expectations over a categorical policy's actions)",
        ),
        LossSpec(
            name="sac",
            backend="torchrl",
            factory="rlplug_sac.torchrl_discrete:make_sac_loss",
            terms=("loss_actor", "loss_qvalue", "loss_alpha"),
            reported=("alpha", "entropy"),
            doc="torchrl.objectives.SACLoss (v2, two Q networks) with its value estimator; DiscreteSACLoss on Discrete actions",
            describe="rlplug_sac.torchrl_discrete:describe_sac_loss",
        ),
        LossSpec(
            name="sac-lean",
            backend="torchrl",
            factory="rlplug_sac.torchrl_discrete:make_lean_sac_loss",
            terms=("loss_actor", "loss_qvalue", "loss_alpha"),
            reported=("alpha", "entropy"),
            doc="SACLoss's terms from plain tensors (no tensordict plumbing on the hot path): upstream's values, "
            "parameters and keys; falls back to SACLoss for TD(1)/TD(lambda)",
            describe="rlplug_sac.torchrl_discrete:describe_sac_loss",
        ),
    ),
)

_ENSEMBLE_DOCS = {"critic_learning_rate": "Adam learning rate of the critics"}
ENSEMBLE_PARAMS = tuple(replace(p, doc=_ENSEMBLE_DOCS.get(p.name, p.doc)) for p in PARAMS if p.name not in TD0_ONLY)
"""SAC's hyperparameters an ensemble variant (tqc, redq) keeps: all but the multi-step value estimators'."""
ENSEMBLE_RULES = tuple(r for r in SAC.rules if not set(r.fields) & set(TD0_ONLY))
"""SAC's rules an ensemble variant keeps: those about no hyperparameter it drops."""

plugin = AlgorithmPlugin(SAC, source="rlplug-sac")
