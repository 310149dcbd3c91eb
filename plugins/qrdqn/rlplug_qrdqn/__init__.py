"""rlplug-qrdqn: quantile regression DQN (Dabney et al. 2018) on skrl and TorchRL, derived from rlplug-dqn.

QR-DQN is DQN whose network outputs ``n_quantiles`` quantiles of the return per action instead of its mean:
acting is greedy on the quantiles' mean, and the loss is the quantile Huber loss (kappa 1) against the
target network's quantiles of the action that is greedy on their mean (sb3-contrib's ``QRDQN``). The
declaration is DQN's less the TD loss and TD(1)/TD(lambda), with the dueling head per quantile and a
double-Q switch, plus ``n_quantiles``; the backends reuse DQN's cells and replace the Q network and the loss. Cheap: no torch.
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin, LossSpec, Param, both_backends
from rlplug_dqn import DISTRIBUTIONAL_PARAMS, DISTRIBUTIONAL_RULES, DQN

from .settings import skrl_settings, torchrl_settings

PARAMS = DISTRIBUTIONAL_PARAMS + (
    Param("double_dqn", False, "double Q: the online network's mean picks the next action, the target network's "
          "quantiles value it (sb3-contrib's QR-DQN: the target network picks)", search=(False, True)),
    Param("n_quantiles", 50, "quantiles of the return each action's output holds (sb3-contrib's default 50)",
          bounds="[1, 1024]", search=(25, 50, 100, 200)),
)

QRDQN = replace(
    DQN,
    name="qrdqn",
    summary="Quantile regression DQN: per-action return quantiles, quantile Huber loss, greedy on their mean",
    backends=both_backends("rlplug_qrdqn", ("discrete",), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    default_loss="qrdqn",
    backend_default_losses={},
    rules=DISTRIBUTIONAL_RULES,
    losses=(
        LossSpec(
            name="qrdqn",
            backend="skrl",
            factory="rlplug_qrdqn.skrl_backend:make_qrdqn_loss",
            terms=("loss_q",),
            reported=("q_taken", "q_target"),
            doc="sb3-contrib's QR-DQN math, one stage 'q': quantile Huber loss (kappa 1, summed over the "
            "predicted quantiles) of Z(s, a) against r + gamma * (1 - terminated) * Z'(s', argmax mean Z'(s', .))",
        ),
        LossSpec(
            name="qrdqn",
            backend="torchrl",
            factory="rlplug_qrdqn.torchrl_backend:make_qrdqn_loss",
            terms=("loss",),
            doc="QRDQNLoss (rlplug's LossModule; TorchRL 0.14 has none): sb3-contrib's quantile Huber loss "
            "with target parameters, TD(0) or n-step targets",
        ),
    ),
)

plugin = AlgorithmPlugin(QRDQN, source="rlplug-qrdqn")
