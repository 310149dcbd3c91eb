"""my-a2c: A2C (advantage actor-critic) for rlplug, on skrl and TorchRL.

This module is the plugin's entry point (``my_a2c:plugin`` in group ``rlplug.plugins``). rlplug
imports it to list algorithms and recipes, so it only declares things and never imports torch, skrl
or TorchRL; the implementations live in ``skrl_backend`` and ``torchrl_backend`` and are imported when
a run is built. The hyperparameters are the on-policy family's (``rlplug.families``), and so is
their translation into each backend's settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import rlplug
from rlplug import AlgorithmPlugin, AlgorithmSpec, LossSpec, both_backends
from rlplug.families import (
    GYMNASIUM_PARAMS,
    NETWORK_PARAMS,
    ONPOLICY_PARAMS,
    ROLLOUT_RULES,
    SCHEDULE_PARAMS,
    adjusted,
    skrl_onpolicy_settings,
    torchrl_onpolicy_settings,
)

__version__ = "0.1.0"

# one pass over each rollout (no `epochs`, so no KL early stop either): A2C's defaults on the family's
PARAMS = (
    *adjusted(ONPOLICY_PARAMS, drop=("epochs",), learning_rate=1e-3, rollout_steps=16, minibatches=1, entropy_coef=0.01),
    *adjusted(SCHEDULE_PARAMS, drop=("kl_early_stop",)),
    *GYMNASIUM_PARAMS,
    *NETWORK_PARAMS,
)


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``A2C_CFG`` and the loss's scales (``rlplug show mya2c-cartpole`` prints them)."""
    return skrl_onpolicy_settings(hp, recipe)


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of TorchRL's ``A2CLoss``, its GAE estimator, the collector and rlplug's TorchRL loop."""
    return torchrl_onpolicy_settings(hp, recipe)


A2C = AlgorithmSpec(
    name="mya2c",
    summary="A2C: advantage actor-critic, one gradient step per minibatch of each short rollout (GAE)",
    kind="on-policy",
    backends=both_backends("my_a2c", ("discrete", "continuous"), skrl_settings, torchrl_settings),
    params=PARAMS,
    api_version=rlplug.API_VERSION,
    default_loss="a2c",
    rules=ROLLOUT_RULES,
    losses=(
        # registered through rlplug_register_losses like every built-in loss, so a user plugin can add
        # another one for a2c/<backend> and a recipe can pick it with `loss = "..."`
        LossSpec(
            name="a2c",
            backend="skrl",
            factory="my_a2c.skrl_backend:make_a2c_loss",
            terms=("loss_policy", "loss_value", "loss_entropy"),
            reported=("approx_kl",),
            doc="-(advantage * log pi(a|s)) + scaled MSE value loss - entropy bonus; skrl's own A2C math (value_coef = 1)",
        ),
        LossSpec(
            name="a2c",
            backend="torchrl",
            factory="my_a2c.torchrl_backend:make_a2c_loss",
            terms=("loss_objective", "loss_critic", "loss_entropy"),
            reported=("entropy",),
            doc="torchrl.objectives.A2CLoss with a GAE value estimator (advantages standardised per rollout)",
        ),
    ),
)

RECIPES = [
    {
        "name": "mya2c-cartpole",
        "version": 1,
        "description": (
            "A2C on CartPole-v1, 8 environments, 16-step rollouts, learning rate annealed to zero; measured at "
            "100k steps: eval 167-500 (median 408) over seeds 42 and 0-3 on both backends, 8 s (skrl) / 14 s (TorchRL)"
        ),
        "algorithm": "mya2c",
        "env": "CartPole-v1",
        "backend": "torchrl",
        "steps": 100_000,
        "seed": 42,
        "num_envs": 8,
        "target": 150.0,
        "eval_episodes": 10,
        "hyperparameters": {
            "learning_rate": 1e-3,
            "lr_schedule": "linear",  # to zero at the budget's end: A2C's last policy then stops swinging
            "rollout_steps": 16,
            "minibatches": 1,
            "gamma": 0.99,
            "gae_lambda": 0.95,
            "entropy_coef": 0.01,
            "value_coef": 0.5,
            "max_grad_norm": 0.5,
            "hidden_sizes": [64, 64],
            "activation": "tanh",
        },
    },
]

plugin = AlgorithmPlugin(A2C, recipes=RECIPES, source="my-a2c")
