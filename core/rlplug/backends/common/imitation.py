"""Adversarial imitation (GAIL) as both backends run it: a discriminator between the demonstrations'
(observation, action) pairs and the policy's, trained on each rollout, whose output becomes the policy's reward.

The policy learner is PPO's cell unchanged; between a rollout and its advantages, ``AdversarialImitation.update``
takes ``discriminator_steps`` gradient steps on minibatches of the rollout against as many demonstrated pairs,
then ``rewards`` relabels every transition of the rollout with ``-log(1 - D(s, a) + 1e-8)`` (TorchRL's GAIL example;
Ho and Ermon's cost as a reward). The env's reward never reaches the learner; the training and evaluation returns
rlplug reports are still the env's, so the metric is the imitating policy's true return.

The discriminator's loss is a callable ``loss(discriminator, expert_obs, expert_act, policy_obs, policy_act)``
returning a dict whose ``"loss"`` is optimised: ``discriminator_terms`` on skrl (written from TorchRL's formula),
TorchRL's own ``GAILLoss`` on TorchRL (``rlplug.backends.torchrl.gail_loss_terms``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ...contract.hookspecs import Build
from ...errors import SpaceError
from .nets import mlp
from .offline import ObservationStandardizer, dataset_transitions

REWARD_EPS = 1e-8
"""Inside the log of ``-log(1 - D + eps)``: a discriminator certain of a pair gives 18.4, not infinity."""


class Discriminator(nn.Module):
    """``D(s, a)``: the probability that a pair is demonstrated, ``sigmoid(MLP([standardised s, a]))``.

    Observations are standardised with the demonstrations' fixed statistics. ``action_features`` turns actions into
    the network's input: one-hot for a discrete space, clipped to the bounds for a continuous one (the env acted on
    the clipped action, and an unclipped Gaussian sample would give the policy away by its range alone).
    ``forward(observation, action)`` takes features, so TorchRL's ``GAILLoss`` can interpolate them for its penalty.
    """

    def __init__(self, observation_space: Any, action_space: Any, hidden_sizes: Sequence[int], activation: str,
                 demonstrated_observations: torch.Tensor) -> None:  # fmt: skip
        super().__init__()
        if not isinstance(observation_space, gym.spaces.Box):
            raise SpaceError(f"the GAIL discriminator reads flat observation vectors (a Box space), not {observation_space}")
        self.standardizer = ObservationStandardizer(demonstrated_observations)
        self.categories = int(action_space.n) if isinstance(action_space, gym.spaces.Discrete) else 0
        if not self.categories:
            self.register_buffer("low", torch.as_tensor(action_space.low, dtype=torch.float32).reshape(-1))
            self.register_buffer("high", torch.as_tensor(action_space.high, dtype=torch.float32).reshape(-1))
        action_size = self.categories or int(np.prod(action_space.shape))
        self.net = mlp(int(np.prod(observation_space.shape)) + action_size, hidden_sizes, 1, activation)

    def action_features(self, actions: torch.Tensor) -> torch.Tensor:
        if self.categories:
            return F.one_hot(actions.reshape(-1).long(), self.categories).float()
        return torch.maximum(torch.minimum(actions.reshape(len(actions), -1).float(), self.high), self.low)

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        features = self.standardizer(observation.reshape(len(observation), -1).float())
        return torch.sigmoid(self.net(torch.cat([features, action], -1)))


def discriminator_terms(discriminator: nn.Module, expert_obs: torch.Tensor, expert_act: torch.Tensor, policy_obs: torch.Tensor,
                        policy_act: torch.Tensor, gp_lambda: float = 0.0) -> dict[str, torch.Tensor]:  # fmt: skip
    """TorchRL's ``GAILLoss`` written out: binary cross-entropy of demonstrated pairs against 1 and the policy's against
    0, summed per row and averaged; with ``gp_lambda`` its gradient penalty ``gp_lambda * mean((|grad D(x~)| - 1)^2)``
    at ``x~`` mixed element by element with uniform weights (drawn observations first, as upstream draws them)."""
    expert = discriminator(expert_obs, expert_act)
    policy = discriminator(policy_obs, policy_act)
    loss = F.binary_cross_entropy(expert, torch.ones_like(expert), reduction="none") + F.binary_cross_entropy(
        policy, torch.zeros_like(policy), reduction="none"
    )
    terms = {}
    if gp_lambda:
        obs_noise = torch.rand(expert_obs.shape).to(expert_obs.device)
        act_noise = torch.rand(expert_act.shape).to(expert_act.device)
        obs_mix = (obs_noise * policy_obs + (1 - obs_noise) * expert_obs).requires_grad_(True)
        act_mix = (act_noise * policy_act + (1 - act_noise) * expert_act).requires_grad_(True)
        mixed = discriminator(obs_mix, act_mix)
        grads = torch.autograd.grad(mixed, (obs_mix, act_mix), torch.ones_like(mixed), create_graph=True)
        gp_loss = gp_lambda * ((torch.linalg.norm(torch.cat(grads, -1), dim=-1) - 1) ** 2).mean()
        loss = loss + gp_loss
        terms["gp_loss"] = gp_loss.detach()
    return {"loss": loss.mean(), **terms}


DiscriminatorLoss = Callable[[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], Mapping[str, torch.Tensor]]


class AdversarialImitation:
    """The discriminator's training on each rollout and the rewards it gives (see the module's docstring).

    Demonstrated pairs and rollout rows are drawn with replacement from a generator of its own, seeded from the run's
    seed and saved in ``state_dict`` with the discriminator and its Adam, so a resumed run draws what it would have.
    """

    def __init__(self, build: Build, discriminator: Discriminator, loss: DiscriminatorLoss) -> None:
        s = build.settings
        self.discriminator, self.loss = discriminator, loss
        _, data = dataset_transitions(build)
        self.expert_obs = data["observation"].to(build.device)
        self.expert_act = discriminator.action_features(data["action"].to(build.device))
        self.optimizer = torch.optim.Adam(discriminator.parameters(), lr=s["discriminator_lr"])
        self.steps, self.batch_size = int(s["discriminator_steps"]), int(s["discriminator_batch_size"])
        self.generator = torch.Generator().manual_seed(build.seed)

    def update(self, observations: torch.Tensor, actions: torch.Tensor) -> dict[str, float]:
        """``discriminator_steps`` gradient steps on the rollout's rows (any leading shape) against demonstrations;
        the metrics: the mean loss and how demonstrated the two kinds of pairs look to the updated discriminator."""
        obs = observations.reshape(-1, *self.expert_obs.shape[1:])
        act = self.discriminator.action_features(actions.reshape(len(obs), -1))
        losses = []
        for _ in range(self.steps):
            rows = torch.randint(len(obs), (self.batch_size,), generator=self.generator).to(obs.device)
            demos = torch.randint(len(self.expert_obs), (self.batch_size,), generator=self.generator).to(obs.device)
            terms = self.loss(self.discriminator, self.expert_obs[demos], self.expert_act[demos], obs[rows], act[rows])
            self.optimizer.zero_grad(set_to_none=True)
            terms["loss"].backward()
            self.optimizer.step()
            losses.append(terms["loss"].detach())
        with torch.no_grad():
            policy = self.discriminator(obs, act).mean()
            expert = self.discriminator(self.expert_obs[demos], self.expert_act[demos]).mean()
        return {"loss/discriminator": torch.stack(losses).mean().item(), "train/expert_probability": expert.item(),
                "train/policy_probability": policy.item()}  # fmt: skip

    @torch.no_grad()
    def rewards(self, observations: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``-log(1 - D(s, a) + 1e-8)`` for each row, shaped ``[rows..., 1]`` like the rows' leading shape."""
        lead = observations.shape[: observations.dim() - len(self.expert_obs.shape[1:])]
        obs = observations.reshape(-1, *self.expert_obs.shape[1:])
        probability = self.discriminator(obs, self.discriminator.action_features(actions.reshape(len(obs), -1)))
        return (-torch.log(1 - probability + REWARD_EPS)).reshape(*lead, 1)

    METRICS = frozenset({"loss/discriminator", "train/expert_probability", "train/policy_probability"})

    def state_dict(self) -> dict[str, Any]:
        return {"discriminator": self.discriminator.state_dict(), "optimizer": self.optimizer.state_dict(),
                "generator": self.generator.get_state()}  # fmt: skip

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.discriminator.load_state_dict(state["discriminator"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])


def make_discriminator(build: Build) -> Discriminator:
    """The recipe's discriminator (``discriminator_hidden_sizes``, the policy's ``activation``) over the dataset's
    observations' statistics, on the build's device."""
    s = build.settings
    _, data = dataset_transitions(build)
    return Discriminator(build.observation_space, build.action_space, s["discriminator_hidden_sizes"], s["activation"],
                         data["observation"]).to(build.device)  # fmt: skip


class AdversarialImitationTrainer:
    """What a GAIL trainer adds to its on-policy base, on either backend (mixed in before it): the cell sets
    ``imitation`` (an ``AdversarialImitation``); its metrics are logged and its state is part of the checkpoint."""

    imitation: AdversarialImitation

    def logged_metrics(self) -> frozenset[str]:
        return super().logged_metrics() | AdversarialImitation.METRICS

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "imitation": self.imitation.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.imitation.load_state_dict(state["imitation"])
