"""GAIL on skrl: PPO's cell (``rlplug_ppo.skrl_backend``) whose update first trains the discriminator on the rollout
and gives the rollout the discriminator's rewards.

The models are PPO's policy and value and the ``discriminator`` (``make_discriminator``), which the agent does not own:
skrl would treat it as one of its models. The agent records each transition with a zero reward, so memory holds only
what skrl adds to it (its time-limit bootstrap, ``gamma * V(s')`` on truncated steps), and its ``update()`` adds the
discriminator's reward to each before PPO's update: the env's reward never reaches the learner. The discriminator's
loss is TorchRL's ``GAILLoss`` written out (``discriminator_terms``). Memory, the loss and the loop are PPO's.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from rlplug import Build
from rlplug.backends.skrl import (
    AdversarialImitation,
    AdversarialImitationTrainer,
    OnPolicyAgent,
    actor_critic_models,
    discriminator_terms,
    make_discriminator,
    rollout_agent_arguments,
)
from rlplug_ppo import skrl_backend as ppo
from rlplug_ppo.skrl_backend import build_memory, make_clip_loss  # noqa: F401 -- PPO's, unchanged
from skrl.agents.torch.ppo import PPO


def build_models(build: Build) -> dict[str, Any]:
    return {**actor_critic_models(build), "discriminator": make_discriminator(build)}


class LossDelegatingGAIL(OnPolicyAgent, PPO):
    """PPO's agent (``LossDelegatingPPO``) that stores no env reward and updates on the discriminator's."""

    imitation: AdversarialImitation
    discriminator_metrics: dict[str, float] = {}

    def record_transition(self, *, rewards: torch.Tensor, **transition: Any) -> None:
        super().record_transition(rewards=torch.zeros_like(rewards), **transition)

    def update(self, *, timestep: int, timesteps: int) -> None:
        memory = self.memory
        observations, actions = memory.get_tensor_by_name("observations"), memory.get_tensor_by_name("actions")
        self.discriminator_metrics = self.imitation.update(observations, actions)
        rewards = memory.get_tensor_by_name("rewards") + self.imitation.rewards(observations, actions)
        memory.set_tensor_by_name("rewards", rewards)
        super().update(timestep=timestep, timesteps=timesteps)


class SkrlGAILTrainer(AdversarialImitationTrainer, ppo.SkrlPPOTrainer):
    """PPO's trainer with the discriminator's training (``AdversarialImitation``) in the agent's update, its metrics
    logged and its state checkpointed (``AdversarialImitationTrainer``)."""

    agent_class = LossDelegatingGAIL
    recurrent_agent_class = None

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        s = build.settings
        loss = partial(discriminator_terms, gp_lambda=s["gp_lambda"] if s["use_grad_penalty"] else 0.0)
        self.imitation = self.agent.imitation = AdversarialImitation(build, build.models["discriminator"], loss)

    def make_agent(self, build: Build) -> LossDelegatingGAIL:
        arguments = rollout_agent_arguments(build)
        arguments["models"] = {role: model for role, model in build.models.items() if role != "discriminator"}
        return self.agent_class(cfg=self.agent_config(build), **arguments)

    def step(self) -> dict[str, float]:
        return {**super().step(), **self.agent.discriminator_metrics}


build_trainer = SkrlGAILTrainer
