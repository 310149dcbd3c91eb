"""TD3+BC on skrl: td3's models, loss, target updater and agent, trained offline from the dataset.

What differs from td3's skrl backend: the dataset memory instead of a replay memory, the policy
stage of the loss (``-lambda * Q1(s, pi(s)) + MSE(pi(s), a)``), the agent's observation preprocessor
(the dataset's fixed mean and std, applied to sampled batches, evaluation and export as skrl applies
any preprocessor), and rlplug's offline loop instead of the environment-stepping one.
"""

from __future__ import annotations

import logging

import skrl
import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import ObservationStandardizer, SkrlOfflineTrainer, dataset_memory, standardised_observations
from rlplug_td3.skrl_backend import LossDelegatingTD3, TD3Loss, agent_config, make_td3_loss
from rlplug_td3.skrl_backend import build_models, build_target_updater  # noqa: F401 - td3's, unchanged

build_memory = dataset_memory


class TD3BCLoss(TD3Loss):
    """td3's staged loss; the "policy" stage adds behaviour cloning, with the Q term scaled by
    ``lambda = alpha / mean|Q1(s, pi(s))|`` (detached) so ``alpha`` means the same whatever the return scale."""

    alpha = 2.5

    def policy(self, agent: LossDelegatingTD3, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        actions, _ = agent.policy.act(inputs, role="policy")
        q1, _ = agent.critic_1.act({**inputs, "taken_actions": actions}, role="critic_1")
        lmbda = self.alpha / q1.abs().mean().detach()
        bc_loss = F.mse_loss(actions, batch["actions"])
        return {"loss_policy": -lmbda * q1.mean() + bc_loss, "bc_loss": bc_loss.detach(), "lmbda": lmbda}


def make_td3bc_loss(build: Build) -> TD3BCLoss:
    """The registered default loss ("td3bc") for td3bc/skrl."""
    loss = make_td3_loss(build, TD3BCLoss)
    loss.alpha = build.settings["alpha"]
    return loss


class SkrlTD3BCTrainer(SkrlOfflineTrainer):
    """rlplug's offline loop around td3's agent; acting and export are td3's (noiseless policy, preprocessor first)."""

    agent_class = LossDelegatingTD3
    agent_config = staticmethod(agent_config)
    policy_output = "output"

    def make_agent(self, build: Build) -> LossDelegatingTD3:
        level = skrl.logger.level
        skrl.logger.setLevel(logging.ERROR)  # skrl's TD3 warns that it has no exploration noise: offline it needs none
        try:
            agent = super().make_agent(build)
        finally:
            skrl.logger.setLevel(level)
        if build.settings["normalize_observations"] and standardised_observations(build):
            agent.observation_preprocessor = ObservationStandardizer(build.memory.tensors["observations"]).to(build.device)
        return agent


build_trainer = SkrlTD3BCTrainer
