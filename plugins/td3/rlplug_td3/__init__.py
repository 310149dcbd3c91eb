"""rlplug-td3: Twin Delayed DDPG (TD3) on skrl and TorchRL.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
The backends live in ``skrl_backend`` and ``torchrl_backend`` and are imported only when built.
"""

from __future__ import annotations

from rlplug import AlgorithmPlugin, AlgorithmSpec, LossSpec, Param, Search, both_backends
from rlplug.families import CRITIC_PARAMS, ESTIMATOR_PARAMS, OPTIMIZER_PARAMS, REPLAY_PARAMS, TARGET_PARAMS
from rlplug.families import ESTIMATOR_RULES, REPLAY_RULES

from .settings import skrl_settings, torchrl_settings

PARAMS = (
    Param("actor_learning_rate", 1e-3, "Adam learning rate of the deterministic policy", bounds="(0, inf)",
          search=Search(1e-5, 3e-3, log=True)),
    Param("critic_learning_rate", 1e-3, "Adam learning rate of the two Q-networks", bounds="(0, inf)", search=Search(1e-5, 3e-3, log=True)),
    Param("gamma", 0.99, "discount factor", bounds="[0, 1]", search=(0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999)),
    Param("policy_delay", 2, "critic gradient steps per policy step; the target networks move on policy steps",
          bounds="[1, inf)"),
    Param("target_policy_noise", 0.2, "std of the Gaussian noise added to the target policy's action (0 disables)",
          bounds="[0, inf)"),
    Param("target_noise_clip", 0.5, "clip of that target-policy smoothing noise", bounds="[0, inf)"),
    Param("exploration_noise", "gaussian", "noise added to the policy's action while collecting: 'gaussian' "
          "or 'ou' (Ornstein-Uhlenbeck, temporally correlated)", choices=("gaussian", "ou"), search=("gaussian", "ou")),
    Param("exploration_std", 0.1, "std of the Gaussian exploration noise (the OU process's sigma)", bounds="[0, inf)",
          search=Search(0.05, 0.5)),
    Param("ou_theta", 0.15, "mean-reversion rate of the Ornstein-Uhlenbeck noise (per environment step)",
          bounds="[0, 1]"),
    Param("exploration_final_scale", 1.0, "the exploration noise is scaled from 1 down to this value ...", bounds="[0, 1]"),
    Param("exploration_decay_steps", 0, "... linearly over this many environment steps (0: the final scale from the start)",
          bounds="[0, 10**12]"),
    Param("hidden_sizes", [256, 256], "hidden layer widths of the policy and Q-networks", item_type=int,
          item_bounds="[1, 8192]", length="[0, 16]", search=([64, 64], [256, 256], [400, 300])),
    Param("activation", "relu", "hidden activation", choices=("relu", "tanh", "elu")),
    Param("grad_norm_clip", 0.0, "gradient-norm clip of each optimiser step (0 disables)", bounds="[0, inf)"),
) + ESTIMATOR_PARAMS + REPLAY_PARAMS + TARGET_PARAMS + OPTIMIZER_PARAMS + CRITIC_PARAMS

TD3 = AlgorithmSpec(
    name="td3",
    summary="Twin Delayed DDPG: clipped double-Q, delayed policy updates, target policy smoothing",
    kind="off-policy",
    backends=both_backends("rlplug_td3", ("continuous",), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    api_version=1,
    default_loss="td3",
    backend_default_losses={"torchrl": "td3-lean"},  # the same values as "td3", fewer Python calls per update (issue 18)
    rules=REPLAY_RULES + ESTIMATOR_RULES,
    losses=(
        LossSpec(
            name="td3",
            backend="skrl",
            factory="rlplug_td3.skrl_backend:make_td3_loss",
            terms=("loss_critic", "loss_policy"),
            optimisers={"loss_critic": "critic", "loss_policy": "policy"},
            doc="skrl's TD3 math, staged: 'critic' (sum of both critics' MSE to the smoothed clipped "
            "double-Q target) every step, 'policy' (-Q1 of the policy's action) on delayed steps",
        ),
        LossSpec(
            name="td3",
            backend="torchrl",
            factory="rlplug_td3.torchrl_backend:make_td3_loss",
            terms=("loss_qvalue", "loss_actor"),
            optimisers={"loss_qvalue": "critic", "loss_actor": "actor"},
            doc="torchrl.objectives.TD3Loss (l2): value_loss every step, actor_loss and the target "
            "update every policy_delay steps",
            describe="rlplug_td3.torchrl_backend:describe_td3_loss",
        ),
        LossSpec(
            name="td3-lean",
            backend="torchrl",
            factory="rlplug_td3.torchrl_backend:make_lean_td3_loss",
            terms=("loss_qvalue", "loss_actor"),
            optimisers={"loss_qvalue": "critic", "loss_actor": "actor"},
            doc="TD3Loss's value_loss and actor_loss from plain tensors (no tensordict plumbing on the hot path): "
            "upstream's values, parameters and keys; falls back to TD3Loss for TD(1)/TD(lambda)",
            describe="rlplug_td3.torchrl_backend:describe_td3_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(TD3, source="rlplug-td3")
