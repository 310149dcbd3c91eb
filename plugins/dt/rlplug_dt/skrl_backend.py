"""Decision Transformer on skrl: the transformer as an skrl model, the dataset's segments, the loss, the agent, the trainer.

skrl has no DT and no offline path (reference §11): the policy is an skrl ``DeterministicMixin`` model around rlplug's
``DecisionTransformer``, memory is the dataset cut into segments (``trajectory_segments``), the agent is written on
skrl's ``Agent`` base with one update stage, ``policy``, stepped by AdamW under DT's linear warm-up, and each gradient
step asks the registered loss object (``build.loss``) for it. The maths is TorchRL's ``DTLoss``: ``loss_function``
between the transformer's actions and the segments' over every step and action element. Acting counts the target
return down (``ReturnConditionedActing``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import (
    OfflineLoopAgent,
    ReturnConditionedActing,
    SkrlOfflineTrainer,
    StagedLossAgent,
    UpdateStage,
    configure_threads,
    linear_warmup,
    make_decision_transformer,
    seed_skrl,
    trajectory_segments,
)
from skrl.agents.torch import Agent, AgentCfg
from skrl.models.torch import DeterministicMixin, Model

# ---- models -------------------------------------------------------------------------------------


class SequencePolicy(DeterministicMixin, Model):
    """rlplug's ``DecisionTransformer`` as an skrl model: ``compute`` reads a segment's ``observations``, ``actions``,
    ``returns_to_go`` and ``timesteps`` and returns the action predicted at every step."""

    def __init__(self, build: Build) -> None:
        Model.__init__(self, observation_space=build.observation_space, action_space=build.action_space, device=build.device)
        DeterministicMixin.__init__(self, clip_actions=False)
        self.transformer = make_decision_transformer(build)

    def compute(self, inputs: Mapping[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        return self.transformer(inputs["observations"], inputs["actions"], inputs["returns_to_go"], inputs["timesteps"]), {}


def build_models(build: Build) -> dict[str, Any]:
    """The policy, initialised from ``build.seed``."""
    configure_threads()
    seed_skrl(build.seed)
    return {"policy": SequencePolicy(build)}


# ---- memory -------------------------------------------------------------------------------------

build_memory = trajectory_segments  # the dataset's episodes as context_length-step segments with returns-to-go


# ---- loss ---------------------------------------------------------------------------------------

DISTANCES = {"l2": F.mse_loss, "l1": F.l1_loss, "smooth_l1": F.smooth_l1_loss}


class DTLoss:
    """DT's loss, one stage ("policy"): ``mean(distance(pi(segment), segment's actions))`` over steps and elements."""

    def __init__(self, loss_function: str = "l2") -> None:
        self.distance = DISTANCES[loss_function]

    def __call__(self, agent: DT, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        predicted, _ = agent.policy.compute(batch, role="policy")
        return {"loss": self.distance(predicted, batch["actions"])}


def make_dt_loss(build: Build) -> DTLoss:
    """The registered default loss ("dt") for dt/skrl."""
    return DTLoss(build.settings["loss_function"])


# ---- agent --------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class DT_CFG(AgentCfg):
    """Configuration of rlplug's skrl DT agent (skrl's ``XXX_CFG`` style)."""

    batch_size: int = 64
    learning_rate: float = 1e-4
    weight_decay: float = 1e-4
    warmup_steps: int = 1_000
    grad_norm_clip: float = 0.25
    mixed_precision: bool = False


class DT(OfflineLoopAgent, StagedLossAgent, Agent):
    """Decision Transformer on skrl's ``Agent`` base: role ``policy``, one stage ("policy") stepping ``policy_optimizer``
    (AdamW) with ``policy_scheduler`` (the warm-up); batches are segments of the memory (the segments' generator is
    checkpointed with the models)."""

    update_stages = (UpdateStage("policy"),)
    _tensors_names: list[str] = []

    def __init__(self, *, cfg: DT_CFG, **kwargs: Any) -> None:
        super().__init__(cfg=cfg, **kwargs)
        self.policy = self.models["policy"]
        self.policy_optimizer, self.policy_scheduler = self.make_optimizer(cfg)
        self.checkpoint_modules.update(policy=self.policy, policy_optimizer=self.policy_optimizer, segments=self.memory)

    def make_optimizer(self, cfg: DT_CFG) -> tuple[torch.optim.Optimizer, Any]:
        """AdamW (decoupled weight decay) as an Adam, so the trainer puts it on the recipe's optimizer_impl path, and
        DT's warm-up."""
        optimizer = torch.optim.Adam(self.policy.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay,
                                     decoupled_weight_decay=True)  # fmt: skip
        return optimizer, linear_warmup(optimizer, cfg.warmup_steps)

    def act(self, observations: torch.Tensor, states: torch.Tensor | None, *, timestep: int, timesteps: int) -> tuple[torch.Tensor, dict[str, Any]]:
        raise NotImplementedError("DT acts on its episode's history: the trainer's act_deterministic (ContextActing)")

    def sample_batch(self) -> dict[str, torch.Tensor]:
        """One batch of segments, named as skrl names a batch's tensors."""
        segment = self.memory.sample(self.cfg.batch_size)
        return {"observations": segment["observation"], "actions": segment["action"], "returns_to_go": segment["return_to_go"],
                "timesteps": segment["timestep"]}  # fmt: skip


def dt_cfg(build: Build, cfg_class: type[DT_CFG] = DT_CFG, **more: Any) -> DT_CFG:
    """``DT_CFG`` (or a derived agent's ``cfg_class`` with ``more``) from the settings; TensorBoard and checkpoint writes
    are rlplug's, so skrl's are off."""
    s = build.settings
    return cfg_class(batch_size=s["batch_size"], learning_rate=s["learning_rate"], weight_decay=s["weight_decay"],
                     warmup_steps=s["warmup_steps"], grad_norm_clip=s["grad_norm_clip"],
                     experiment={"write_interval": 0, "checkpoint_interval": 0}, **more)  # fmt: skip


# ---- trainer ------------------------------------------------------------------------------------


class SkrlDTTrainer(ReturnConditionedActing, SkrlOfflineTrainer):
    """rlplug's offline loop around the skrl ``DT`` agent; evaluation asks for the target return and counts it down."""

    agent_class = DT
    agent_config = staticmethod(dt_cfg)

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        self.acting = self.make_acting(self.agent.policy.transformer, build.memory)


build_trainer = SkrlDTTrainer
