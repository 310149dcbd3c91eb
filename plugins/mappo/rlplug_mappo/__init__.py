"""rlplug-mappo: Multi-Agent PPO (and IPPO) on skrl and TorchRL.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
The backends live in ``skrl_backend`` and ``torchrl_backend`` and are imported only when built.
Environments are multi-agent ids, ``mpe:NAME`` (PettingZoo MPE from ``mpe2``) or ``vmas:NAME``.
"""

from __future__ import annotations

from rlplug import AlgorithmPlugin, AlgorithmSpec, LossSpec, Param
from rlplug.schema import both_backends

from .settings import skrl_settings, torchrl_settings

PARAMS = (
    Param("learning_rate", 3e-4, "Adam learning rate"),
    Param("rollout_steps", 128, "environment steps per environment between updates"),
    Param("epochs", 10, "passes over each rollout"),
    Param("minibatches", 4, "minibatches per epoch"),
    Param("gamma", 0.99, "discount factor"),
    Param("gae_lambda", 0.95, "GAE lambda"),
    Param("clip_ratio", 0.2, "PPO probability-ratio clip"),
    Param("value_clip", 0.0, "clip of the value change per update (0 disables)"),
    Param("entropy_coef", 0.01, "weight of the entropy bonus"),
    Param("value_coef", 0.5, "weight of the value loss (mean squared error)"),
    Param("max_grad_norm", 0.5, "gradient-norm clip (0 disables)"),
    Param("normalize_values", True, "standardise value targets with running statistics (the critic learns returns of any scale at once)"),
    Param("centralised_critic", True, "critic reads the global state (every agent's observation): MAPPO; false: each agent's own observation, IPPO"),
    Param("share_parameters", True, "one policy and one critic network shared by all agents (false: one per agent)"),
    Param("hidden_sizes", [64, 64], "hidden layer widths of policy and critic networks", item_type=int),
    Param("activation", "tanh", "hidden activation", choices=("tanh", "relu", "elu")),
    Param("initial_log_std", 0.0, "initial log standard deviation of the Gaussian policy (continuous actions)"),
)

MAPPO = AlgorithmSpec(
    name="mappo",
    summary="Multi-Agent PPO with a centralised critic (IPPO with centralised_critic = false)",
    kind="multi-agent",
    backends=both_backends("rlplug_mappo", ("discrete", "continuous"), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    api_version=1,
    default_loss="mappo",
    losses=(
        LossSpec(
            name="mappo",
            backend="skrl",
            factory="rlplug_mappo.skrl_backend:make_mappo_loss",
            terms=("loss_policy", "loss_value", "loss_entropy"),
            reported=("approx_kl",),
            doc="per-agent clipped surrogate + (clipped) MSE value loss + entropy bonus; skrl's own MAPPO math",
        ),
        LossSpec(
            name="mappo",
            backend="torchrl",
            factory="rlplug_mappo.torchrl_backend:make_mappo_loss",
            terms=("loss_objective", "loss_critic", "loss_entropy"),
            reported=("kl_approx", "clip_fraction", "entropy"),
            doc="torchrl.objectives.multiagent.MAPPOLoss with the multi-agent keys set and a MAGAE estimator",
        ),
    ),
)

plugin = AlgorithmPlugin(MAPPO, source="rlplug-mappo")
