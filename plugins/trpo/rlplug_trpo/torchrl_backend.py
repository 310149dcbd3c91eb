"""TRPO on TorchRL, built from its parts (TorchRL has no TRPO): PPO's models and rollout buffer, ``PPOLoss``'s
unclipped surrogate and critic loss with a GAE estimator plus the mean KL from the collecting policy (``TRPOLoss``),
and the on-policy family's loop (``TorchRLRolloutTrainer``) whose update is one trust-region step of the actor on the
whole rollout (``trust_region_step``) followed by ``epochs`` passes of critic minibatches stepped with Adam.
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.torchrl import (
    TorchRLRolloutTrainer,
    TrustRegion,
    actor_critic_modules,
    describe_loss,
    rollout_buffer,
    trust_region_step,
)
from tensordict import TensorDictBase
from torchrl.objectives import PPOLoss, ValueEstimators

build_models = actor_critic_modules  # actor (Categorical or Gaussian) and critic MLPs
build_memory = rollout_buffer  # one batch; iterating it yields one pass of minibatches without replacement


class TRPOLoss(PPOLoss):
    """``PPOLoss`` (its ``loss_objective`` is ``-mean(A exp(log pi - log pi_old))``, unclipped) plus ``kl``: the mean
    KL from the policy that collected the batch, whose distribution's parameters the batch carries, to the current
    one, with its gradient (the trust-region step's Fisher products and its bound read it)."""

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = super().forward(tensordict)
        previous = self.actor_network.build_dist_from_params(tensordict)
        current = self.actor_network.get_dist(tensordict)
        out.set("kl", torch.distributions.kl_divergence(previous, current).mean())
        return out


def make_trpo_loss(build: Build) -> TRPOLoss:
    """The registered default loss ("trpo") for trpo/torchrl: no entropy term, an l2 critic loss, GAE; the trainer
    standardises the advantages once per rollout."""
    s = build.settings
    loss = TRPOLoss(build.models["actor"], build.models["critic"], entropy_bonus=False, critic_coeff=1.0,
                    loss_critic_type=s["loss_critic_type"], functional=False)  # fmt: skip
    loss.make_value_estimator(ValueEstimators.GAE, gamma=s["gamma"], lmbda=s["lmbda"], average_gae=False)
    return loss


def describe_trpo_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimator."""
    return describe_loss(TRPOLoss, value_estimator="GAE")


class TorchRLTRPOTrainer(TorchRLRolloutTrainer):
    """The family's loop; its Adam steps the critic only, the actor moves by the trust-region step."""

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        s = build.settings
        self.region = TrustRegion(s["max_kl"], s["cg_damping"], s["cg_steps"], s["line_search_steps"],
                                  s["line_search_shrink"], s["accept_ratio"])  # fmt: skip

    def optimised_parameters(self) -> Any:
        return self.critic.parameters()

    def compute_advantages(self, batch: TensorDictBase) -> None:
        super().compute_advantages(batch)
        self.actor.get_dist_params(batch)  # the collecting policy's distribution, stored with each transition

    def update(self, batch: TensorDictBase) -> dict[str, float]:
        rollout = batch.reshape(-1)

        def policy_terms() -> tuple[torch.Tensor, torch.Tensor]:
            out = self.loss(rollout)
            return out["loss_objective"], out["kl"]

        step = trust_region_step(self.actor.parameters(), policy_terms, self.region)
        metrics = super().update(batch, only_terms=("loss_critic",))
        return {**metrics, "loss/loss_objective": step.loss, "loss/kl": step.kl, "train/step_fraction": step.step_fraction}

    def logged_metrics(self) -> frozenset[str]:
        return super().logged_metrics() | {"train/step_fraction"}


build_trainer = TorchRLTRPOTrainer
