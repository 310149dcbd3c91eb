"""rlplug-cql: Conservative Q-Learning (offline RL) on skrl and TorchRL.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
The backends live in ``skrl_backend`` and ``torchrl_backend`` and are imported only when built.

Box actions: SAC with the CQL(H) penalty on both Q networks (TorchRL's ``CQLLoss``; skrl has no CQL,
so rlplug writes the agent on skrl's ``Agent`` base with the same maths). Discrete actions: Q-learning
with the penalty ``logsumexp_a Q(s, a) - Q(s, a_data)`` (TorchRL's ``DiscreteCQLLoss``).
"""

from __future__ import annotations


from rlplug import AlgorithmPlugin, AlgorithmSpec, AutoOrFloat, LossSpec, Param, Search, both_backends
from rlplug.families import CRITIC_PARAMS, OFFLINE_PARAMS, OPTIMIZER_PARAMS, TARGET_PARAMS

from .settings import skrl_settings, torchrl_settings


PARAMS = (
    Param("actor_learning_rate", 1e-4, "Adam learning rate of the policy (Box actions)", bounds="(0, inf)", search=Search(1e-5, 1e-3, log=True)),
    Param("critic_learning_rate", 3e-4, "Adam learning rate of the Q networks (the one Q network for Discrete actions)", bounds="(0, inf)",
          search=Search(1e-5, 1e-3, log=True)),
    Param("alpha_learning_rate", 3e-4, "Adam learning rate of log(alpha), the entropy coefficient (Box actions)", bounds="(0, inf)"),
    Param("gamma", 0.99, "discount factor", bounds="[0, 1]"),
    Param("initial_alpha", 1.0, "initial entropy coefficient alpha (the fixed value when learn_alpha is false)",
          bounds="(0, inf)"),
    Param("learn_alpha", True, "tune alpha towards target_entropy (false: keep initial_alpha)"),
    AutoOrFloat("target_entropy", "auto", "entropy the tuned alpha steers the policy towards: 'auto' = -action_dim, or a number"),
    Param("min_q_weight", 1.0, "weight of the conservative penalty added to the TD loss", bounds="[0, inf)",
          search=Search(0.1, 10.0, log=True)),
    Param("num_random", 10, "Box actions: actions per state in the penalty's log-sum-exp, from each of three proposals "
          "(uniform in [-1, 1], the policy at s, the policy at s')", bounds="[1, 1000]"),
    Param("temperature", 1.0, "Box actions: temperature of the penalty's log-sum-exp", bounds="(0, inf)"),
    Param("deterministic_backup", True, "Box actions: leave the entropy bonus -alpha * log pi(a'|s') out of the TD target"),
    Param("td_loss", "l2", "loss on the TD error: 'l2' (squared) or 'huber' (smooth L1)", choices=("l2", "huber")),
    Param("hidden_sizes", [256, 256], "hidden layer widths of the policy and Q networks", item_type=int,
          item_bounds="[1, 8192]", length="[0, 16]"),
    Param("activation", "relu", "hidden activation", choices=("relu", "tanh", "elu")),
    Param("grad_norm_clip", 0.0, "gradient-norm clip of the policy and Q-network updates (0 disables)", bounds="[0, inf)"),
) + OFFLINE_PARAMS + TARGET_PARAMS + OPTIMIZER_PARAMS + CRITIC_PARAMS

CQL = AlgorithmSpec(
    name="cql",
    summary="Conservative Q-Learning: offline SAC (Box) or Q-learning (Discrete) with a penalty on out-of-data actions",
    kind="offline",
    backends=both_backends("rlplug_cql", ("continuous", "discrete"), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    api_version=1,
    default_loss="cql",
    backend_default_losses={"torchrl": "cql-lean"},  # the same values as "cql", fewer Python calls per update (issue 18)
    losses=(
        LossSpec(
            name="cql",
            backend="skrl",
            factory="rlplug_cql.skrl_backend:make_cql_loss",
            terms=("loss_critic", "loss_cql", "loss_policy", "loss_entropy"),
            reported=("alpha", "entropy", "q_data"),
            optimisers={"loss_critic": "critic", "loss_cql": "critic", "loss_policy": "policy", "loss_entropy": "entropy"},
            doc="TorchRL's CQL maths in skrl stages: Box 'critic' (TD + penalty), 'policy', 'entropy'; Discrete 'q' "
                "(TD + penalty)",
        ),
        LossSpec(
            name="cql",
            backend="torchrl",
            factory="rlplug_cql.torchrl_backend:make_cql_loss",
            terms=("loss_actor", "loss_qvalue", "loss_cql", "loss_alpha"),
            reported=("loss_actor_bc", "alpha", "entropy", "pred_value", "target_value"),
            doc="torchrl.objectives.CQLLoss (Box; loss_actor_bc reported, not optimised) or DiscreteCQLLoss (Discrete), "
                "TD(0) value estimator",
            describe="rlplug_cql.torchrl_backend:describe_cql_loss",
        ),
        LossSpec(
            name="cql-lean",
            backend="torchrl",
            factory="rlplug_cql.torchrl_backend:make_lean_cql_loss",
            terms=("loss_actor", "loss_qvalue", "loss_cql", "loss_alpha"),
            reported=("loss_actor_bc", "alpha", "entropy", "pred_value", "target_value"),
            doc="CQLLoss's (Box) or DiscreteCQLLoss's terms from plain tensors (no tensordict plumbing on the hot path): "
                "the 'cql' loss's values, parameters and keys",
            describe="rlplug_cql.torchrl_backend:describe_cql_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(CQL, source="rlplug-cql")
