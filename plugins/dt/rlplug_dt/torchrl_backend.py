"""Decision Transformer on TorchRL: the transformer as an actor, the dataset's segments, ``DTLoss``, the offline trainer.

Reads top to bottom like a single-file DT on TorchRL 0.14: rlplug's ``DecisionTransformer`` (TorchRL's own wraps Hugging
Face's GPT-2) is a ``TensorDictModule`` reading a segment's ``observation``, ``action``, ``return_to_go`` and
``timestep`` and writing ``action_pred``; ``torchrl.objectives.DTLoss`` compares it with the segment's ``action``. Each
gradient step samples segments (``trajectory_segments``) and steps one AdamW, under DT's linear warm-up, on
``loss``. Acting counts the target return down (``ReturnConditionedActing``).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from rlplug import Build
from rlplug.backends.torchrl import (
    SEGMENT_KEYS,
    ReturnConditionedActing,
    TorchRLOfflineTrainer,
    adam,
    configure_threads,
    describe_loss,
    linear_warmup,
    make_decision_transformer,
    seed_everything,
    trajectory_segments,
)
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.objectives import DTLoss

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """``{"actor"}``: the transformer over a segment's keys, writing ``action_pred``; initialised from ``build.seed``."""
    configure_threads()
    seed_everything(build.seed)
    return {"actor": TensorDictModule(make_decision_transformer(build), in_keys=list(SEGMENT_KEYS), out_keys=["action_pred"])}


# ---- memory -------------------------------------------------------------------------------------

build_memory = trajectory_segments  # the dataset's episodes as context_length-step segments with returns-to-go


# ---- loss ---------------------------------------------------------------------------------------


def make_dt_loss(build: Build) -> DTLoss:
    """The registered default loss ("dt") for dt/torchrl: ``DTLoss`` on the actor's ``action_pred``."""
    with warnings.catch_warnings():
        # upstream's convert_to_functional registers a target_actor_network_params DTLoss does not annotate (harmless)
        warnings.filterwarnings("ignore", message="The name target_actor_network_params", category=UserWarning)
        loss = DTLoss(build.models["actor"], loss_function=build.settings["loss_function"])
    loss.set_keys(action_pred="action_pred")
    return loss


def describe_dt_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts (no value estimator)."""
    return describe_loss(DTLoss, value_estimator="none")


# ---- trainer ------------------------------------------------------------------------------------


class TorchRLDTTrainer(ReturnConditionedActing, TorchRLOfflineTrainer):
    """The core's offline step on segments (``loss``, clipped to ``grad_norm_clip``, one AdamW step, the warm-up);
    evaluation asks for the target return and counts it down; the segments' generator is checkpointed."""

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        self.acting = self.make_acting(self.transformer(build), self.memory)

    def transformer(self, build: Build) -> nn.Module:
        """The ``DecisionTransformer`` the actor runs (acting reads it directly)."""
        return build.models["actor"].module

    def make_optimizers(self, build: Build) -> dict[str, torch.optim.Optimizer]:
        s = build.settings
        params = list(build.loss.actor_network_params.values(True, True))
        return {"update": adam(params, s["optimizer_impl"], lr=s["learning_rate"], weight_decay=s["weight_decay"],
                               decoupled_weight_decay=True)}  # fmt: skip

    def make_lr_schedulers(self, build: Build, optimizers: dict[str, torch.optim.Optimizer]) -> dict[str, Any]:
        return {"update": linear_warmup(optimizers["update"], build.settings["warmup_steps"])}

    def sample_batch(self) -> TensorDict:
        segment = self.memory.sample(self.build.settings["batch_size"])
        return TensorDict(segment, batch_size=segment["timestep"].shape)

    def policy_module(self, build: Build) -> nn.Module:
        return build.models["actor"]

    def module_state(self) -> dict[str, Any]:
        return {**super().module_state(), "segments": self.memory.state_dict()}

    def load_module_state(self, state: dict[str, Any]) -> None:
        super().load_module_state(state)
        self.memory.load_state_dict(state["segments"])


build_trainer = TorchRLDTTrainer
