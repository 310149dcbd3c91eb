"""A2C on skrl: models, rollout memory, the A2C loss, skrl's own ``A2C`` agent delegating to it, the trainer.

The agent is skrl's ``A2C`` with the on-policy family's ``OnPolicyAgent`` mixed in, as PPO's is: its ``update()``
is upstream's (GAE, the value preprocessor, one pass of ``mini_batches``, gradient clipping, the scheduler) with each
minibatch's terms asked of the registered loss. ``normalize_advantage = false`` keeps GAE's advantages as they are
(skrl always standardises them); ``optimizer = "rmsprop"`` replaces the agent's Adam (``SkrlRolloutTrainer``).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import OnPolicyAgent, SkrlRolloutTrainer, actor_critic_models, rollout_memory
from skrl.agents.torch.a2c import A2C, A2C_CFG

build_models = actor_critic_models  # policy (Categorical or Gaussian) and value MLPs
build_memory = rollout_memory  # one rollout: skrl's A2C needs memory_size == rollouts


class A2CLoss:
    """skrl's A2C minibatch loss: ``-mean(A log pi(a|s))``, ``value_loss_scale`` x MSE value loss, entropy bonus.

    Upstream's order of operations, so a Gaussian policy's ``rsample`` draws the same random numbers; with
    ``value_loss_scale = 1`` it is upstream's loss exactly. ``approx_kl`` is reported (skrl's A2C computes it for
    ``KLAdaptiveLR``): how far the policy moved from the one that collected the rollout.
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


class LossDelegatingA2C(OnPolicyAgent, A2C):
    """skrl's A2C whose ``update()`` asks ``loss(agent, batch, epoch)`` for each minibatch's loss terms."""

    normalize_advantage = True


class SkrlA2CTrainer(SkrlRolloutTrainer):
    """One ``step()`` = one rollout of ``rollouts`` vector steps + the update; ``A2C_CFG`` from the settings."""

    agent_class = LossDelegatingA2C
    config_class = A2C_CFG

    def make_agent(self, build: Build) -> Any:
        agent = super().make_agent(build)
        agent.normalize_advantage = build.settings["normalize_advantage"]
        return agent


build_trainer = SkrlA2CTrainer
