"""QMIX on TorchRL: per-agent Q networks, TorchRL's ``QMixer`` / ``VDNMixer``, ``QMixerLoss``, DQN's loop on the team.

Reads top to bottom like TorchRL's own ``multiagent/qmix_vdn.py`` example: a ``MultiAgentMLP`` gives every
agent's action values and a ``QValueModule`` its greedy action and chosen value; the mixer maps the chosen values
(and, for QMIX, the global state: every agent's observation) to the team's value; ``QMixerLoss`` keeps target
parameters of both and regresses the team's value on the TD(0) target of the team's reward (the agents' mean,
written by ``TorchRLTeamOffPolicyTrainer``). Collection, epsilon-greedy annealing, Adam, gradient clipping and the
target updater are rlplug-dqn's TorchRL trainer, pointed at the agent group.
"""

from __future__ import annotations

from typing import Any

from rlplug import Build
from rlplug.backends.torchrl import (
    TorchRLTeamOffPolicyTrainer,
    agent_group,
    agent_mlp,
    configure_threads,
    group_observation_key,
    seed_everything,
    team_mask_key,
)
from rlplug_dqn.torchrl_backend import TorchRLDQNTrainer, build_memory, build_target_updater  # noqa: F401 -- DQN's
from rlplug.families import LinearSchedule
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn
from torchrl.data import Categorical
from torchrl.modules import EGreedyModule, QValueModule
from torchrl.modules.models.multiagent import QMixer, VDNMixer
from torchrl.objectives import ValueEstimators
from torchrl.objectives.multiagent import QMixerLoss

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """``q_network``: each agent's Q(o_i, .) (shared or per-agent weights), its argmax and chosen value;
    ``mixer``: ``QMixer`` on the global state (every agent's observation) or ``VDNMixer``. ``QMixerLoss`` keeps
    the target parameters of both."""
    configure_threads()
    seed_everything(build.seed)
    s, spaces, group = build.settings, build.extras["multiagent"], agent_group(build.env_id)
    n_actions, observation = int(spaces.action_space.n), group_observation_key(spaces, group)
    values = agent_mlp(spaces, n_actions, s["hidden_sizes"], s["activation"], False, s["share_parameters"])
    q_network = TensorDictSequential(
        TensorDictModule(values, in_keys=[observation], out_keys=[(group, "action_value")]),
        QValueModule(action_space="categorical", action_value_key=(group, "action_value"), action_mask_key=team_mask_key(build),
                     out_keys=[(group, "action"), (group, "action_value"), (group, "chosen_action_value")]),
    )  # fmt: skip
    if s["mixer"] == "qmix":
        state_shape = (spaces.n_agents, *spaces.feature_space.shape)
        mixer = TensorDictModule(QMixer(state_shape, s["mixing_embed_dim"], spaces.n_agents, build.device),
                                 in_keys=[(group, "chosen_action_value"), observation], out_keys=["chosen_action_value"])
    else:
        mixer = TensorDictModule(VDNMixer(spaces.n_agents, build.device), in_keys=[(group, "chosen_action_value")],
                                 out_keys=["chosen_action_value"])  # fmt: skip
    return {"q_network": q_network.to(build.device), "mixer": mixer.to(build.device)}


# ---- loss ---------------------------------------------------------------------------------------


def make_qmix_loss(build: Build) -> QMixerLoss:
    """The registered default loss ("qmix") for qmix/torchrl: ``QMixerLoss`` with target parameters, the group's
    keys, the team's reward and done at the root, and a TD(0) estimator."""
    s, group = build.settings, agent_group(build.env_id)
    loss = QMixerLoss(build.models["q_network"], build.models["mixer"], loss_function=s["loss_function"], delay_value=True,
                      action_space="categorical")  # fmt: skip
    loss.set_keys(action_value=(group, "action_value"), local_value=(group, "chosen_action_value"),
                  global_value="chosen_action_value", action=(group, "action"))  # fmt: skip
    loss.make_value_estimator(ValueEstimators.TD0, gamma=s["gamma"])
    return loss


# ---- trainer ------------------------------------------------------------------------------------


class TorchRLQMIXTrainer(TorchRLTeamOffPolicyTrainer, TorchRLDQNTrainer):
    """DQN's TorchRL trainer on the team: Adam over the loss's parameters (agents' networks and mixer), the target
    update, epsilon-greedy with every agent's coin and random action its own, annealed per collected batch."""

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        if self.masked_warmup:  # the first batch is the warm-up's too
            self.egreedy.eps.fill_(1.0)

    def make_exploration_policy(self, build: Build) -> nn.Module:
        s, spaces = build.settings, build.extras["multiagent"]
        self.epsilon, self.epsilon_per_step = LinearSchedule(s["eps_init"], s["eps_end"], s["annealing_num_steps"]), False
        self.egreedy = EGreedyModule(
            spec=Categorical(int(spaces.action_space.n), shape=(spaces.n_agents,), device=build.device),
            eps_init=float(s["eps_init"]),
            eps_end=float(s["eps_end"]),
            annealing_num_steps=max(1, s["annealing_num_steps"]),
            action_key=(self.group, "action"),
            action_mask_key=team_mask_key(build),  # random actions among each agent's valid ones
        ).to(build.device)
        return TensorDictSequential(self.policy, self.egreedy)

    def after_batch(self, frames: int) -> None:
        """DQN's epsilon; during a masked env's warm-up 1, uniformly random among the valid actions
        (``masked_warmup``: the collector's own random actions would ignore the masks)."""
        super().after_batch(frames)
        if self.masked_warmup and self.env_steps < self.learning_starts:
            self.egreedy.eps.fill_(1.0)


build_trainer = TorchRLQMIXTrainer
