"""IQL for Discrete actions on skrl, and the skrl backend module iql's declaration names: a Box build goes to
``skrl_backend`` unchanged, a Discrete one gets the cell below (issue 49).

Discrete IQL is TorchRL's ``DiscreteIQLLoss`` maths on ``skrl_backend``'s agent (same roles, same three
stages and optimisers): the two critics and their targets are Q(s, .) networks read at the dataset's
action, the policy is a categorical one whose log-probability of the dataset's action the advantage weights
multiply, and evaluation acts with the argmax of its logits.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import configure_threads, hard_copy, observation_encoder, q_model, seed_skrl, stochastic_policy, value_model

from . import skrl_backend as box


def is_discrete(build: Build) -> bool:
    return isinstance(build.action_space, gym.spaces.Discrete)


def discrete_models(build: Build) -> dict[str, Any]:
    """A categorical policy, V(s), two Q(s, .) critics and their targets (started equal), from ``build.seed``."""
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    encoder = lambda: observation_encoder(build)  # noqa: E731 - each network gets its own copy
    models = {"policy": stochastic_policy(*args, encoder=encoder()), "value": value_model(*args, encoder=encoder())}
    for role in ("critic_1", "critic_2", "target_critic_1", "target_critic_2"):
        models[role] = q_model(*args, encoder=encoder())
    hard_copy(models["target_critic_1"], models["critic_1"])
    hard_copy(models["target_critic_2"], models["critic_2"])
    return models


def _chosen(model: Any, observations: torch.Tensor, actions: torch.Tensor, role: str) -> torch.Tensor:
    """Q(s, a) of the dataset's actions from a Q(s, .) model, ``[B, 1]``."""
    q_values, _ = model.compute({"observations": observations}, role=role)
    return q_values.gather(-1, actions.long().reshape(-1, 1))


class DiscreteIQLLoss(box.IQLLoss):
    """``box.IQLLoss``'s three stages over Discrete actions (``DiscreteIQLLoss``'s maths): Q values gathered at
    the dataset's action, ``log pi(a|s)`` from the categorical policy's logits."""

    def value(self, agent: Any, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        observations, actions = batch["observations"], batch["actions"]
        with torch.no_grad():
            batch["target_q"] = torch.min(_chosen(agent.target_critic_1, observations, actions, "target_critic_1"),
                                          _chosen(agent.target_critic_2, observations, actions, "target_critic_2"))  # fmt: skip
        value, _ = agent.value.act({"observations": observations}, role="value")
        difference = batch["target_q"] - value
        weight = torch.where(difference > 0, agent.cfg.expectile, 1.0 - agent.cfg.expectile)
        return {"loss_value": (weight * difference.pow(2)).mean()}

    def critic(self, agent: Any, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        with torch.no_grad():
            next_value, _ = agent.value.act({"observations": batch["next_observations"]}, role="value")
            target = batch["rewards"] + agent.cfg.discount_factor * batch["terminated"].logical_not() * next_value
        q1 = _chosen(agent.critic_1, batch["observations"], batch["actions"], "critic_1")
        q2 = _chosen(agent.critic_2, batch["observations"], batch["actions"], "critic_2")
        loss = F.mse_loss(q1, target, reduction="none") + F.mse_loss(q2, target, reduction="none")
        return {"loss_critic": loss.mean()}

    def policy(self, agent: Any, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        with torch.no_grad():
            value, _ = agent.value.act({"observations": batch["observations"]}, role="value")
            weight = torch.exp(agent.cfg.temperature * (batch["target_q"] - value)).clamp_max(self.max_weight)
        logits, _ = agent.policy.compute({"observations": batch["observations"]}, role="policy")
        log_prob = torch.log_softmax(logits, -1).gather(-1, batch["actions"].long().reshape(-1, 1))
        return {"loss_policy": -(weight * log_prob).mean(), "entropy": -log_prob.detach().mean()}


class SkrlDiscreteIQLTrainer(box.SkrlIQLTrainer):
    """``box.SkrlIQLTrainer``; evaluation acts with the argmax of the policy's logits."""

    policy_output = "mean_or_argmax"


# ---- what the plugin dispatches to: Box builds to skrl_backend, Discrete ones to the cell above ----------


def build_models(build: Build) -> dict[str, Any]:
    return discrete_models(build) if is_discrete(build) else box.build_models(build)


build_memory = box.build_memory
build_target_updater = box.build_target_updater  # the same roles: critic_1/2 and their targets


def make_iql_loss(build: Build) -> box.IQLLoss:
    """The registered default loss ("iql") for iql/skrl: Box or Discrete."""
    return DiscreteIQLLoss() if is_discrete(build) else box.make_iql_loss(build)


def build_trainer(build: Build) -> box.SkrlIQLTrainer:
    return SkrlDiscreteIQLTrainer(build) if is_discrete(build) else box.build_trainer(build)
