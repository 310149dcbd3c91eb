"""Online Decision Transformer on skrl: DT's skrl cell with a stochastic head, OnlineDTLoss's maths, the online phase.

The policy is DT's skrl model around a ``DecisionTransformer`` with a stochastic head (``stochastic`` in the settings):
a Gaussian squashed by tanh into the action bounds. The loss (one stage, "policy") is TorchRL's ``OnlineDTLoss``
written out: the negative log-likelihood of the segments' actions, an entropy bonus weighted by the temperature
``alpha``, and the temperature's own loss steering the entropy towards ``target_entropy``; the transformer and
``log_alpha`` share one AdamW as two parameter groups (the temperature without weight decay, warm-up or clip), so one
backward serves both. Memory is ``OnlineSegments``; the trainer plays an episode every ``online_round_updates``
updates once ``online_after`` are done (``OnlineFineTuning``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch
from rlplug import Build
from rlplug.backends.skrl import OnlineFineTuning, SquashedGaussian, UpdateStage, linear_warmup, online_segments
from torch import nn

from ..skrl_backend import DT, DT_CFG, SkrlDTTrainer, build_models, dt_cfg

__all__ = ["build_models", "build_memory", "make_odt_loss", "build_trainer"]

# ---- models: DT's (the transformer's head is stochastic by the settings) --------------------------

# ---- memory -------------------------------------------------------------------------------------

build_memory = online_segments  # the dataset's best episodes as segments, with room for the episodes played online


# ---- loss ---------------------------------------------------------------------------------------


def target_entropy(build: Build) -> float:
    """``target_entropy``: a number, or ``"auto"`` = -action_dim."""
    value = build.settings["target_entropy"]
    return -float(build.action_space.shape[0]) if value == "auto" else float(value)


class ODTLoss:
    """OnlineDTLoss's terms on a batch of segments, means over steps (one entropy sample per step, as its default)."""

    def __init__(self, target_entropy: float) -> None:
        self.target_entropy = target_entropy

    def __call__(self, agent: ODT, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        t = agent.policy.transformer
        loc, scale = t.distribution(batch["observations"], batch["actions"], batch["returns_to_go"], batch["timesteps"])
        policy = SquashedGaussian(loc, scale, t.centre, t.half_range)
        entropy = -policy.rsample_and_log_prob()[1]
        alpha = agent.temperature.log_alpha.exp()
        return {
            "loss_log_likelihood": -policy.log_prob(batch["actions"]).mean(),
            "loss_entropy": -(alpha.detach() * entropy).mean(),
            "loss_alpha": (alpha * (entropy - self.target_entropy).detach()).mean(),
            "alpha": alpha.detach(),
            "entropy": entropy.detach().mean(),
        }


def make_odt_loss(build: Build) -> ODTLoss:
    """The registered default loss ("odt") for odt/skrl."""
    return ODTLoss(target_entropy(build))


# ---- agent --------------------------------------------------------------------------------------


class Temperature(nn.Module):
    """``log_alpha`` as a module, so the agent checkpoints it with its models."""

    def __init__(self, initial_alpha: float) -> None:
        super().__init__()
        self.log_alpha = nn.Parameter(torch.tensor(math.log(initial_alpha)))


@dataclasses.dataclass(kw_only=True)
class ODT_CFG(DT_CFG):
    """DT's configuration and the temperature's."""

    initial_alpha: float = 0.1
    alpha_learning_rate: float = 1e-4


class ODT(DT):
    """DT's agent whose one optimiser also steps the temperature (its second parameter group)."""

    update_stages = (UpdateStage("policy", clip_groups=1),)  # the clip is the transformer's

    def make_optimizer(self, cfg: ODT_CFG) -> tuple[torch.optim.Optimizer, Any]:
        self.temperature = self.checkpoint_modules["temperature"] = Temperature(cfg.initial_alpha).to(self.device)
        groups = [{"params": list(self.policy.parameters())},
                  {"params": list(self.temperature.parameters()), "lr": cfg.alpha_learning_rate, "weight_decay": 0.0}]  # fmt: skip
        optimizer = torch.optim.Adam(groups, lr=cfg.learning_rate, weight_decay=cfg.weight_decay, decoupled_weight_decay=True)
        return optimizer, linear_warmup(optimizer, cfg.warmup_steps, groups=1)


def odt_cfg(build: Build) -> ODT_CFG:
    s = build.settings
    return dt_cfg(build, ODT_CFG, initial_alpha=s["initial_alpha"], alpha_learning_rate=s["alpha_learning_rate"])


# ---- trainer ------------------------------------------------------------------------------------


class SkrlODTTrainer(OnlineFineTuning, SkrlDTTrainer):
    """DT's skrl trainer with the online phase."""

    agent_class = ODT
    agent_config = staticmethod(odt_cfg)


build_trainer = SkrlODTTrainer
