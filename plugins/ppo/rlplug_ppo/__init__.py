"""rlplug-ppo: Proximal Policy Optimization on skrl and TorchRL.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
The backends live in ``skrl_backend`` and ``torchrl_backend`` and are imported only when built.
"""

from __future__ import annotations

from rlplug import AlgorithmPlugin, AlgorithmSpec, LossSpec, Param
from rlplug.schema import both_backends

from .settings import skrl_settings, torchrl_settings

PARAMS = (
    Param("learning_rate", 3e-4, "Adam learning rate (initial value when scheduled)"),
    Param("lr_schedule", "constant", "learning-rate schedule", choices=("constant", "linear", "kl_adaptive")),
    Param("kl_target", 0.008, "KL the kl_adaptive schedule steers towards"),
    Param("rollout_steps", 128, "environment steps per environment between updates"),
    Param("epochs", 10, "passes over each rollout"),
    Param("minibatches", 4, "minibatches per epoch"),
    Param("gamma", 0.99, "discount factor"),
    Param("gae_lambda", 0.95, "GAE lambda"),
    Param("clip_ratio", 0.2, "PPO probability-ratio clip"),
    Param("value_clip", 0.0, "clip of the value change per update (0 disables)"),
    Param("entropy_coef", 0.0, "weight of the entropy bonus"),
    Param("value_coef", 0.5, "weight of the value loss (mean squared error)"),
    Param("max_grad_norm", 0.5, "gradient-norm clip (0 disables)"),
    Param("kl_early_stop", 0.0, "stop an epoch's minibatch loop when the approximate KL exceeds this (0 disables)"),
    Param("normalize_observations", False, "standardise observations with running statistics"),
    Param("normalize_values", False, "standardise value targets with running statistics"),
    Param("bootstrap_truncated", True, "bootstrap from the value of the true last state when an episode is cut by a time limit (false: treat the cut as a termination)"),
    Param("hidden_sizes", [64, 64], "hidden layer widths of policy and value networks", item_type=int),
    Param("activation", "tanh", "hidden activation", choices=("tanh", "relu", "elu")),
    Param("initial_log_std", 0.0, "initial log standard deviation of the Gaussian policy (continuous actions)"),
)

_TERMS = ("loss_policy", "loss_value", "loss_entropy")

PPO = AlgorithmSpec(
    name="ppo",
    summary="Proximal Policy Optimization (clipped surrogate, GAE)",
    kind="on-policy",
    backends=both_backends("rlplug_ppo", ("discrete", "continuous"), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    api_version=1,
    default_loss="clip",
    losses=(
        LossSpec(
            name="clip",
            backend="skrl",
            factory="rlplug_ppo.skrl_backend:make_clip_loss",
            terms=_TERMS,
            reported=("approx_kl",),
            doc="clipped surrogate + (clipped) MSE value loss + entropy bonus; skrl's own PPO math",
        ),
        LossSpec(
            name="clip",
            backend="torchrl",
            factory="rlplug_ppo.torchrl_backend:make_clip_loss",
            terms=("loss_objective", "loss_critic", "loss_entropy"),
            reported=("kl_approx", "clip_fraction", "entropy"),
            doc="torchrl.objectives.ClipPPOLoss with a GAE value estimator",
            describe="rlplug_ppo.torchrl_backend:describe_clip_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(PPO, source="rlplug-ppo")
