"""rlplug-qmix: QMIX (Rashid et al. 2018) and VDN (Sunehag et al. 2018) on skrl and TorchRL, derived from rlplug-dqn.

Value decomposition for cooperative agents: every agent acts greedily on its own Q(o_i, .) (one network shared
by all agents, or one each), and one TD loss trains them through the team's value, a mix of the agents' chosen
values: a monotonic hypernetwork conditioned on the global state (``mixer = "qmix"``) or their sum (``"vdn"``).
Transitions are joint (every agent's observation and action of one env step, the agents' mean reward), so the
declaration is DQN's (epsilon-greedy, replay, target network, the TD loss) less the single-agent switches, plus
the mixer. Environments are MAPPO's multi-agent ids with Discrete actions (``mpe:NAME`` with
``continuous_actions = false``, ``vmas:NAME``, ``pz:MODULE:FACTORY``). Cheap: no torch.
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin, LossSpec, Param, both_backends
from rlplug_dqn import DQN
from rlplug_dqn import PARAMS as DQN_PARAMS

from .settings import DROPPED, skrl_settings, torchrl_settings

PARAMS = tuple(p for p in DQN_PARAMS if p.name not in DROPPED) + (
    Param("mixer", "qmix", "how the agents' chosen values make the team's: 'qmix' (a monotonic mixing network whose "
          "weights a hypernetwork computes from the global state) or 'vdn' (their sum)", choices=("qmix", "vdn")),
    Param("mixing_embed_dim", 32, "hidden width of QMIX's mixing network (and of its hypernetworks' outputs)",
          bounds="[1, 4096]", search=(16, 32, 64)),
    Param("share_parameters", True, "one Q network shared by all agents (false: one per agent)"),
)

QMIX = replace(
    DQN,
    name="qmix",
    summary="QMIX / VDN: per-agent Q networks trained through a monotonic mix (or the sum) of their values",
    kind="multi-agent",
    backends=both_backends("rlplug_qmix", ("discrete",), skrl_settings, torchrl_settings, action_masks=True),
    params=PARAMS,
    default_loss="qmix",
    backend_default_losses={},
    rules=tuple(r for r in DQN.rules if not set(r.fields) & set(DROPPED)),
    losses=(
        LossSpec(
            name="qmix",
            backend="skrl",
            factory="rlplug_qmix.skrl_backend:make_qmix_loss",
            terms=("loss_q",),
            reported=("q_total", "q_target"),
            doc="QMIX's TD loss, one stage 'q': MSE or Huber of mix(Q_i(o_i, a_i), s) against "
            "r + gamma * (1 - terminated) * mix'(max_a Q'_i(o'_i, a), s') with the target networks",
        ),
        LossSpec(
            name="qmix",
            backend="torchrl",
            factory="rlplug_qmix.torchrl_backend:make_qmix_loss",
            terms=("loss",),
            doc="torchrl.objectives.multiagent.QMixerLoss over a QMixer or VDNMixer, with target parameters and a TD(0) estimator",
        ),
    ),
)

plugin = AlgorithmPlugin(QMIX, source="rlplug-qmix")
