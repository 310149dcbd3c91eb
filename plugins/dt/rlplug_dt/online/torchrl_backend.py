"""Online Decision Transformer on TorchRL: DT's TorchRL cell with a ``TanhNormal`` actor, ``OnlineDTLoss``, the online phase.

The transformer's stochastic head (``stochastic`` in the settings) writes ``loc`` and ``scale`` from a segment's keys; a
``ProbabilisticActor`` squashes that Gaussian into the action bounds (``TanhNormal`` with ``low`` and ``high``), and
``torchrl.objectives.OnlineDTLoss`` scores the segments' actions under it (log-likelihood, entropy bonus, the temperature's
loss). The transformer and the loss's ``log_alpha`` share one AdamW as two parameter groups (the temperature without
weight decay, warm-up or clip), so one backward serves all three terms. Memory is ``OnlineSegments``; the trainer plays
an episode every ``online_round_updates`` updates once ``online_after`` are done (``OnlineFineTuning``).
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.torchrl import (
    SEGMENT_KEYS,
    OnlineFineTuning,
    UpdateStage,
    adam,
    configure_threads,
    describe_loss,
    linear_warmup,
    make_decision_transformer,
    online_segments,
    seed_everything,
)
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.modules import ProbabilisticActor, TanhNormal
from torchrl.objectives import OnlineDTLoss

from ..torchrl_backend import TorchRLDTTrainer

# ---- models -------------------------------------------------------------------------------------


class LocScale(nn.Module):
    """The transformer's stochastic head as a module of the segment's keys: ``(loc, scale)`` at every step."""

    def __init__(self, transformer: nn.Module) -> None:
        super().__init__()
        self.transformer = transformer

    def forward(self, *segment: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.transformer.distribution(*segment)


def build_models(build: Build) -> dict[str, Any]:
    """``{"actor"}``: a ``TanhNormal`` over the transformer's ``loc`` and ``scale``; initialised from ``build.seed``."""
    configure_threads()
    seed_everything(build.seed)
    head = TensorDictModule(LocScale(make_decision_transformer(build)), in_keys=list(SEGMENT_KEYS), out_keys=["loc", "scale"])
    low, high = (torch.as_tensor(bound, dtype=torch.float32, device=build.device) for bound in (build.action_space.low, build.action_space.high))
    actor = ProbabilisticActor(head, in_keys=["loc", "scale"], out_keys=["action_pred"], distribution_class=TanhNormal,
                               distribution_kwargs={"low": low, "high": high})  # fmt: skip
    return {"actor": actor}


# ---- memory -------------------------------------------------------------------------------------

build_memory = online_segments  # the dataset's best episodes as segments, with room for the episodes played online


# ---- loss ---------------------------------------------------------------------------------------


def make_odt_loss(build: Build) -> OnlineDTLoss:
    """The registered default loss ("odt") for odt/torchrl: ``OnlineDTLoss`` scoring the segments' ``action``."""
    s = build.settings
    entropy = -float(build.action_space.shape[0]) if s["target_entropy"] == "auto" else float(s["target_entropy"])
    return OnlineDTLoss(build.models["actor"], alpha_init=s["initial_alpha"], target_entropy=entropy)


def describe_odt_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts (no value estimator)."""
    return describe_loss(OnlineDTLoss, value_estimator="none")


# ---- trainer ------------------------------------------------------------------------------------


class TorchRLODTTrainer(OnlineFineTuning, TorchRLDTTrainer):
    """DT's TorchRL trainer with the temperature in its AdamW and the online phase."""

    update_stages = (UpdateStage("update", clip_groups=1),)  # the clip is the transformer's

    def transformer(self, build: Build) -> nn.Module:
        return build.models["actor"].module[0].module.transformer

    def make_optimizers(self, build: Build) -> dict[str, torch.optim.Optimizer]:
        s = build.settings
        groups = [{"params": list(build.loss.actor_network_params.values(True, True))},
                  {"params": [build.loss.log_alpha], "lr": s["alpha_learning_rate"], "weight_decay": 0.0}]  # fmt: skip
        return {"update": adam(groups, s["optimizer_impl"], lr=s["learning_rate"], weight_decay=s["weight_decay"], decoupled_weight_decay=True)}

    def make_lr_schedulers(self, build: Build, optimizers: dict[str, torch.optim.Optimizer]) -> dict[str, Any]:
        return {"update": linear_warmup(optimizers["update"], build.settings["warmup_steps"], groups=1)}


build_trainer = TorchRLODTTrainer
