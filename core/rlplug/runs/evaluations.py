"""Evaluations during training and ``checkpoints/best.pt``.

With ``eval_every`` (``rlplug train --eval-every N``) the run layer evaluates the trainer every N steps,
counted from zero so a resumed run keeps the beat, through ``Trainer.evaluate`` (its own environment and
seeds: the training environments and random streams are not touched, so the run trains as it would
without). Offline trainers evaluate themselves every ``eval_every`` updates (a hyperparameter of their
family) and put ``eval/return`` in their metrics; those evaluations count the same. Whenever an evaluation,
the final one included, beats the best so far, the trainer's state is written to ``best.pt`` (atomically).
The best so far is in every checkpoint's header (``best_eval``) and in ``best.pt``'s own, so a resumed run
never replaces a better ``best.pt``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import RecipeError

BEST_EVAL = "best_eval"
"""The checkpoint header's record of the best evaluation so far: ``{"return": R, <progress unit>: step}``."""


def check_eval_every(every: int | None, kind: str, recipe: str) -> None:
    """Offline cells evaluate on their own schedule (their ``eval_every`` hyperparameter); a second one is refused."""
    if every and kind == "offline":
        raise RecipeError(
            f"--eval-every: recipe '{recipe}' is offline, and offline trainers evaluate every `eval_every` gradient "
            f"updates themselves (best.pt included): use --set eval_every={every}"
        )


class Evaluations:
    """When the next evaluation is due (``cadence``: a ``CheckpointCadence`` over ``eval_every`` steps, or
    ``None``), the best evaluation so far, and whether this run keeps a ``best.pt`` at all: it does once it
    evaluates during training, so a run that evaluates only at its end writes none (default runs do not
    pay for a second checkpoint)."""

    def __init__(self, cadence: Any, episodes: int, unit: str, best: dict[str, Any] | None = None) -> None:
        self.cadence = cadence
        self.episodes = episodes
        self.unit = unit
        self.best = best
        self.active = cadence is not None or best is not None

    def due(self, progress: int, budget: int) -> bool:
        """An evaluation is due (none at the budget's end: the final evaluation stands for it)."""
        return self.cadence is not None and self.cadence.due(progress) and progress < budget

    def evaluate(self, trainer: Any, show: bool) -> dict[str, float]:
        with episode_bar(self.episodes, show, "evaluating"):
            returns = trainer.evaluate(self.episodes)
        self.cadence.saved(trainer.progress)
        return {"eval/return": sum(returns) / len(returns)}

    def improved(self, value: float | None, progress: int) -> bool:
        """Record an evaluation; whether it is the best so far (and ``best.pt`` should hold this state)."""
        if value is None or not math.isfinite(value):
            return False
        self.active = True
        if self.best is not None and value <= self.best["return"]:
            return False
        self.best = {"return": float(value), self.unit: int(progress)}
        return True


def best_so_far(run_dir: Path | None, payload: dict[str, Any] | None) -> dict[str, Any] | None:
    """On resume: the better of the checkpoint header's best and ``best.pt``'s own (a kill after ``best.pt``
    was written and before the next checkpoint leaves ``best.pt`` ahead of the header)."""
    from .checkpoint_io import load_checkpoint
    from ..errors import RlplugError
    from .rundir import BEST_CHECKPOINT

    found = []
    if payload is not None:
        found.append(payload.get("rlplug", {}).get(BEST_EVAL))
    if run_dir is not None and (run_dir / BEST_CHECKPOINT).is_file():
        try:
            found.append(load_checkpoint(run_dir / BEST_CHECKPOINT, mmap=True).get("rlplug", {}).get(BEST_EVAL))
        except RlplugError:  # unreadable: the next improvement replaces it
            pass
    valid = [b for b in found if isinstance(b, dict) and isinstance(b.get("return"), (int, float))]
    return max(valid, key=lambda b: b["return"], default=None)


@contextmanager
def episode_bar(episodes: int, show: bool, label: str) -> Iterator[None]:
    """A bar over the evaluation episodes played inside the block (the core's evaluation loops report each
    one, ``rlplug.envs.evaluation.episode_progress``), on stderr; ``show`` is false when quiet or ``--json``. It
    appears when the first episode ends, so a refusal before any episode (an environment that cannot be made,
    an exported file for another env) stays the one line it is."""
    bar = None

    def done(count: int) -> None:
        nonlocal bar
        if bar is None:
            from tqdm import tqdm

            bar = tqdm(total=episodes, desc=label, unit="episode", dynamic_ncols=True, leave=False, file=sys.stderr)
        bar.update(count)

    from ..envs.evaluation import episode_progress

    try:
        with episode_progress(done if show else lambda count: None):
            yield
    finally:
        if bar is not None:
            bar.close()
