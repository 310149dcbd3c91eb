"""RPO on TorchRL: PPO's cell (``rlplug_ppo.torchrl_backend``) with the actor's mean perturbed inside the loss.

The actor is PPO's with one module after its network, ``MeanPerturbation``, which adds ``U(-alpha, alpha)`` to the
Gaussian's mean while the loss runs (``RPOLoss.forward``, on upstream's path and on the lean one alike) and is the
identity otherwise: rollouts sample from the unperturbed policy, evaluation and export act on its mean, as in CleanRL's
RPO and the skrl cell. Memory, the estimator and the loop are PPO's.
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.torchrl import actor_critic_modules
from rlplug_ppo import torchrl_backend as ppo
from rlplug_ppo.torchrl_backend import build_memory, build_trainer, describe_clip_loss  # noqa: F401 -- PPO's, unchanged
from torch import nn


class MeanPerturbation(nn.Module):
    """``mean + U(-alpha, alpha)`` while ``active`` (the loss's forward), the mean itself otherwise."""

    def __init__(self, alpha: float) -> None:
        super().__init__()
        self.alpha = float(alpha)
        self.active = False

    def forward(self, mean: torch.Tensor) -> torch.Tensor:
        if not self.active:
            return mean
        return mean + torch.empty_like(mean).uniform_(-self.alpha, self.alpha)


def build_models(build: Build) -> dict[str, Any]:
    return actor_critic_modules(build, actor_output=MeanPerturbation(build.settings["alpha"]))


class RPOLoss(ppo.SettingsClipPPOLoss):
    """PPO's ``ClipPPOLoss`` whose forward evaluates the taken actions under the perturbed mean."""

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        perturbations = [m for m in self.actor_network.modules() if isinstance(m, MeanPerturbation)]
        for module in perturbations:
            module.active = True
        try:
            return super().forward(*args, **kwargs)
        finally:
            for module in perturbations:
                module.active = False


def make_rpo_loss(build: Build) -> RPOLoss:
    """The registered default loss ("rpo") for rpo/torchrl: PPO's factory with ``RPOLoss``."""
    return ppo.make_clip_loss(build, RPOLoss)
