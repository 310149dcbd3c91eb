"""gSDE, generalised state-dependent exploration (Raffin, Kober & Stulp 2022), for both backends' Gaussian policies.

The policy's action is ``mean(s) + z(s) @ M``: ``z(s)`` the policy network's last hidden features (out of autograd,
as SB3's default ``learn_features = False``) and ``M`` a ``[features, actions]`` matrix of independent
``N(0, sigma_ij^2)`` entries, ``sigma = exp(log_std)`` learned. While collecting, each env keeps its ``M`` for
``period`` vector steps, so its exploration is a smooth function of the state rather than fresh noise at every
step (what lets SAC find MountainCar's flag); the losses read the policy's marginal distribution instead,
``N(mean(s), sigma(s)^2)`` with ``sigma_j(s)^2 = sum_i z_i(s)^2 sigma_ij^2`` (SB3's ``StateDependentNoiseDistribution``,
``full_std``; ``expln`` optional). SB3 reparameterises its loss samples through one shared ``M`` per gradient step;
here each sample draws from that marginal (the same distribution, independent draws).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from ...errors import RlplugError

VARIANCE_EPSILON = 1e-6
"""Added to the marginal variance before its square root (SB3's ``epsilon``): a zero feature vector keeps a scale."""


class StateDependentNoise(nn.Module):
    """The learned ``log_std`` (``[features, actions]``) and each env's exploration matrix.

    ``period``: vector steps between draws of the matrices (the recipe's ``sde_sample_freq``, or once per rollout).
    The matrices and the step count are buffers, so a checkpoint resumes mid-period with the same noise; they change
    in place (a loss holding the policy's tensors sees the same ones).
    """

    def __init__(self, features: int, actions: int, initial_log_std: float, period: int, num_envs: int, expln: bool = False) -> None:
        super().__init__()
        self.log_std = nn.Parameter(torch.full((features, actions), float(initial_log_std)))
        self.period = max(1, int(period))
        self.expln = expln
        self.register_buffer("matrices", torch.zeros(num_envs, features, actions))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.active = False

    def weight_std(self) -> torch.Tensor:
        """Each noise weight's std: ``exp(log_std)``, or with ``expln`` the gSDE paper's ``exp`` below 0 and
        ``log1p + 1`` above (it cannot vanish and grows slowly; SB3's ``use_expln``)."""
        if not self.expln:
            return self.log_std.exp()
        positive = self.log_std > 0
        above = torch.log1p(self.log_std * positive + VARIANCE_EPSILON) + 1.0
        return torch.where(positive, above, self.log_std.exp())

    def std(self, latent: torch.Tensor) -> torch.Tensor:
        """The marginal standard deviation of each action at features ``latent`` (``[..., actions]``)."""
        variance = latent.detach().square() @ self.weight_std().square()
        return torch.sqrt(variance + VARIANCE_EPSILON)

    def noise(self, latent: torch.Tensor) -> torch.Tensor:
        """One collection step's noise ``z(s_e) @ M_e`` for the ``[num_envs, features]`` features, drawing new
        matrices every ``period`` calls (the first call draws)."""
        if len(latent) != len(self.matrices):
            raise ValueError(f"gSDE keeps one exploration matrix per env ({len(self.matrices)}), got a batch of {len(latent)}")
        with torch.no_grad():
            if int(self.steps) % self.period == 0:
                self.matrices.copy_(torch.randn_like(self.matrices) * self.weight_std())
            self.steps += 1
        return torch.bmm(latent.detach().unsqueeze(1), self.matrices).squeeze(1)

    @contextmanager
    def collecting(self) -> Iterator[None]:
        """Within: the policy acts with the exploration matrices (the env steps), not marginal samples (the losses)."""
        self.active = True
        try:
            yield
        finally:
            self.active = False


class StateDependentHead(nn.Module):
    """A Gaussian policy's head under gSDE: ``trunk`` (the network up to its last hidden features), a linear mean
    layer, the ``noise``. ``forward`` gives the marginal ``(mean, std)``; ``explore`` the collected action before any
    squashing, ``mean + z @ M``. ``clip_mean``: the mean is clamped to ``[-clip_mean, clip_mean]`` (SB3's SAC squashes
    it with ``clip_mean = 2``: before tanh, so the noise can still move a saturated action)."""

    def __init__(self, trunk: nn.Module, features: int, actions: int, noise: StateDependentNoise, clip_mean: float = 0.0) -> None:
        super().__init__()
        self.trunk, self.mean, self.noise = trunk, nn.Linear(features, actions), noise
        self.clip_mean = clip_mean

    def latent_and_mean(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        latent = self.trunk(*inputs)
        mean = self.mean(latent)
        if self.clip_mean > 0:
            mean = torch.clamp(mean, -self.clip_mean, self.clip_mean)
        return latent, mean

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        latent, mean = self.latent_and_mean(*inputs)
        return mean, self.noise.std(latent)

    def explore(self, *inputs: torch.Tensor) -> torch.Tensor:
        latent, mean = self.latent_and_mean(*inputs)
        return mean + self.noise.noise(latent)


def collection_period(settings: Any, rollout_steps: int) -> int:
    """Vector steps between draws of the exploration matrices: ``sde_sample_freq``, or once per rollout (-1)."""
    frequency = int(settings["sde_sample_freq"])
    return frequency if frequency > 0 else rollout_steps


def state_dependent_noise(build: Any, rollout_steps: int) -> StateDependentNoise | None:
    """The build's gSDE noise (``use_sde``), or ``None``: ``initial_log_std`` for every weight's log std, the last of
    ``hidden_sizes`` as the features, a matrix per env drawn every ``collection_period`` vector steps."""
    s = build.settings
    if not s.get("use_sde"):
        return None
    if not isinstance(build.action_space, gym.spaces.Box):
        raise RlplugError(f"use_sde = true is for Box actions (gSDE perturbs a Gaussian's mean); this env's are "
                          f"{type(build.action_space).__name__}: set use_sde = false")  # fmt: skip
    if not s["hidden_sizes"]:
        raise RlplugError("use_sde = true needs a hidden layer: gSDE's noise is a function of the policy's last hidden "
                          "features (hidden_sizes is empty)")  # fmt: skip
    actions = int(np.prod(build.action_space.shape))
    period = collection_period(s, rollout_steps)
    return StateDependentNoise(s["hidden_sizes"][-1], actions, s["initial_log_std"], period, build.num_envs, s["use_expln"])


def collecting(model: Any) -> AbstractContextManager[None]:
    """``model.sde.collecting()`` for a policy with gSDE's noise; nothing otherwise."""
    noise = getattr(model, "sde", None)
    return noise.collecting() if noise is not None else nullcontext()
