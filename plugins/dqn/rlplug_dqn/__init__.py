"""rlplug-dqn: Deep Q-Network (double DQN, a dueling head and n-step returns as switches) on skrl and TorchRL.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
The backends live in ``skrl_backend`` and ``torchrl_backend`` and are imported only when built.
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin, AlgorithmSpec, LossSpec, Param, Rule, Search, both_backends
from rlplug.families import ESTIMATOR_PARAMS, OPTIMIZER_PARAMS, REPLAY_PARAMS, TARGET_PARAMS
from rlplug.families import ESTIMATOR_RULES, REPLAY_RULES

from .settings import DISTRIBUTIONAL_DROPS, skrl_settings, torchrl_settings

PARAMS = (
    Param("learning_rate", 1e-3, "Adam learning rate of the Q network", bounds="(0, inf)", search=Search(1e-5, 1e-2, log=True)),
    Param("lr_schedule", "constant", "learning-rate schedule over the gradient steps: constant, or linear decay "
          "to zero at the last gradient step of the budget", choices=("constant", "linear")),
    Param("gamma", 0.99, "discount factor", bounds="[0, 1]", search=(0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999)),
    Param("double_dqn", False, "double DQN: the online network picks the next action, the target network values it",
          search=(False, True)),
    Param("epsilon_start", 1.0, "exploration epsilon at the first transition", bounds="[0, 1]"),
    Param("epsilon_end", 0.05, "exploration epsilon once the decay is over", bounds="[0, 1]", search=Search(0.0, 0.2)),
    Param("epsilon_decay_steps", 10_000, "transitions (summed over environments, warm-up included) over which "
          "epsilon falls linearly from epsilon_start to epsilon_end", bounds="[0, 10**12]",
          search=(1_000, 5_000, 10_000, 20_000, 50_000)),
    Param("td_loss", "l2", "loss on the TD error: 'l2' (mean squared, skrl's DQN) or 'huber' (smooth L1, "
          "Stable-Baselines3's DQN)", choices=("l2", "huber")),
    Param("max_grad_norm", 10.0, "gradient-norm clip (0 disables; upstream skrl DQN never clips)", bounds="[0, inf)"),
    Param("dueling", False, "dueling head: Q(s, a) = V(s) + A(s, a) - mean A(s, .), a value layer and an advantage "
          "layer over the last hidden layer (Wang et al. 2016)", search=(False, True)),
    Param("n_step", 1, "n-step returns: the TD target sums up to n discounted rewards and bootstraps from the state "
          "n steps later (fewer at an episode end); 1 is one-step TD", bounds="[1, 100]", search=(1, 3, 5)),
    Param("hidden_sizes", [64, 64], "hidden layer widths of the Q network", item_type=int,
          item_bounds="[1, 8192]", length="[0, 16]", search=([64], [64, 64], [256, 256])),
    Param("activation", "relu", "hidden activation", choices=("relu", "tanh", "elu")),
) + ESTIMATOR_PARAMS + REPLAY_PARAMS + TARGET_PARAMS + OPTIMIZER_PARAMS

_PER_ATOM = {"dueling": "dueling head, per atom: Z(s, a) = V(s) + A(s, a) - mean A(s, .) for each quantile or atom "
             "(Rainbow's), value and advantage layers over the last hidden layer"}
DISTRIBUTIONAL_PARAMS = tuple(replace(p, doc=_PER_ATOM.get(p.name, p.doc)) for p in PARAMS if p.name not in DISTRIBUTIONAL_DROPS)
"""DQN's hyperparameters a distributional variant (qrdqn, c51) keeps, its dueling head's doc per atom."""

DQN = AlgorithmSpec(
    name="dqn",
    summary="Deep Q-Network (epsilon-greedy, replay, target network; double DQN, a dueling head and n-step returns as switches)",
    kind="off-policy",
    backends=both_backends("rlplug_dqn", ("discrete",), skrl_settings, torchrl_settings, distributed=True, action_masks=True),
    params=PARAMS,
    api_version=1,
    default_loss="dqn",
    backend_default_losses={"torchrl": "dqn-lean"},  # the same values as "dqn", fewer Python calls per update (issue 18)
    rules=REPLAY_RULES + ESTIMATOR_RULES + (
        Rule(("n_step", "value_estimator"), "value_estimator == 'td0' with n_step > 1",
             lambda hp, recipe: hp["n_step"] == 1 or hp["value_estimator"] == "td0",
             "n-step returns are the multi-step target; td1 / td_lambda compute their own"),
    ),
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
        LossSpec(
            name="dqn-lean",
            backend="torchrl",
            factory="rlplug_dqn.torchrl_backend:make_lean_dqn_loss",
            terms=("loss",),
            doc="DQNLoss from plain tensors (no batch clone, no tensordict plumbing): upstream's values, parameters "
            "and keys; falls back to DQNLoss for TD(1)/TD(lambda)",
            describe="rlplug_dqn.torchrl_backend:describe_dqn_loss",
        ),
    ),
)

DISTRIBUTIONAL_RULES = tuple(r for r in DQN.rules if not set(r.fields) & set(DISTRIBUTIONAL_DROPS))
"""DQN's rules a distributional variant keeps: those about no hyperparameter it drops."""

plugin = AlgorithmPlugin(DQN, source="rlplug-dqn")
