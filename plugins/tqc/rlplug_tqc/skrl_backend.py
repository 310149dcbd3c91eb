"""TQC on skrl: SAC's cell (``rlplug_sac.skrl_backend``) with ``n_critics`` quantile critics and TQC's loss.

Overridden: the models (SAC's, with ``n_critics`` critics of ``n_quantiles`` outputs), the loss (``TQCLoss``:
three of ``SACLoss``'s pieces) and the critics the trainer names. Memory, target updater, the loss-delegating
agent (any number of critic roles), the entropy tuning and the off-policy loop are SAC's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from rlplug import Build
from rlplug_sac import skrl_backend as sac
from rlplug_sac.skrl_backend import build_memory, build_target_updater  # noqa: F401 -- SAC's


def critic_roles(build: Build) -> tuple[str, ...]:
    return tuple(f"critic_{i + 1}" for i in range(build.settings["n_critics"]))


def build_models(build: Build) -> dict[str, Any]:
    """SAC's policy and ``n_critics`` critics Z(s, a) of ``n_quantiles`` outputs, each with its target."""
    return sac.build_models(build, critic_roles(build), critic_outputs=build.settings["n_quantiles"])


class TQCLoss(sac.SACLoss):
    """SAC's staged loss with quantile critics, ``TQCLoss``'s math: the target pools the target critics' quantiles
    at (s', a'), sorts them and keeps all but the ``drop_per_net x n_critics`` highest; each critic's distance to it
    is the quantile Huber loss over every (quantile, kept atom) pair; the policy ascends the mean of all quantiles.
    SAC's ``critic`` averages the critics' losses (TorchRL's ``TQCLoss`` sums them: Adam's steps are the same up to
    its epsilon)."""

    def __init__(self, drop_per_net: int) -> None:
        self.drop_per_net = drop_per_net

    def target_q(self, target_qs: list[torch.Tensor]) -> torch.Tensor:
        atoms = torch.cat(target_qs, dim=-1).sort(dim=-1).values
        return atoms[:, : atoms.shape[-1] - self.drop_per_net * len(target_qs)]

    def policy_q(self, qs: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat(qs, dim=-1).mean(dim=-1, keepdim=True)

    def critic_distance(self, q: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        delta = target.unsqueeze(-2) - q.unsqueeze(-1)  # [B, quantiles, kept atoms]
        huber = torch.where(delta.abs() <= 1, 0.5 * delta.square(), delta.abs() - 0.5)
        fractions = (torch.arange(q.shape[-1], device=q.device, dtype=q.dtype) + 0.5) / q.shape[-1]
        return ((fractions.unsqueeze(-1) - (delta.detach() < 0).to(q.dtype)).abs() * huber).mean()


def make_tqc_loss(build: Build) -> TQCLoss:
    """The registered default loss ("tqc") for tqc/skrl."""
    return TQCLoss(build.settings["top_quantiles_to_drop_per_net"])


class SkrlTQCTrainer(sac.SkrlSACTrainer):
    """SAC's trainer over the build's ``n_critics`` critic roles."""

    def critics(self, build: Build) -> Sequence[str]:
        return critic_roles(build)


build_trainer = SkrlTQCTrainer
