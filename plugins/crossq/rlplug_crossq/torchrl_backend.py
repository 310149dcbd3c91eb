"""CrossQ on TorchRL: SAC's cell (``rlplug_sac.torchrl_backend``) with batch-renormalised critics and ``CrossQLoss``.

Overridden: the models (SAC's actor and ``n_critics`` critics, each MLP with a ``BatchRenorm`` before every linear
layer), the loss (upstream's ``CrossQLoss``: no target parameters, so no target updater) and the trainer's stages:
``qvalue_loss`` every gradient step, ``actor_loss`` and ``alpha_loss`` every ``policy_delay``-th, each stage with its
own Adam. Replay and collection are SAC's, TD(0) only.
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.torchrl import UpdateStage, adam, describe_loss, set_value_estimator, with_batch_renorm
from rlplug_sac import torchrl_backend as sac
from rlplug_sac.torchrl_backend import build_memory  # noqa: F401 -- SAC's
from tensordict import TensorDict
from torchrl.objectives import CrossQLoss


def build_models(build: Build) -> dict[str, Any]:
    """SAC's ``TanhNormal`` actor and ``n_critics`` Q(s, a) critics whose MLP heads carry batch renormalisation."""
    models = sac.build_models(build)
    for critic in models["critics"]:
        inner = critic.module  # ``_Concat`` (its ``net``) or an ``EncodedNet`` (its ``head``) of the MLP head
        name = "head" if hasattr(inner, "head") else "net"
        setattr(inner, name, with_batch_renorm(getattr(inner, name), **build.settings["batch_renorm"]))
    return models


def make_crossq_loss(build: Build) -> CrossQLoss:
    """The registered default loss ("crossq") for crossq/torchrl: upstream's ``CrossQLoss`` over the critics, TD(0)."""
    loss = CrossQLoss(**sac.sac_loss_arguments(build), loss_function=build.settings["loss_function"])
    set_value_estimator(loss, build.settings)
    return loss


def describe_crossq_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimator."""
    return describe_loss(CrossQLoss, value_estimator="td0")


def trainable(params: Any) -> list[torch.Tensor]:
    """A loss's parameters of one network, less its buffers (the critics' running statistics)."""
    return [p for p in params.values(True, True) if p.requires_grad]


class TorchRLCrossQTrainer(sac.TorchRLSACTrainer):
    """SAC's loop with CrossQ's cadence: the critics' Adam every gradient step, the actor's (with log alpha's group)
    every ``policy_delay``-th, clipping the actor's group only; the actor's and critics' groups take ``adam_betas``."""

    update_stages = (UpdateStage("critic"), UpdateStage("actor", every="policy_delay", clip_groups=1))

    def make_optimizers(self, build: Build) -> dict[str, torch.optim.Adam]:
        s, loss = build.settings, build.loss
        betas = tuple(s["adam_betas"])
        actor = [{"params": trainable(loss.actor_network_params), "lr": s["actor_lr"], "betas": betas}]
        if not s["fixed_alpha"]:  # alpha's group keeps torch's betas, as sb3-contrib's own Adam for it
            actor.append({"params": [loss.log_alpha], "lr": s["alpha_lr"]})
        return {"critic": adam(trainable(loss.qvalue_network_params), s["optimizer_impl"], lr=s["critic_lr"], betas=betas),
                "actor": adam(actor, s["optimizer_impl"])}  # fmt: skip

    def stage_terms(self, stage: str, sample: TensorDict) -> dict[str, torch.Tensor]:
        if stage == "critic":
            return {"loss_qvalue": self.loss.qvalue_loss(sample)[0]}
        loss_actor, metadata = self.loss.actor_loss(sample)
        log_prob = metadata["log_prob"]
        return {"loss_actor": loss_actor, "loss_alpha": self.loss.alpha_loss(log_prob, sample),
                "alpha": self.loss.log_alpha.detach().exp(), "entropy": -log_prob.mean()}  # fmt: skip


build_trainer = TorchRLCrossQTrainer
