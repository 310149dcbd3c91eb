"""Names in settings -> skrl classes (schedulers, preprocessors, noises), and the preprocessor whose
statistics pool every rank's batch."""

from __future__ import annotations

from typing import Any

import torch
from skrl.resources.noises.torch import GaussianNoise, OrnsteinUhlenbeckNoise
from skrl.resources.preprocessors.torch import RunningStandardScaler
from skrl.resources.schedulers.torch import KLAdaptiveLR

from ...errors import UnknownNameError
from ...util.suggest import did_you_mean
from ..common.parallel import active, pooled_moments

# ---- names in settings -> skrl classes ---------------------------------------------------------
# Settings hold class names as strings; only the classes listed here can be named (never eval).

SCHEDULERS: dict[str, type] = {
    "KLAdaptiveLR": KLAdaptiveLR,
    "LinearLR": torch.optim.lr_scheduler.LinearLR,
    "CosineAnnealingLR": torch.optim.lr_scheduler.CosineAnnealingLR,
    "StepLR": torch.optim.lr_scheduler.StepLR,
}
class PooledRunningStandardScaler(RunningStandardScaler):
    """skrl's ``RunningStandardScaler`` whose statistics pool every rank's batch in distributed runs.

    skrl updates each rank's scaler from that rank's data only, so ranks drift apart (reference
    §10); here each update merges the moments of all ranks' batches, so every rank holds the same
    statistics. One process: skrl's class exactly. Integer observations (MiniGrid's flat uint8 grid under
    ``FlatObsWrapper``, stored as uint8 by skrl's memory) are standardised as floats: skrl's ``torch.mean`` refuses them.
    """

    def _compute(self, x: torch.Tensor, train: bool = False, inverse: bool = False) -> torch.Tensor:
        return super()._compute(x if x.is_floating_point() else x.float(), train=train, inverse=inverse)

    def _parallel_variance(self, input_mean: torch.Tensor, input_var: torch.Tensor, input_count: int) -> None:
        if active():
            # skrl passes torch.var's unbiased estimate; pool population moments, hand back unbiased
            population = input_var * ((input_count - 1) / input_count)
            input_mean, population, total = pooled_moments(input_mean, population, input_count)
            input_var, input_count = population * (total / max(total - 1, 1)), total
        super()._parallel_variance(input_mean, input_var, input_count)


PREPROCESSORS: dict[str, type] = {"RunningStandardScaler": PooledRunningStandardScaler}
NOISES: dict[str, type] = {"GaussianNoise": GaussianNoise, "OrnsteinUhlenbeckNoise": OrnsteinUhlenbeckNoise}
_TABLES = {"scheduler": SCHEDULERS, "preprocessor": PREPROCESSORS, "noise": NOISES}


def resolve_class(kind: str, name: str | None) -> type | None:
    """The class ``name`` stands for in the ``kind`` table (scheduler, preprocessor, noise); ``None`` stays ``None``."""
    if name is None:
        return None
    table = _TABLES[kind]
    if name not in table:
        raise UnknownNameError(f"unknown skrl {kind} '{name}'" + did_you_mean(name, table))
    return table[name]


def preprocessor(name: str | None, size: Any, device: str) -> tuple[type | None, dict[str, Any]]:
    """``(class, kwargs)`` for an agent config's ``*_preprocessor`` / ``*_preprocessor_kwargs`` pair."""
    cls = resolve_class("preprocessor", name)
    return cls, ({"size": size, "device": device} if cls is not None else {})
