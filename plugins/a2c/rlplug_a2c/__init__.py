"""rlplug-a2c: A2C (advantage actor-critic) on skrl and TorchRL.

The plugin's entry point: it declares the algorithm and stays cheap (no torch). A2C is the on-policy family with one
pass over each short rollout: the family's parameters with SB3's A2C defaults, no ``epochs`` (so no KL early stop),
plus ``normalize_advantage`` and the choice of Adam or RMSprop (SB3's ``use_rms_prop``, what the Zoo's a2c.yml
assumes). The backends live in ``skrl_backend`` (skrl's ``A2C`` agent) and ``torchrl_backend`` (``A2CLoss``).
"""

from __future__ import annotations

from rlplug import AlgorithmPlugin, AlgorithmSpec, LossSpec, Param, both_backends
from rlplug.families import (
    GYMNASIUM_PARAMS,
    NETWORK_PARAMS,
    ONPOLICY_PARAMS,
    OPTIMIZER_CHOICE_PARAMS,
    ROLLOUT_RULES,
    SCHEDULE_PARAMS,
    adjusted,
)

from .settings import skrl_settings, torchrl_settings

PARAMS = (
    # SB3's A2C constructor defaults (learning_rate 7e-4, n_steps 5, ent_coef 0.0, vf_coef 0.5); gae_lambda stays skrl's and
    # TorchRL's 0.95 (SB3's 1.0 comes with zoo:a2c/ENV)
    *adjusted(ONPOLICY_PARAMS, drop=("epochs",), learning_rate=7e-4, rollout_steps=5, minibatches=1),
    *adjusted(SCHEDULE_PARAMS, drop=("kl_early_stop",)),
    Param("normalize_advantage", True, "standardise the advantages over each rollout (skrl's A2C always does; SB3's "
          "A2C by default does not)"),
    *OPTIMIZER_CHOICE_PARAMS,
    *GYMNASIUM_PARAMS,
    *NETWORK_PARAMS,
)

A2C = AlgorithmSpec(
    name="a2c",
    summary="Advantage actor-critic: one pass over each short rollout, GAE advantages, Adam or RMSprop",
    kind="on-policy",
    backends=both_backends("rlplug_a2c", ("discrete", "continuous"), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    api_version=1,
    default_loss="a2c",
    rules=ROLLOUT_RULES,
    losses=(
        LossSpec(
            name="a2c",
            backend="skrl",
            factory="rlplug_a2c.skrl_backend:make_a2c_loss",
            terms=("loss_policy", "loss_value", "loss_entropy"),
            reported=("approx_kl",),
            doc="-(advantage * log pi(a|s)) + value_coef * MSE(V, returns) - entropy bonus; skrl's own A2C math "
            "(skrl's value loss is unscaled: value_coef = 1)",
        ),
        LossSpec(
            name="a2c",
            backend="torchrl",
            factory="rlplug_a2c.torchrl_backend:make_a2c_loss",
            terms=("loss_objective", "loss_critic", "loss_entropy"),
            reported=("entropy",),
            doc="torchrl.objectives.A2CLoss with a GAE value estimator (advantages standardised per rollout)",
            describe="rlplug_a2c.torchrl_backend:describe_a2c_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(A2C, source="rlplug-a2c")
