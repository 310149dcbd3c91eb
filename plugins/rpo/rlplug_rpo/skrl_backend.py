"""RPO on skrl: PPO's cell (``rlplug_ppo.skrl_backend``) on skrl's own ``RPO`` agent.

skrl's ``RPO`` is ``PPO`` that hands ``alpha`` to its models, whose ``compute`` perturbs the mean. Overridden here:
the Gaussian policy (the perturbation, applied when the update evaluates taken actions, as CleanRL's RPO does; a
rollout samples from the unperturbed policy and evaluation acts on its mean) and the loss (PPO's terms with
``alpha`` among the policy's inputs, as upstream's update passes it). Memory and the update loop are PPO's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from rlplug import Build
from rlplug.backends.skrl import GaussianPolicy, OnPolicyAgent, actor_critic_models, clipped_ppo_terms
from rlplug_ppo import skrl_backend as ppo
from rlplug_ppo.skrl_backend import build_memory  # noqa: F401 -- PPO's, unchanged
from skrl.agents.torch.rpo import RPO, RPO_CFG


class PerturbedGaussianPolicy(GaussianPolicy):
    """The Gaussian policy whose mean moves by ``U(-alpha, alpha)`` when its inputs carry ``alpha`` and taken actions."""

    def compute(self, inputs: Mapping[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        mean, outputs = super().compute(inputs, role)
        if "alpha" in inputs and "taken_actions" in inputs:
            mean = mean + torch.empty_like(mean).uniform_(-inputs["alpha"], inputs["alpha"])
        return mean, outputs


def build_models(build: Build) -> dict[str, Any]:
    return actor_critic_models(build, gaussian_class=PerturbedGaussianPolicy)


class RPOLoss(ppo.ClipLoss):
    """skrl's RPO loss: PPO's clipped terms, the policy given ``alpha`` as skrl's ``RPO.update`` gives it."""

    def __init__(self, alpha: float, *args: float) -> None:
        super().__init__(*args)
        self.alpha = alpha

    def __call__(self, agent: RPO, batch: dict[str, torch.Tensor], epoch: int) -> dict[str, torch.Tensor]:
        return clipped_ppo_terms(agent.policy, agent.value, batch, self.ratio_clip, self.value_clip, self.entropy_loss_scale,
                                 self.value_loss_scale, policy_inputs={"alpha": self.alpha})  # fmt: skip


def make_rpo_loss(build: Build) -> RPOLoss:
    """The registered default loss ("rpo") for rpo/skrl."""
    s = build.settings
    return RPOLoss(s["alpha"], s["ratio_clip"], s["value_clip"], s["entropy_loss_scale"], s["value_loss_scale"])


class LossDelegatingRPO(OnPolicyAgent, RPO):
    """skrl's RPO whose ``update()`` asks the registered loss for each minibatch's terms (PPO's update)."""


class SkrlRPOTrainer(ppo.SkrlPPOTrainer):
    agent_class = LossDelegatingRPO
    recurrent_agent_class = None
    config_class = RPO_CFG


build_trainer = SkrlRPOTrainer
