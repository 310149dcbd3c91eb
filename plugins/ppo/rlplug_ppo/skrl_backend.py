"""PPO on skrl: models, rollout memory, the clipped loss, the agent that delegates to it, the trainer.

Reads top to bottom like a single-file PPO on skrl 2.1. The agent is skrl's own ``PPO`` with one
change: ``update()`` hands each minibatch to the registered loss object (``build.loss``) instead of
computing the loss inline, so a recipe can swap the loss without touching the loop. The default
loss, ``ClipLoss``, is skrl's math line for line. The update loop and the rollout trainer are the
on-policy family's (``OnPolicyAgent``, ``SkrlRolloutTrainer``), shared with MAPPO and A2C.

With ``recurrent`` set (``'lstm'`` or ``'gru'``), the policy and the value each read their observations
through an LSTM or GRU core of their own, and the agent is skrl's ``PPO_RNN`` with the same update
(``RecurrentOnPolicyAgent``): hidden states carried through the rollout and reset where an episode ended,
stored with each transition, replayed in sequences of ``sequence_length`` steps by the same loss.
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.skrl import (
    OnPolicyAgent,
    RecurrentOnPolicyAgent,
    SkrlRolloutTrainer,
    actor_critic_models,
    clipped_ppo_terms,
    rollout_memory,
)
from skrl.agents.torch.ppo import PPO, PPO_CFG, PPO_RNN
from skrl.memories.torch import RandomMemory

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """Separate policy (Categorical or Gaussian) and value MLPs, initialised from ``build.seed``; with
    ``recurrent``, each with its own LSTM or GRU core after the encoder."""
    return actor_critic_models(build)


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> RandomMemory:
    """One rollout: skrl's PPO needs ``memory_size == rollouts`` (unfilled rows are NaN)."""
    return rollout_memory(build)


# ---- loss ---------------------------------------------------------------------------------------


class ClipLoss:
    """skrl's PPO loss: clipped surrogate, (optionally clipped) scaled MSE value loss, entropy bonus.

    Called as ``loss(agent, batch, epoch)`` on one minibatch whose observations and states are
    already preprocessed; returns ``loss_policy``, ``loss_value`` and ``loss_entropy`` (summed and
    optimised) and ``approx_kl`` (reported; drives KL early stopping and ``KLAdaptiveLR``). The order
    of operations is upstream's, so the Gaussian policy's ``rsample`` draws the same random numbers.
    """

    def __init__(self, ratio_clip: float, value_clip: float, entropy_loss_scale: float, value_loss_scale: float) -> None:
        self.ratio_clip = ratio_clip
        self.value_clip = value_clip
        self.entropy_loss_scale = entropy_loss_scale
        self.value_loss_scale = value_loss_scale

    def __call__(self, agent: PPO, batch: dict[str, torch.Tensor], epoch: int) -> dict[str, torch.Tensor]:
        return clipped_ppo_terms(
            agent.policy, agent.value, batch, self.ratio_clip, self.value_clip, self.entropy_loss_scale, self.value_loss_scale
        )


def make_clip_loss(build: Build) -> ClipLoss:
    """The registered default loss ("clip") for ppo/skrl."""
    s = build.settings
    return ClipLoss(s["ratio_clip"], s["value_clip"], s["entropy_loss_scale"], s["value_loss_scale"])


# ---- agent --------------------------------------------------------------------------------------


class LossDelegatingPPO(OnPolicyAgent, PPO):
    """skrl's PPO whose ``update()`` asks ``loss(agent, batch, epoch)`` for the minibatch loss terms.

    Everything else is upstream's update (``OnPolicyAgent``): GAE, value preprocessing, epochs and
    minibatches, the observation preprocessor trained in epoch 0 only, KL early stopping, gradient
    clipping, the per-epoch scheduler step. ``terms`` are summed and optimised; ``terms`` and
    ``reported`` are tracked as ``"Loss / <term>"``, averaged over the optimised minibatches.
    """


class LossDelegatingRecurrentPPO(RecurrentOnPolicyAgent, PPO_RNN):
    """skrl's PPO_RNN with the same update and loss: minibatches of whole sequences, each replayed from the
    hidden states stored at its first step (``RecurrentOnPolicyAgent``)."""


# ---- trainer ------------------------------------------------------------------------------------


class SkrlPPOTrainer(SkrlRolloutTrainer):
    """One ``step()`` = one rollout of ``rollouts`` vector steps + the update; ``PPO_CFG`` from the settings."""

    agent_class = LossDelegatingPPO
    recurrent_agent_class = LossDelegatingRecurrentPPO
    config_class = PPO_CFG


build_trainer = SkrlPPOTrainer
