"""TD3+BC on TorchRL: td3's models and target updater, ``torchrl.objectives.TD3BCLoss``, the offline loop.

What differs from td3's TorchRL backend: the dataset buffer instead of a replay buffer, TorchRL's own
``TD3BCLoss`` (TD3's critic loss; the actor loss ``-lambda * Q1(s, pi(s)) + MSE(pi(s), a)``), and
observations standardised with the dataset's fixed mean and std: each sampled batch, and the evaluated
and exported policy's input. One Adam with an actor and a critic parameter group stands for td3's two
optimisers (Adam is per parameter; the actor's parameters get no gradient on the critic-only steps).
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.torchrl import (ObservationStandardizer, TorchRLOfflineTrainer, UpdateStage, adam,
                                    dataset_buffer, describe_loss, lean_applies, observation_keys, standardised_observations)
from rlplug_td3.torchrl_backend import LeanTD3Critic, build_models, build_target_updater, lean_critic_loss, lean_policy_q1, make_td3_loss  # noqa: F401
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.objectives import TD3BCLoss

build_memory = dataset_buffer


class LeanTD3BCLoss(LeanTD3Critic, TD3BCLoss):
    """``TD3BCLoss`` from plain tensors: td3's lean critic term (``lean_critic_loss``), and the actor term
    ``-lambda * Q1(s, pi(s)) + MSE(pi(s), a)`` with ``lambda = alpha / mean |Q1|``, as upstream computes them."""

    def qvalue_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        return lean_critic_loss(self, tensordict) if lean_applies(self, tensordict) else super().qvalue_loss(tensordict)

    def actor_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        if not lean_applies(self, tensordict):
            return super().actor_loss(tensordict)
        action, q1 = lean_policy_q1(self, tensordict)
        bc_loss = nn.functional.mse_loss(action, tensordict.get(self.tensor_keys.action))
        lmbd = self.alpha / q1.abs().mean().detach()
        loss = (-lmbd * q1 + bc_loss).mean()
        return loss, {"state_action_value_actor": q1.detach(), "bc_loss": bc_loss.detach(), "lmbd": lmbd}


def make_td3bc_loss(build: Build, loss_class: type[TD3BCLoss] = TD3BCLoss) -> TD3BCLoss:
    """The registered loss "td3bc" (``loss_class``: "td3bc-lean"'s): ``TD3BCLoss``, constructed as td3's ``TD3Loss``,
    with ``alpha``."""
    loss = make_td3_loss(build, loss_class)
    loss.alpha = build.settings["alpha"]
    return loss


def make_lean_td3bc_loss(build: Build) -> LeanTD3BCLoss:
    """The default loss "td3bc-lean": ``LeanTD3BCLoss``, constructed as "td3bc"."""
    return make_td3bc_loss(build, LeanTD3BCLoss)


def describe_td3bc_loss() -> dict[str, Any]:
    return describe_loss(TD3BCLoss, value_estimator="td0")


class TorchRLTD3BCTrainer(TorchRLOfflineTrainer):
    """td3's cadence offline: the critic term on every gradient step, the actor term and the target update
    on every ``policy_delay``-th. Both stages step one Adam (a group each), so on a delayed step they
    step it once, on the sum of both terms: the actor term reads the critic before that step's update
    (td3's separate optimisers step the critic first)."""

    update_stages = (UpdateStage("critic", optimizer="adam"), UpdateStage("actor", every="policy_delay", optimizer="adam"))
    target_every = "policy_delay"

    def make_optimizers(self, build: Build) -> dict[str, torch.optim.Adam]:
        s, loss = build.settings, build.loss
        groups = [(loss.actor_network_params, s["actor_lr"]), (loss.qvalue_network_params, s["critic_lr"])]
        return {"adam": adam([{"params": list(p.values(True, True)), "lr": lr} for p, lr in groups], s["optimizer_impl"])}

    def policy_module(self, build: Build) -> nn.Module:
        actor, self.standardizer = build.models["actor"], None
        if build.settings["normalize_observations"] and standardised_observations(build) and len(observation_keys(build)) == 1:
            self.standardizer = ObservationStandardizer(self.memory[:]["observation"]).to(build.device)
            actor = TensorDictModule(nn.Sequential(self.standardizer, actor.module), actor.in_keys, actor.out_keys)
        return actor

    def sample_batch(self) -> TensorDict:
        sample = self.memory.sample()
        if self.standardizer is not None:
            for key in ("observation", ("next", "observation")):
                sample.set(key, self.standardizer(sample.get(key)))
        return sample

    def stage_terms(self, stage: str, sample: TensorDict) -> dict[str, torch.Tensor]:
        if stage == "critic":
            return {"loss_qvalue": self.loss.qvalue_loss(sample)[0]}
        loss_actor, info = self.loss.actor_loss(sample)
        return {"loss_actor": loss_actor, "bc_loss": info["bc_loss"], "lmbda": info["lmbd"]}


build_trainer = TorchRLTD3BCTrainer
