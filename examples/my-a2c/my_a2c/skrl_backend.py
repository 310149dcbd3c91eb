"""A2C on skrl, top to bottom: models, memory, loss, agent, trainer.

The agent is skrl's own ``A2C`` (``skrl.agents.torch.a2c``) with one change, made by mixing in the
on-policy family's ``OnPolicyAgent``: ``update()`` hands each minibatch to the registered loss object
(``build.loss``) instead of computing the loss inline. Everything else is upstream's: GAE with
advantages standardised over the rollout, the value preprocessor, one pass of ``mini_batches``
minibatches, gradient-norm clipping. The trainer is the family's ``SkrlRolloutTrainer``: one
iteration is one rollout of ``rollout_steps`` vector steps, then the update.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import (
    OnPolicyAgent,
    SkrlRolloutTrainer,
    actor_critic_models,
    rollout_agent_arguments,
    rollout_config,
    rollout_memory,
)
from skrl.agents.torch.a2c import A2C, A2C_CFG
from skrl.memories.torch import RandomMemory

# ---- models ---------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """``policy`` (Categorical or Gaussian) and ``value`` MLPs, initialised from ``build.seed``."""
    return actor_critic_models(build)


# ---- memory ---------------------------------------------------------------------------------------


def build_memory(build: Build) -> RandomMemory:
    """One rollout: skrl's A2C needs ``memory_size == rollouts``."""
    return rollout_memory(build)


# ---- loss -----------------------------------------------------------------------------------------


class A2CLoss:
    """skrl's A2C loss: ``-mean(A log pi(a|s))``, scaled MSE value loss, entropy bonus.

    Called as ``loss(agent, batch, epoch)`` on one minibatch (observations already preprocessed,
    ``advantages`` standardised over the rollout by skrl's GAE). Upstream's order of operations, so
    a Gaussian policy's ``rsample`` draws the same random numbers; with ``value_loss_scale = 1`` it is
    upstream's loss exactly (skrl's A2C does not scale its value loss). ``approx_kl`` is reported: how
    far the policy moved from the one that collected the rollout.
    """

    def __init__(self, entropy_loss_scale: float, value_loss_scale: float) -> None:
        self.entropy_loss_scale = entropy_loss_scale
        self.value_loss_scale = value_loss_scale

    def __call__(self, agent: A2C, batch: dict[str, torch.Tensor], epoch: int) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        _, outputs = agent.policy.act({**inputs, "taken_actions": batch["actions"]}, role="policy")
        log_prob = outputs["log_prob"]
        with torch.no_grad():
            log_ratio = log_prob - batch["log_prob"]
            approx_kl = ((torch.exp(log_ratio) - 1) - log_ratio).mean()
        if self.entropy_loss_scale:
            loss_entropy = -self.entropy_loss_scale * agent.policy.get_entropy(role="policy").mean()
        else:
            loss_entropy = torch.zeros((), device=log_prob.device)
        loss_policy = -(batch["advantages"] * log_prob).mean()
        predicted_values, _ = agent.value.act(inputs, role="value")
        loss_value = self.value_loss_scale * F.mse_loss(batch["returns"], predicted_values)
        return {"loss_policy": loss_policy, "loss_value": loss_value, "loss_entropy": loss_entropy, "approx_kl": approx_kl}


def make_a2c_loss(build: Build) -> A2CLoss:
    """The registered default loss ("a2c") for a2c/skrl."""
    return A2CLoss(build.settings["entropy_loss_scale"], build.settings["value_loss_scale"])


# ---- agent ----------------------------------------------------------------------------------------


class LossDelegatingA2C(OnPolicyAgent, A2C):
    """skrl's A2C whose ``update()`` asks ``loss(agent, batch, epoch)`` for each minibatch's loss terms."""


# ---- trainer --------------------------------------------------------------------------------------


class SkrlA2CTrainer(SkrlRolloutTrainer):
    """One ``step()`` = one rollout of ``rollouts`` vector steps + the update; ``A2C_CFG`` from the settings."""

    def make_agent(self, build: Build) -> LossDelegatingA2C:
        return LossDelegatingA2C(cfg=rollout_config(build, A2C_CFG), **rollout_agent_arguments(build))


def build_trainer(build: Build) -> SkrlA2CTrainer:
    return SkrlA2CTrainer(build)
