"""rlplug-reinforce: REINFORCE (Williams, 1992) on skrl and TorchRL, derived from rlplug-a2c.

REINFORCE ascends ``sum_t G_t log pi(a_t | s_t)`` with ``G_t`` the Monte-Carlo discounted return, optionally less a
learned value baseline ``V(s_t)``. It is A2C's cell with lambda = 1 (Monte-Carlo returns; a rollout cut mid-episode
is bootstrapped from the critic's value, which is why the critic is trained with or without ``baseline``), one
gradient step per rollout and no entropy bonus. Cheap: no torch.
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin, AlgorithmSpec, LossSpec, Param, both_backends
from rlplug_a2c import PARAMS as A2C_PARAMS

from .settings import FIXED, skrl_settings, torchrl_settings

PARAMS = (
    *(
        replace(p, choices=("constant", "linear"), search=("constant", "linear")) if p.name == "lr_schedule" else p
        for p in A2C_PARAMS
        if p.name not in (*FIXED, "kl_target")  # TorchRL's ReinforceLoss reports no KL to adapt the rate to
    ),
    Param("baseline", True, "subtract the critic's value from the return (false: the return itself weighs each "
          "log-probability; the critic still bootstraps a rollout cut mid-episode)"),
)
# Monte-Carlo returns want rollouts longer than A2C's 5 steps
PARAMS = tuple(replace(p, default=128) if p.name == "rollout_steps" else p for p in PARAMS)

REINFORCE = AlgorithmSpec(
    name="reinforce",
    summary="REINFORCE: Monte-Carlo policy gradient, one step per rollout, optional value baseline",
    kind="on-policy",
    backends=both_backends("rlplug_reinforce", ("discrete", "continuous"), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    api_version=1,
    default_loss="reinforce",
    losses=(
        LossSpec(
            name="reinforce",
            backend="skrl",
            factory="rlplug_reinforce.skrl_backend:make_reinforce_loss",
            terms=("loss_policy", "loss_value"),
            reported=("approx_kl",),
            doc="-(advantage * log pi(a|s)) + MSE(V, returns) on skrl's A2C agent with lambda = 1 (a2c's loss, no "
            "entropy term)",
        ),
        LossSpec(
            name="reinforce",
            backend="torchrl",
            factory="rlplug_reinforce.torchrl_backend:make_reinforce_loss",
            terms=("loss_actor", "loss_value"),
            doc="torchrl.objectives.ReinforceLoss (l2 critic loss) with a TD(1) estimator: Monte-Carlo returns",
            describe="rlplug_reinforce.torchrl_backend:describe_reinforce_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(REINFORCE, source="rlplug-reinforce")
