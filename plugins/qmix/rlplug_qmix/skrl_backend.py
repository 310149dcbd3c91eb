"""QMIX on skrl, from its parts: a team Q network (agents' Q networks + the mixer), DQN's agent, memory and loop.

skrl has no value-decomposition agent. A team of agents is one agent here (``SkrlTeamOffPolicyTrainer``: joint
observations ``[n_agents * obs_dim]``, joint actions ``[n_agents]``, the agents' mean reward), so skrl's DQN
(rlplug-dqn's loss-delegating one) stores, samples, copies the target network and checkpoints as it does for
one agent; what QMIX changes is the model (``TeamQNetwork``: Q(o_i, .) per agent and the mix of their chosen
values in one skrl model, so the target copy, Polyak updates and the optimiser cover the mixer too), acting
(epsilon-greedy per agent) and the loss (``QMIXLoss``: the TD error of the team's mixed value).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import SkrlTeamOffPolicyTrainer, configure_threads, mlp, seed_skrl, team_spaces
from rlplug_dqn.skrl_backend import LossDelegatingDQN, build_memory, build_target_updater, dqn_config  # noqa: F401 -- DQN's
from skrl.models.torch import DeterministicMixin, Model
from torch import nn

# ---- models -------------------------------------------------------------------------------------


class QMixingNetwork(nn.Module):
    """QMIX's mixer: the team's value from the agents' chosen values, monotonic in each (absolute weights) and
    conditioned on the global state through hypernetworks (Rashid et al. 2018; TorchRL's ``QMixer``, same layers)."""

    def __init__(self, state_size: int, embed_dim: int, n_agents: int) -> None:
        super().__init__()
        self.embed_dim, self.n_agents = embed_dim, n_agents
        self.hyper_w_1 = nn.Linear(state_size, embed_dim * n_agents)
        self.hyper_w_final = nn.Linear(state_size, embed_dim)
        self.hyper_b_1 = nn.Linear(state_size, embed_dim)
        self.V = nn.Sequential(nn.Linear(state_size, embed_dim), nn.ReLU(), nn.Linear(embed_dim, 1))

    def forward(self, chosen: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
        """``chosen [B, n_agents]``, ``states [B, state_size]`` -> ``[B, 1]``."""
        w1 = self.hyper_w_1(states).abs().view(-1, self.n_agents, self.embed_dim)
        hidden = F.elu(torch.bmm(chosen.view(-1, 1, self.n_agents), w1) + self.hyper_b_1(states).view(-1, 1, self.embed_dim))
        w_final = self.hyper_w_final(states).abs().view(-1, self.embed_dim, 1)
        return (torch.bmm(hidden, w_final) + self.V(states).view(-1, 1, 1)).view(-1, 1)


class TeamQNetwork(DeterministicMixin, Model):
    """Every agent's Q(o_i, .) (one network shared by all, or one each) and the mixer, as one skrl model over joint
    observations ``[B, n_agents * (mask_size + obs_dim)]``; the agents' observations side by side are the global
    state the mixer reads. ``compute`` gives ``[B, n_agents * n_actions]``, a masked agent's invalid actions at the
    dtype's lowest value (never the argmax, never the target's max). ``mixer = "vdn"`` sums the chosen values."""

    def __init__(self, observation_space: gym.Space, action_space: gym.spaces.MultiDiscrete, device: str, hidden_sizes: Sequence[int],
                 activation: str, share_parameters: bool, mixer: str, mixing_embed_dim: int, mask_size: int = 0) -> None:  # fmt: skip
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        DeterministicMixin.__init__(self, clip_actions=False)
        self.n_agents, self.n_actions, self.mask_size = len(action_space.nvec), int(action_space.nvec[0]), mask_size
        size = self.num_observations // self.n_agents - mask_size
        count = 1 if share_parameters else self.n_agents
        self.nets = nn.ModuleList([mlp(size, hidden_sizes, self.n_actions, activation) for _ in range(count)])
        self.mixer = QMixingNetwork(self.n_agents * size, mixing_embed_dim, self.n_agents) if mixer == "qmix" else None
        self.to(device)

    def split(self, observations: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor]:
        """``[B, n_agents * (mask_size + obs_dim)]`` -> (each agent's valid actions ``[B, n_agents, n_actions]`` or
        ``None``, its features ``[B, n_agents, obs_dim]``); no batch size baked in: exported graphs take any."""
        x = observations.unflatten(-1, (self.n_agents, -1))
        return (x[..., : self.mask_size] > 0.5 if self.mask_size else None), x[..., self.mask_size :]

    def agent_values(self, observations: torch.Tensor) -> torch.Tensor:
        """Joint observations -> each agent's Q(o_i, .), ``[B, n_agents, n_actions]`` (invalid actions lowest)."""
        valid, x = self.split(observations)
        if len(self.nets) == 1:
            values = self.nets[0](x)
        else:
            values = torch.stack([net(x[:, i]) for i, net in enumerate(self.nets)], dim=1)
        return values if valid is None else values.masked_fill(~valid, torch.finfo(values.dtype).min)

    def mix(self, chosen: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        """The team's value ``[B, 1]`` of the agents' chosen values ``[B, n_agents]``, the global state read from the
        joint observations (the agents' features, no masks)."""
        if self.mixer is None:
            return chosen.sum(dim=-1, keepdim=True)
        return self.mixer(chosen, self.split(observations)[1].flatten(-2))

    def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        return self.agent_values(inputs["observations"]).flatten(1), {}

    def greedy_actions(self, output: torch.Tensor) -> torch.Tensor:
        """``compute``'s output -> every agent's argmax, ``[B, n_agents]`` (acting, evaluation, export)."""
        return output.unflatten(-1, (self.n_agents, self.n_actions)).argmax(dim=-1)


def build_models(build: Build) -> dict[str, Any]:
    """Online and target team networks (skrl's DQN copies the online weights into the target and freezes it)."""
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    observation_space, action_space = team_spaces(build)
    args = (observation_space, action_space, build.device, s["hidden_sizes"], s["activation"], s["share_parameters"], s["mixer"],
            s["mixing_embed_dim"], build.extras["multiagent"].mask_size)  # fmt: skip
    return {"q_network": TeamQNetwork(*args), "target_q_network": TeamQNetwork(*args)}


# ---- loss ---------------------------------------------------------------------------------------


class QMIXLoss:
    """QMIX's TD loss on one sampled batch of joint transitions; one stage, ``"q"``.

    Target ``r + gamma * (1 - terminated) * mix'(max_a Q'_i(o'_i, a), s')`` from the target team network, without
    gradients; the loss is the MSE (or Huber) of ``mix(Q_i(o_i, a_i), s)`` against it. Returns ``loss_q``
    (optimised) and the batch means ``q_total`` and ``q_target`` (reported).
    """

    def __init__(self, discount_factor: float, td_loss: str = "mse") -> None:
        self.discount_factor = discount_factor
        self.td_loss = F.mse_loss if td_loss == "mse" else F.smooth_l1_loss

    def __call__(self, agent: LossDelegatingDQN, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        online, target = agent.q_network, agent.target_q_network
        observations, next_observations = batch["observations"], batch["next_observations"]
        with torch.no_grad():
            next_values = target.agent_values(next_observations).max(dim=-1).values
            not_terminated = batch["terminated"].logical_not()
            target_total = batch["rewards"] + self.discount_factor * not_terminated * target.mix(next_values, next_observations)
        chosen = online.agent_values(observations).gather(-1, batch["actions"].long().unsqueeze(-1)).squeeze(-1)
        total = online.mix(chosen, observations)
        return {"loss_q": self.td_loss(total, target_total), "q_total": total.detach().mean(), "q_target": target_total.mean()}


def make_qmix_loss(build: Build) -> QMIXLoss:
    """The registered default loss ("qmix") for qmix/skrl."""
    return QMIXLoss(build.settings["discount_factor"], build.settings["td_loss"])


# ---- agent --------------------------------------------------------------------------------------


class LossDelegatingQMIX(LossDelegatingDQN):
    """rlplug-dqn's skrl DQN over the team: its gradient step, memory, target updater and epsilon schedule;
    acting is epsilon-greedy for each agent apart (each draws its own coin and its own random action, among its
    valid actions where the env gives masks)."""

    def act(self, observations: torch.Tensor, states: torch.Tensor | None, *, timestep: int, timesteps: int) -> tuple[torch.Tensor, dict[str, Any]]:
        model = self.q_network
        output, outputs = model.act({"observations": self.observation_preprocessor(observations)}, role="q_network")
        greedy = model.greedy_actions(output)
        self.epsilon = self.cfg.exploration_scheduler(timestep, timesteps)
        explore = torch.rand(greedy.shape, device=greedy.device) < self.epsilon
        valid = model.split(observations)[0]
        if valid is None:
            random_actions = torch.randint(model.n_actions, greedy.shape, device=greedy.device)
        else:
            random_actions = torch.multinomial(valid.flatten(0, 1).float(), 1).view_as(greedy)
        return torch.where(explore, random_actions, greedy), outputs


# ---- trainer ------------------------------------------------------------------------------------


class SkrlQMIXTrainer(SkrlTeamOffPolicyTrainer):
    """The off-policy loop on the team (seeded warm-up, replay, ``utd_ratio`` gradient steps) around QMIX;
    evaluation and export take every agent's argmax."""

    agent_class = LossDelegatingQMIX
    agent_config = staticmethod(dqn_config)
    policy_role, policy_output = "q_network", "greedy_actions"

    def agent_kwargs(self, build: Build) -> dict[str, Any]:
        return {**super().agent_kwargs(build), "grad_norm_clip": build.settings["grad_norm_clip"]}


build_trainer = SkrlQMIXTrainer
