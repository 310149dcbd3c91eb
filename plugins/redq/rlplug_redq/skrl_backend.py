"""REDQ on skrl: SAC's cell (``rlplug_sac.skrl_backend``) with ``n_critics`` critics and REDQ's loss.

Overridden: the models (SAC's, with ``n_critics`` critic roles), the loss (``REDQLoss``: two of ``SACLoss``'s
pieces) and the critics the trainer names. Memory, target updater, the loss-delegating agent, the entropy tuning
and the off-policy loop (``utd_ratio`` gradient steps per environment step) are SAC's.
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
    """SAC's policy and ``n_critics`` Q(s, a) critics, each with its target."""
    return sac.build_models(build, critic_roles(build))


class REDQLoss(sac.SACLoss):
    """SAC's staged loss over an ensemble, ``REDQLoss``'s math: the target reads ``subset`` target critics drawn at
    random (``torch.randperm``, sorted, as upstream) and takes their minimum; the policy ascends the mean of all
    the critics; each critic's distance is SAC's (averaged over the critics, as upstream's ``mean`` reduction)."""

    def __init__(self, subset: int) -> None:
        self.subset = subset

    def target_critics(self, agent: Any) -> list[str]:
        roles = sac.critic_roles(agent)
        chosen = torch.randperm(len(roles))[: self.subset].sort().values
        return [f"target_{roles[i]}" for i in chosen.tolist()]

    def policy_q(self, qs: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack(qs).mean(0)


def make_redq_loss(build: Build) -> REDQLoss:
    """The registered default loss ("redq") for redq/skrl."""
    return REDQLoss(build.settings["critic_subset"])


class SkrlREDQTrainer(sac.SkrlSACTrainer):
    """SAC's trainer over the build's ``n_critics`` critic roles."""

    def critics(self, build: Build) -> Sequence[str]:
        return critic_roles(build)


build_trainer = SkrlREDQTrainer
