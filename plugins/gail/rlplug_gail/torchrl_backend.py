"""GAIL on TorchRL: PPO's cell (``rlplug_ppo.torchrl_backend``) whose rollout trains the discriminator and takes its
rewards before the advantages are computed.

The models are PPO's actor and critic and the ``discriminator`` (``make_discriminator``); the discriminator's loss is
TorchRL's ``GAILLoss`` (``gail_loss_terms``). After each rollout, ``compute_advantages`` first takes the
discriminator's steps on it, then overwrites ``("next", "reward")`` with the discriminator's rewards, then runs PPO's
GAE: the env's reward never reaches the learner (the training return was read from the batch before). Memory, the
loss and the loop are PPO's.
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.torchrl import (
    AdversarialImitation,
    AdversarialImitationTrainer,
    actor_critic_modules,
    gail_loss_terms,
    make_discriminator,
)
from rlplug_ppo import torchrl_backend as ppo
from rlplug_ppo.torchrl_backend import build_memory, describe_clip_loss, make_clip_loss  # noqa: F401 -- PPO's, unchanged
from tensordict import TensorDict


def build_models(build: Build) -> dict[str, Any]:
    return {**actor_critic_modules(build), "discriminator": make_discriminator(build)}


class TorchRLGAILTrainer(AdversarialImitationTrainer, ppo.TorchRLPPOTrainer):
    """PPO's trainer with the discriminator's training (``AdversarialImitation``) between a rollout and its advantages,
    its metrics logged and its state checkpointed (``AdversarialImitationTrainer``)."""

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        discriminator = build.models["discriminator"]
        self.imitation = AdversarialImitation(build, discriminator, gail_loss_terms(build, discriminator))
        self.discriminator_metrics: dict[str, float] = {}

    def compute_advantages(self, batch: TensorDict) -> None:
        observations, actions = batch[self.observation_key], batch[self.action_key]
        with torch.enable_grad():  # the trainer computes advantages without gradients
            self.discriminator_metrics = self.imitation.update(observations, actions)
        rewards = batch["next", "reward"]
        batch["next", "reward"] = self.imitation.rewards(observations, actions).reshape(rewards.shape).to(rewards.dtype)
        super().compute_advantages(batch)

    def update(self, batch: TensorDict, only_terms: tuple[str, ...] | None = None) -> dict[str, float]:
        return {**super().update(batch, only_terms), **self.discriminator_metrics}


build_trainer = TorchRLGAILTrainer
