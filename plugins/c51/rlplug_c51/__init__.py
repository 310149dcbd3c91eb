"""rlplug-c51: categorical distributional DQN (Bellemare et al. 2017) on skrl and TorchRL, derived from rlplug-dqn.

C51 is DQN whose network outputs, per action, a categorical distribution over ``n_atoms`` fixed returns evenly
spaced on ``[v_min, v_max]``: acting is greedy on the distributions' means, and the loss is the cross-entropy of
``Z(s, a)`` against the target distribution ``r + gamma * Z'(s', a')`` projected back onto the atoms. The next
action ``a'`` is greedy under the online network and its distribution read from the target network, as TorchRL's
``DistributionalDQNLoss`` computes it (Rainbow's double-Q form). The declaration is DQN's less double DQN, the TD
loss and TD(1)/TD(lambda), with the dueling head per atom, plus the support; the backends reuse DQN's cells and replace the Q
network and the loss. Cheap: no torch.
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin, LossSpec, Param, Rule, both_backends
from rlplug_dqn import DISTRIBUTIONAL_PARAMS, DISTRIBUTIONAL_RULES, DQN

from .settings import skrl_settings, torchrl_settings

PARAMS = DISTRIBUTIONAL_PARAMS + (
    Param("n_atoms", 51, "atoms of each action's return distribution (the paper's 51)", bounds="[2, 1024]",
          search=(21, 51, 101)),
    Param("v_min", -10.0, "the lowest return the atoms cover (the paper's Atari support [-10, 10])"),
    Param("v_max", 10.0, "the highest return the atoms cover; targets outside [v_min, v_max] are clipped onto it"),
)

C51 = replace(
    DQN,
    name="c51",
    summary="Categorical distributional DQN: per-action return distributions on fixed atoms, projected cross-entropy",
    backends=both_backends("rlplug_c51", ("discrete",), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    default_loss="c51",
    backend_default_losses={},
    rules=DISTRIBUTIONAL_RULES + (
        Rule(("v_min", "v_max"), "v_min < v_max", lambda hp, recipe: hp["v_min"] < hp["v_max"],
             "the atoms are spaced evenly from v_min up to v_max"),
    ),
    losses=(
        LossSpec(
            name="c51",
            backend="skrl",
            factory="rlplug_c51.skrl_backend:make_c51_loss",
            terms=("loss_q",),
            reported=("q_taken", "q_target"),
            doc="DistributionalDQNLoss's math on skrl, one stage 'q': cross-entropy of Z(s, a) against "
            "r + gamma * (1 - terminated) * Z'(s', argmax_a mean Z(s', a)) projected onto the atoms",
        ),
        LossSpec(
            name="c51",
            backend="torchrl",
            factory="rlplug_c51.torchrl_backend:make_c51_loss",
            terms=("loss",),
            doc="DistributionalDQNLoss with target parameters: the projected cross-entropy, the next action greedy "
            "under the online network (TD(0) or n-step targets)",
        ),
    ),
)

plugin = AlgorithmPlugin(C51, source="rlplug-c51")
