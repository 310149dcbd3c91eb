"""TRPO's policy step, for either backend: a natural-gradient direction by conjugate gradient, scaled to the KL
bound, then a backtracking line search that keeps the bound and lowers the loss.

The maths is Schulman et al. (2015), appendix C, as sb3-contrib's ``TRPO.train`` does it: the KL's gradient is taken
once with its graph, and each Fisher-vector product is one backward pass through it (skrl's ``TRPO`` recomputes the KL
for every product: the same values, more forward passes). A backend hands over the policy's parameters and a closure
that evaluates, at their current values, the loss to lower (the negated surrogate) and the mean KL from the policy that
collected the rollout; the registered loss computes both.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable

import torch
import torch.distributed as dist
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from .parallel import active, mean_over_ranks


@dataclasses.dataclass(frozen=True)
class TrustRegion:
    """The step's settings: ``max_kl`` the bound on the mean KL, ``damping`` added to the Fisher matrix's diagonal,
    ``cg_steps`` conjugate-gradient iterations, ``line_search_steps`` tries at most, each ``shrink`` times the previous
    step, and ``accept_ratio`` the share of the first-order improvement a try must achieve (0: any improvement, as
    sb3-contrib; skrl's default is 0.5)."""

    max_kl: float = 0.01
    damping: float = 0.1
    cg_steps: int = 15
    line_search_steps: int = 10
    shrink: float = 0.8
    accept_ratio: float = 0.0


@dataclasses.dataclass(frozen=True)
class TrustRegionStep:
    """What one step did: the loss and KL after it (the loss before it and 0 when no try was accepted) and the
    accepted fraction of the full step (0: the policy is unchanged)."""

    loss: float
    kl: float
    step_fraction: float


def conjugate_gradient(product: Callable[[torch.Tensor], torch.Tensor], b: torch.Tensor, steps: int,
                       tolerance: float = 1e-10) -> torch.Tensor:  # fmt: skip
    """``x`` with ``product(x) ~= b`` after at most ``steps`` iterations, for a symmetric positive-definite operator."""
    x = torch.zeros_like(b)
    residual, direction = b.clone(), b.clone()
    residual_norm = residual @ residual
    for _ in range(steps):
        if residual_norm < tolerance:
            break
        projected = product(direction)
        alpha = residual_norm / (direction @ projected)
        x += alpha * direction
        residual -= alpha * projected
        new_norm = residual @ residual
        direction = residual + (new_norm / residual_norm) * direction
        residual_norm = new_norm
    return x


def averaged(vector: torch.Tensor) -> torch.Tensor:
    """The mean of a flat tensor over data-parallel ranks (one all-reduce), or the tensor itself in one process."""
    if active():
        dist.all_reduce(vector, op=dist.ReduceOp.SUM)
        vector /= dist.get_world_size()
    return vector


def _flat(gradients: Iterable[torch.Tensor | None], parameters: list[torch.Tensor]) -> torch.Tensor:
    # a parameter the loss or the KL does not reach (a value head sharing the module) has no gradient: zeros
    return torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(gradients, parameters)])


def trust_region_step(
    parameters: Iterable[torch.Tensor], evaluate: Callable[[], tuple[torch.Tensor, torch.Tensor]], region: TrustRegion
) -> TrustRegionStep:
    """One TRPO step of ``parameters``; ``evaluate()`` returns ``(loss, kl)`` at their current values.

    Direction ``s = F^-1 (-grad loss)`` (``F``: the KL's Hessian, damped), full step ``s sqrt(2 max_kl / s.Fs)``, then
    fractions ``1, shrink, shrink^2, ...`` of it until one keeps ``kl < max_kl`` and lowers the loss by more than
    ``accept_ratio`` x its first-order prediction; none: the parameters are restored.
    """
    parameters = [p for p in parameters if p.requires_grad]
    loss, kl = evaluate()
    # data-parallel ranks (--nproc) average the gradient, every Fisher-vector product and the line search's loss and
    # KL over their rollouts, so they take the same step from the same parameters; one process: the values themselves
    loss_gradient = averaged(_flat(torch.autograd.grad(loss, parameters, retain_graph=True, allow_unused=True), parameters).detach())
    kl_gradient = _flat(torch.autograd.grad(kl, parameters, create_graph=True, allow_unused=True), parameters)

    def fisher_product(vector: torch.Tensor) -> torch.Tensor:
        product = torch.autograd.grad(kl_gradient @ vector, parameters, retain_graph=True, allow_unused=True)
        return averaged(_flat(product, parameters).detach()) + region.damping * vector

    direction = conjugate_gradient(fisher_product, -loss_gradient, region.cg_steps)
    curvature = float(direction @ fisher_product(direction))
    before = float(mean_over_ranks(loss.detach()))
    if not curvature > 0 or not math.isfinite(curvature):  # a zero gradient (all advantages equal): nothing to step
        return TrustRegionStep(before, 0.0, 0.0)
    full_step = direction * math.sqrt(2 * region.max_kl / curvature)
    predicted = float(-(loss_gradient @ full_step))  # the loss's first-order decrease at the full step
    start = parameters_to_vector(parameters).detach()
    fraction = 1.0
    with torch.no_grad():
        for _ in range(region.line_search_steps):
            vector_to_parameters(start + fraction * full_step, parameters)
            new_loss, new_kl = (float(mean_over_ranks(value)) for value in evaluate())
            if new_kl < region.max_kl and before - new_loss > region.accept_ratio * fraction * predicted:
                return TrustRegionStep(new_loss, new_kl, fraction)
            fraction *= region.shrink
        vector_to_parameters(start, parameters)
    return TrustRegionStep(before, 0.0, 0.0)
