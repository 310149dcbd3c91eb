"""The quantile Huber loss both backends minimise (imports torch: only the backend modules import it)."""

from __future__ import annotations

import torch


def quantile_huber_loss(current: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """sb3-contrib's ``quantile_huber_loss`` (kappa 1, summed over the predicted quantiles, then averaged).

    ``current`` ``[batch, N]`` are the predicted quantiles at midpoints ``tau_i = (i + 0.5) / N``, ``target``
    ``[batch, N']`` the target samples; every pair's Huber error is weighted by ``|tau_i - 1{target < current}|``.
    """
    n = current.shape[-1]
    tau = (torch.arange(n, device=current.device, dtype=current.dtype) + 0.5) / n
    delta = target.unsqueeze(-2) - current.unsqueeze(-1)  # [batch, N, N']
    huber = torch.where(delta.abs() > 1, delta.abs() - 0.5, 0.5 * delta.pow(2))
    return ((tau.unsqueeze(-1) - (delta.detach() < 0).to(delta.dtype)).abs() * huber).sum(-2).mean()
