"""rlplug-iql: Implicit Q-Learning (Kostrikov et al. 2021), offline, on skrl and TorchRL.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
The backends live in ``skrl_backend`` and ``torchrl_backend`` (Box actions) and are imported only when built;
``skrl_discrete`` and ``torchrl_discrete`` are the modules the declaration names: they hand a Box build to those
and build Discrete ones themselves (TorchRL's ``DiscreteIQLLoss`` and its maths on skrl).
"""

from __future__ import annotations

import dataclasses

from rlplug import AlgorithmPlugin, AlgorithmSpec, LossSpec, Param, Search, both_backends
from rlplug.families import OFFLINE_PARAMS, OPTIMIZER_PARAMS, TARGET_PARAMS

from .settings import skrl_settings, torchrl_settings

PARAMS = (
    Param("actor_learning_rate", 3e-4, "Adam learning rate of the policy", bounds="(0, inf)", search=Search(1e-5, 1e-3, log=True)),
    Param("critic_learning_rate", 3e-4, "Adam learning rate of the two Q networks", bounds="(0, inf)", search=Search(1e-5, 1e-3, log=True)),
    Param("value_learning_rate", 3e-4, "Adam learning rate of the state-value network V", bounds="(0, inf)", search=Search(1e-5, 1e-3, log=True)),
    Param("gamma", 0.99, "discount factor of the TD(0) target r + gamma * (1 - terminated) * V(s')",
          bounds="[0, 1]"),
    Param("expectile", 0.7, "expectile tau of V's regression towards min Q (0.5: the mean, i.e. SARSA; "
          "towards 1: the best action in the data)", bounds="(0, 1)", search=Search(0.5, 0.95)),
    Param("temperature", 3.0, "inverse temperature beta of the advantage weights exp(beta * (Q - V)), clamped at 100",
          bounds="[0, inf)", search=Search(0.5, 10.0, log=True)),
    Param("hidden_sizes", [256, 256], "hidden layer widths of the policy, Q and V networks", item_type=int,
          item_bounds="[1, 8192]", length="[0, 16]"),
    Param("activation", "relu", "hidden activation", choices=("relu", "tanh", "elu")),
    Param("grad_norm_clip", 0.0, "gradient-norm clip per optimised network (0 disables)", bounds="[0, inf)"),
) + OFFLINE_PARAMS + TARGET_PARAMS + OPTIMIZER_PARAMS

IQL = AlgorithmSpec(
    name="iql",
    summary="Implicit Q-Learning: expectile V, TD Q, advantage-weighted policy regression (offline)",
    kind="offline",
    # the backend modules route Box builds to skrl_backend / torchrl_backend and Discrete ones to their discrete cells
    backends={backend: dataclasses.replace(spec, module=f"rlplug_iql.{backend}_discrete") for backend, spec in
              both_backends("rlplug_iql", ("continuous", "discrete"), skrl_settings, torchrl_settings, distributed=True).items()},
    params=PARAMS,
    api_version=1,
    default_loss="iql",
    backend_default_losses={"torchrl": "iql-lean"},  # the same values as "iql", fewer Python calls per update (issue 18)
    losses=(
        LossSpec(
            name="iql",
            backend="skrl",
            factory="rlplug_iql.skrl_discrete:make_iql_loss",
            terms=("loss_value", "loss_critic", "loss_policy"),
            reported=("entropy",),
            optimisers={"loss_value": "value", "loss_critic": "critic", "loss_policy": "policy"},
            doc="IQL in three stages (value: expectile regression, critic: TD towards V(s'), policy: AWR), "
            "one optimiser each; TorchRL's IQLLoss math (DiscreteIQLLoss's for Discrete actions)",
        ),
        LossSpec(
            name="iql",
            backend="torchrl",
            factory="rlplug_iql.torchrl_discrete:make_iql_loss",
            terms=("loss_actor", "loss_qvalue", "loss_value"),
            reported=("entropy",),
            doc="torchrl.objectives.IQLLoss (two Q networks, V network, TD(0) value estimator); DiscreteIQLLoss for "
            "Discrete actions",
            describe="rlplug_iql.torchrl_discrete:describe_iql_loss",
        ),
        LossSpec(
            name="iql-lean",
            backend="torchrl",
            factory="rlplug_iql.torchrl_discrete:make_lean_iql_loss",
            terms=("loss_actor", "loss_qvalue", "loss_value"),
            reported=("entropy",),
            doc="IQLLoss's terms from plain tensors (each network once, no tensordict plumbing): upstream's "
            "values, parameters and keys (Discrete actions: DiscreteIQLLoss itself)",
            describe="rlplug_iql.torchrl_discrete:describe_iql_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(IQL, source="rlplug-iql")
