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
from rlplug.backends.torchrl import (
    ObservationStandardizer,
    TorchRLOfflineTrainer,
    adam,
    dataset_buffer,
    describe_loss,
    observation_keys,
    standardised_observations,
)
from rlplug_td3.torchrl_backend import build_models, build_target_updater, make_td3_loss  # noqa: F401 - td3's
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.objectives import TD3BCLoss

build_memory = dataset_buffer


def make_td3bc_loss(build: Build) -> TD3BCLoss:
    """The registered default loss ("td3bc"): ``TD3BCLoss``, constructed as td3's ``TD3Loss``, with ``alpha``."""
    loss = make_td3_loss(build, TD3BCLoss)
    loss.alpha = build.settings["alpha"]
    return loss


def describe_td3bc_loss() -> dict[str, Any]:
    return describe_loss(TD3BCLoss, value_estimator="td0")


class TorchRLTD3BCTrainer(TorchRLOfflineTrainer):
    """The offline step with td3's cadence: the critic term every step, the actor term and the target
    update every ``policy_delay``-th."""

    def make_optimizer(self, build: Build) -> torch.optim.Adam:
        s, loss = build.settings, build.loss
        groups = [(loss.actor_network_params, s["actor_lr"]), (loss.qvalue_network_params, s["critic_lr"])]
        return adam([{"params": list(p.values(True, True)), "lr": lr} for p, lr in groups], s["optimizer_impl"])

    def policy_module(self, build: Build) -> nn.Module:
        actor, self.keys = build.models["actor"], observation_keys(build)
        self.standardizer = None
        if build.settings["normalize_observations"] and standardised_observations(build) and len(self.keys) == 1:
            self.standardizer = ObservationStandardizer(self.memory[:]["observation"]).to(build.device)
            actor = TensorDictModule(nn.Sequential(self.standardizer, actor.module), actor.in_keys, actor.out_keys)
        return actor

    def loss_terms(self, sample: TensorDict) -> dict[str, torch.Tensor]:
        loss_qvalue, _ = self.loss.qvalue_loss(sample)
        if not self.delayed:
            return {"loss_qvalue": loss_qvalue}
        loss_actor, info = self.loss.actor_loss(sample)
        return {"loss_qvalue": loss_qvalue, "loss_actor": loss_actor, "bc_loss": info["bc_loss"], "lmbda": info["lmbd"]}

    def gradient_step(self) -> dict[str, torch.Tensor]:
        if "_optimise" not in self.__dict__:
            self._optimise = self.compiled(self.optimise)
        self.delayed = (self.updates + 1) % self.build.settings["policy_delay"] == 0
        sample = self.hooks.process_optim_batch(self.memory.sample())
        if self.standardizer is not None:
            for key in ("observation", ("next", "observation")):
                sample.set(key, self.standardizer(sample.get(key)))
        terms = self._optimise(sample)
        if self.delayed:
            self.target_updater.step()
        return terms


def build_trainer(build: Build) -> TorchRLTD3BCTrainer:
    return TorchRLTD3BCTrainer(build)
