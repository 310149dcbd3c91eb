"""rlplug-dqn: Deep Q-Network (and double DQN) on skrl and TorchRL.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
The backends live in ``skrl_backend`` and ``torchrl_backend`` and are imported only when built.
"""

from __future__ import annotations

from rlplug import AlgorithmPlugin, AlgorithmSpec, LossSpec, Param
from rlplug.optim import OPTIMIZER_PARAMS
from rlplug.offpolicy import ESTIMATOR_PARAMS, REPLAY_PARAMS, TARGET_PARAMS
from rlplug.schema import both_backends

from .settings import skrl_settings, torchrl_settings

PARAMS = (
    Param("learning_rate", 1e-3, "Adam learning rate of the Q network"),
    Param("lr_schedule", "constant", "learning-rate schedule over the gradient steps: constant, or linear decay "
          "to zero at the last gradient step of the budget", choices=("constant", "linear")),
    Param("gamma", 0.99, "discount factor"),
    Param("double_dqn", False, "double DQN: the online network picks the next action, the target network values it"),
    Param("epsilon_start", 1.0, "exploration epsilon at the first transition"),
    Param("epsilon_end", 0.05, "exploration epsilon once the decay is over"),
    Param("epsilon_decay_steps", 10_000, "transitions (summed over environments, warm-up included) over which "
          "epsilon falls linearly from epsilon_start to epsilon_end"),
    Param("td_loss", "l2", "loss on the TD error: 'l2' (mean squared, skrl's DQN) or 'huber' (smooth L1, "
          "Stable-Baselines3's DQN)", choices=("l2", "huber")),
    Param("max_grad_norm", 10.0, "gradient-norm clip (0 disables; upstream skrl DQN never clips)"),
    Param("hidden_sizes", [64, 64], "hidden layer widths of the Q network", item_type=int),
    Param("activation", "relu", "hidden activation", choices=("relu", "tanh", "elu")),
) + ESTIMATOR_PARAMS + REPLAY_PARAMS + TARGET_PARAMS + OPTIMIZER_PARAMS

DQN = AlgorithmSpec(
    name="dqn",
    summary="Deep Q-Network (epsilon-greedy, replay, target network; double DQN as a switch)",
    kind="off-policy",
    backends=both_backends("rlplug_dqn", ("discrete",), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    api_version=1,
    default_loss="dqn",
    losses=(
        LossSpec(
            name="dqn",
            backend="skrl",
            factory="rlplug_dqn.skrl_backend:make_dqn_loss",
            terms=("loss_q",),
            reported=("q_taken", "q_target"),
            doc="skrl's DQN math (DDQN's with double_dqn), one stage 'q'; MSE or Huber on the TD error",
        ),
        LossSpec(
            name="dqn",
            backend="torchrl",
            factory="rlplug_dqn.torchrl_backend:make_dqn_loss",
            terms=("loss",),
            doc="torchrl.objectives.DQNLoss (double_dqn switch) with its value estimator",
            describe="rlplug_dqn.torchrl_backend:describe_dqn_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(DQN, source="rlplug-dqn")
