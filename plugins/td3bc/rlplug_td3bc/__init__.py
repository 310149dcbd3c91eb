"""rlplug-td3bc: TD3+BC (Fujimoto & Gu 2021), offline, on skrl and TorchRL, derived from rlplug-td3.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
TD3+BC is TD3 with two changes: the actor loss adds a behaviour-cloning term,
``-lambda * Q1(s, pi(s)).mean() + MSE(pi(s), a)`` with ``lambda = alpha / mean|Q1(s, pi(s))|``, and the
observations are standardised with the dataset's mean and std. TD3's networks, critic update, target
smoothing, policy delay and target updates are reused as they are.
"""

from __future__ import annotations

import dataclasses

from rlplug import AlgorithmPlugin, AlgorithmSpec, LossSpec, Param, both_backends
from rlplug.families import OFFLINE_PARAMS, OPTIMIZER_PARAMS, TARGET_PARAMS
from rlplug_td3 import PARAMS as TD3_PARAMS

from .settings import skrl_settings, torchrl_settings

# TD3's own hyperparameters minus what only an environment-stepping loop reads (exploration noise),
# at the paper's learning rates
_KEPT = ("actor_learning_rate", "critic_learning_rate", "gamma", "policy_delay", "target_policy_noise",
         "target_noise_clip", "hidden_sizes", "activation", "grad_norm_clip")
_PAPER = {"actor_learning_rate": 3e-4, "critic_learning_rate": 3e-4}

PARAMS = tuple(dataclasses.replace(p, default=_PAPER.get(p.name, p.default)) for p in TD3_PARAMS if p.name in _KEPT) + (
    Param("alpha", 2.5, "weight of the Q term against behaviour cloning: lambda = alpha / mean|Q1(s, pi(s))|",
          bounds="[0, inf)"),
    Param("normalize_observations", True, "standardise observations with the dataset's mean and std (+1e-3), in "
          "training, evaluation and export (flat observation vectors only)"),
) + OFFLINE_PARAMS + TARGET_PARAMS + OPTIMIZER_PARAMS

TD3BC = AlgorithmSpec(
    name="td3bc",
    summary="TD3+BC: TD3 whose actor also regresses on the dataset's actions, on standardised observations (offline)",
    kind="offline",
    backends=both_backends("rlplug_td3bc", ("continuous",), skrl_settings, torchrl_settings),
    params=PARAMS,
    api_version=1,
    default_loss="td3bc",
    backend_default_losses={"torchrl": "td3bc-lean"},  # TD3BCLoss's values with fewer Python calls per update
    losses=(
        LossSpec(
            name="td3bc",
            backend="skrl",
            factory="rlplug_td3bc.skrl_backend:make_td3bc_loss",
            terms=("loss_critic", "loss_policy"),
            reported=("bc_loss", "lmbda"),
            optimisers={"loss_critic": "critic", "loss_policy": "policy"},
            doc="td3's staged skrl loss with the policy stage -lambda * Q1(s, pi(s)) + MSE(pi(s), a)",
        ),
        LossSpec(
            name="td3bc",
            backend="torchrl",
            factory="rlplug_td3bc.torchrl_backend:make_td3bc_loss",
            terms=("loss_qvalue", "loss_actor"),
            reported=("bc_loss", "lmbda"),
            optimisers={"loss_qvalue": "critic", "loss_actor": "actor"},
            doc="torchrl.objectives.TD3BCLoss (l2): qvalue_loss every step, actor_loss and the target update "
            "every policy_delay steps",
            describe="rlplug_td3bc.torchrl_backend:describe_td3bc_loss",
        ),
        LossSpec(
            name="td3bc-lean",
            backend="torchrl",
            factory="rlplug_td3bc.torchrl_backend:make_lean_td3bc_loss",
            terms=("loss_qvalue", "loss_actor"),
            reported=("bc_loss", "lmbda"),
            optimisers={"loss_qvalue": "critic", "loss_actor": "actor"},
            doc="TD3BCLoss's qvalue_loss and actor_loss from plain tensors (td3-lean's critic term): upstream's "
            "values, parameters and draws; falls back to TD3BCLoss for priority weights or loss masks",
            describe="rlplug_td3bc.torchrl_backend:describe_td3bc_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(TD3BC, source="rlplug-td3bc")
