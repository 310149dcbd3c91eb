"""Stopping a run whose losses or parameters became NaN or infinite, with one line naming what and when."""

from __future__ import annotations

import math
from typing import Any

from .checkpoint_io import non_finite_tensors
from ..errors import TrainingDivergedError
from ..contract.hookspecs import Trainer


def check_losses(metrics: dict[str, float], progress: int, unit: str) -> None:
    """Stop on a NaN or infinite loss term, naming it and the step."""
    for name, value in metrics.items():
        if name.startswith("loss/") and not math.isfinite(value):
            raise TrainingDivergedError(
                f"{name[5:]} became {value} by {unit.replace('_', ' ')} {progress}; training stopped, the last good checkpoint is kept"
            )


def check_finite_state(state: Any, trainer: Trainer, kept_in: Any) -> None:
    """Refuse to checkpoint a state holding a NaN or an infinity (the last good checkpoint in ``kept_in`` stays)."""
    bad = next(non_finite_tensors(state), None)
    if bad is not None:
        raise TrainingDivergedError(
            f"{bad} became NaN or infinite by {trainer.progress_unit.replace('_', ' ')} {trainer.progress}; "
            f"training stopped and the last good checkpoint in {kept_in} is kept"
        )


def diverged_parameters(err: Exception, trainer: Trainer) -> TrainingDivergedError | None:
    """A library choking on NaN parameters (a Categorical of NaN logits, ...): the error naming what
    diverged, or ``None`` when the trainer's state is finite and ``err`` is a plain bug."""
    try:
        bad = next(non_finite_tensors(trainer.state_dict()), None)
    except Exception:  # a trainer too broken to report its state: the original error tells more
        return None
    if bad is None:
        return None
    return TrainingDivergedError(
        f"{bad} became NaN or infinite by {trainer.progress_unit.replace('_', ' ')} {trainer.progress} "
        f"({str(err).splitlines()[0]}); training stopped, the last good checkpoint is kept"
    )
