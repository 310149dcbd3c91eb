"""Reading a run back: its recipe, backend and the checkpoint to continue from.

``previous.pt`` stands in for a missing or corrupt ``latest.pt``; a resume's checks around its lock live here too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CheckpointMismatchError, CorruptCheckpointError, RunDirBusyError, RunDirError
from ..recipes.fields import Recipe
from ..util.jsonfiles import read_json_object
from .checkpoint_io import PREVIOUS, load_checkpoint
from .rundir import BEST_CHECKPOINT, CHECKPOINT, PREVIOUS_CHECKPOINT, file_errors, recipe_path


@dataclass
class SavedRun:
    """What a run directory holds: its recipe and backend, its checkpoint period, and the checkpoint to
    continue from (``payload`` ``None``: the run stopped before its first checkpoint)."""

    run_dir: Path
    recipe: Recipe
    backend: str
    checkpoint_every: int | None
    payload: dict[str, Any] | None
    checkpoint: Path | None = None
    note: str | None = None
    """Set when ``previous.pt`` stands in for a missing or corrupt ``latest.pt``: the line to show."""
    stamp: tuple[int, int, int] | None = None

    @property
    def from_previous(self) -> bool:
        return self.checkpoint is not None and self.checkpoint.name == PREVIOUS


def saved_run(run_dir: Path, need_checkpoint: bool = True, checkpoint: str = "latest") -> SavedRun:
    """Read ``run_dir`` back, with one clear line for each way it can be wrong. ``latest.pt`` missing or
    corrupt: ``previous.pt`` is used and ``note`` says so. No checkpoint at all: refused when
    ``need_checkpoint`` (``eval``), else ``payload`` is ``None`` (``resume`` starts from step 0).
    ``checkpoint="best"`` reads ``best.pt`` instead (``eval --checkpoint best``), or refuses when there is none."""
    run_dir = Path(run_dir)
    recipe_file = recipe_path(run_dir)
    latest, previous = run_dir / CHECKPOINT, run_dir / PREVIOUS_CHECKPOINT
    best = run_dir / BEST_CHECKPOINT
    if checkpoint == "best" and not best.is_file():
        raise RunDirError(
            f"run directory {run_dir} holds no best checkpoint ({BEST_CHECKPOINT} is missing): it is written by runs "
            "that evaluate during training (`rlplug train --eval-every N`; offline recipes: their eval_every)"
        )
    if checkpoint != "best" and need_checkpoint and not latest.is_file() and not previous.is_file():
        raise RunDirError(
            f"run directory {run_dir} holds no checkpoint ({CHECKPOINT} is missing); it stopped before its first "
            f"one: `rlplug resume {run_dir}` trains it from step 0"
        )
    recipe, backend, data = saved_recipe(run_dir)
    every = data.get("checkpoint_every")
    if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every < 1):
        raise RunDirError(f"{recipe_file} is unreadable: 'checkpoint_every' is {every!r}, not a whole number >= 1")
    saved = SavedRun(run_dir, recipe, backend, every, None)
    if checkpoint == "best":
        saved.payload, saved.checkpoint, saved.stamp = _load_run_checkpoint(best), best, _stamp(best)
    else:
        _load_usable_checkpoint(saved, latest, previous)
    if saved.payload is not None:
        header = saved.payload["rlplug"]
        if (header.get("algorithm"), header.get("backend")) != (recipe.algorithm, backend):
            raise CheckpointMismatchError(
                f"checkpoint {saved.checkpoint} was written by {header.get('algorithm')}/{header.get('backend')}, "
                f"but the run is {recipe.algorithm}/{backend}"
            )
    return saved


def _load_run_checkpoint(path: Path) -> dict[str, Any]:
    payload = load_checkpoint(path)
    header = payload.get("rlplug")
    world_size = header.get("world_size", 1) if isinstance(header, dict) else None
    if not isinstance(header, dict) or "trainer" not in payload or not isinstance(world_size, int) or world_size < 1:
        raise CorruptCheckpointError(f"checkpoint {path} is not a run's checkpoint (its header or trainer state is missing)")
    return payload


def _load_usable_checkpoint(saved: SavedRun, latest: Path, previous: Path) -> None:
    problem: CorruptCheckpointError | None = None
    if latest.is_file():
        try:
            saved.payload, saved.checkpoint = _load_run_checkpoint(latest), latest
            saved.stamp = _stamp(latest)
            return
        except CorruptCheckpointError as err:  # a refused pickle (code in it) is not stood in for
            problem = err
    if not previous.is_file():
        if problem is not None:
            raise problem
        saved.stamp = _stamp(latest)
        return
    try:
        payload = _load_run_checkpoint(previous)
    except CorruptCheckpointError:
        if problem is not None:
            raise problem from None
        raise
    saved.payload, saved.checkpoint, saved.stamp = payload, previous, _stamp(previous)
    header = payload["rlplug"]
    at = f"update {header['updates']}" if "updates" in header else f"env step {header.get('env_steps', '?')}"
    why = str(problem) if problem is not None else f"checkpoint {latest} is missing"
    saved.note = f"{why}; using {previous} ({at}) instead"


def saved_recipe(run_dir: Path) -> tuple[Recipe, str, dict[str, Any]]:
    """The recipe and backend ``recipe.json`` records (and the file's whole table), its checkpoints left unread."""
    recipe_file = recipe_path(run_dir)
    data = read_json_object(recipe_file, RunDirError)
    try:
        recipe = Recipe.from_table(data["recipe"], source=str(recipe_file))
        backend = data["backend"]
        if not isinstance(backend, str):
            raise TypeError(f"'backend' is {backend!r}, not a name")
    except (ValueError, KeyError, TypeError) as err:
        raise RunDirError(f"{recipe_file} is unreadable: {err}") from None
    return recipe, backend, data


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size


def check_unchanged(saved: SavedRun) -> None:
    """After taking the lock: refuse when another process wrote a checkpoint since ``saved`` was read
    (it finished between this process's read and its lock), rather than continue from a stale state."""
    path = saved.checkpoint or saved.run_dir / CHECKPOINT
    if _stamp(path) != saved.stamp or (saved.checkpoint is None and (saved.run_dir / PREVIOUS_CHECKPOINT).exists()):
        raise RunDirBusyError(
            f"run directory {saved.run_dir} got a new checkpoint from another process while this one was opening it; "
            f"run `rlplug resume {saved.run_dir}` again"
        )


def set_aside_unusable_latest(saved: SavedRun | None) -> None:
    """Resuming from ``previous.pt``: move a corrupt ``latest.pt`` to ``latest.pt.corrupt``, so the next
    checkpoint write does not keep it as the new ``previous.pt``."""
    if saved is None or not saved.from_previous:
        return
    latest = saved.run_dir / CHECKPOINT
    if latest.exists():
        with file_errors(latest, "move aside the corrupt checkpoint"):
            os.replace(latest, latest.with_name(latest.name + ".corrupt"))


def read_run(run_dir: Path) -> tuple[Recipe, str, dict[str, Any]]:
    """The recipe, backend and checkpoint of a run directory, with a clear error for each way it can be wrong."""
    saved = saved_run(run_dir)
    assert saved.payload is not None
    return saved.recipe, saved.backend, saved.payload


def check_writable(run_dir: Path) -> None:
    """Before a resume takes the lock: the files it appends to and writes into can be written (one line if
    not, and the directory stays as it was)."""
    metrics = run_dir / "metrics.csv"
    if metrics.exists():
        with file_errors(metrics, "write metrics file"):
            with metrics.open("a"):
                pass
    for folder in (run_dir / CHECKPOINT.parent, run_dir / "tb"):
        if folder.exists() and not folder.is_dir():
            raise RunDirError(f"cannot write {folder}: it is a file, not a directory")


def clear_interrupted_writes(run_dir: Path) -> None:
    """Remove the temporary files of checkpoint writes a kill interrupted (a resumed run starts clean)."""
    with file_errors(run_dir / CHECKPOINT.parent, "clean up"):
        for stale in (run_dir / CHECKPOINT.parent).glob(".*.tmp"):
            stale.unlink(missing_ok=True)
