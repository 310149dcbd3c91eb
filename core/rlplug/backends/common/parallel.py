"""Data-parallel training across torch.distributed ranks: what trainers call, no-ops in one process.

Ranks start from rank 0's parameters (``broadcast_build``), average gradients before every optimiser
step (``sync_gradients``), agree on every data-dependent decision (``mean_over_ranks`` for KL early
stopping and KL-adaptive learning rates) and pool the statistics of running normalisers
(``pooled_moments``), so parameters stay identical on every rank without DistributedDataParallel's
module wrapping, which TorchRL losses (functional parameter copies) and skrl agents would not see.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn


def active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def sync_gradients(optimizer: torch.optim.Optimizer) -> None:
    """Average the gradients of ``optimizer``'s parameters over ranks (one all-reduce, flattened).

    Call it between ``backward()`` and gradient clipping, as skrl's ``reduce_parameters`` is called:
    every rank then clips and steps on the same averaged gradient.
    """
    if not active():
        return
    params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat /= dist.get_world_size()
    offset = 0
    for param, grad in zip(params, grads):
        n = grad.numel()
        param.grad = flat[offset : offset + n].view_as(param).clone()
        offset += n


def mean_over_ranks(value: torch.Tensor | float) -> torch.Tensor:
    """The mean of a scalar over ranks (the value itself in one process)."""
    tensor = torch.as_tensor(value, dtype=torch.float64).detach().clone().reshape(())
    if active():
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        tensor /= dist.get_world_size()
    return tensor


def pooled_moments(mean: torch.Tensor, var: torch.Tensor, count: float) -> tuple[torch.Tensor, torch.Tensor, float]:
    """The mean, (population) variance and count of the union of every rank's batch.

    Each rank passes its own batch's moments; every rank gets the same pooled ones back, so running
    normalisers fed by different data stay identical across ranks.
    """
    if not active():
        return mean, var, count
    dtype = mean.dtype
    mean64, var64 = mean.to(torch.float64), var.to(torch.float64)
    sums = torch.cat([torch.tensor([float(count)], dtype=torch.float64, device=mean.device),
                      (count * mean64).reshape(-1), (count * (var64 + mean64 * mean64)).reshape(-1)])
    dist.all_reduce(sums, op=dist.ReduceOp.SUM)
    total = float(sums[0])
    size = mean.numel()
    pooled_mean = sums[1 : 1 + size].reshape(mean.shape) / total
    pooled_var = (sums[1 + size :].reshape(mean.shape) / total - pooled_mean * pooled_mean).clamp_min(0.0)
    return pooled_mean.to(dtype), pooled_var.to(dtype), total


def modules_of(build: Any) -> list[nn.Module]:
    """Every module the build's stages made (models, loss), each once."""
    found: list[nn.Module] = []
    candidates: list[Any] = list((build.models or {}).values()) if isinstance(build.models, dict) else [build.models]
    candidates.append(build.loss)
    for candidate in candidates:
        if isinstance(candidate, nn.Module) and all(candidate is not m for m in found):
            found.append(candidate)
    return found


def _tensors(modules: Iterable[nn.Module]) -> list[torch.Tensor]:
    """Parameters and buffers of ``modules``, each tensor once, in a fixed order."""
    seen: set[int] = set()
    out = []
    for module in modules:
        for tensor in [*module.parameters(), *module.buffers()]:
            if id(tensor) not in seen:
                seen.add(id(tensor))
                out.append(tensor)
    return out


@torch.no_grad()
def broadcast_build(build: Any) -> None:
    """Give every rank rank 0's parameters and buffers (ranks built their models from their own seeds)."""
    if not active():
        return
    for tensor in _tensors(modules_of(build)):
        dist.broadcast(tensor.data, src=0)


def parameters_digest(build: Any) -> str:
    """A hash of every parameter and buffer of the build: equal digests mean identical networks."""
    digest = hashlib.sha256()
    for tensor in _tensors(modules_of(build)):
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def ranks_in_sync(build: Any) -> bool:
    """Whether every rank holds bit-identical networks (collective: every rank must call it)."""
    if not active():
        return True
    digests: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(digests, parameters_digest(build))
    return len(set(digests)) == 1


def gather_states(state: Any) -> list[Any] | None:
    """Every rank's ``state`` on rank 0 (a list in rank order), ``None`` elsewhere (collective)."""
    if not active():
        return [state]
    rank = dist.get_rank()
    out: list[Any] | None = [None] * dist.get_world_size() if rank == 0 else None
    dist.gather_object(state, out, dst=0)
    return out
