"""A run directory's layout and the files that describe the run, written at its start and read back
by ``eval`` and ``resume``: ``recipe.json`` (the resolved recipe, its backend, the ``--plugin``
modules it was trained with, its checkpoint and evaluation periods), ``command.txt`` and ``versions.json``.

Everything here that touches the file system turns an ``OSError`` into one ``RunDirError`` line that
names the file and what the OS said.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .checkpoint_io import PREVIOUS, load_checkpoint
from ..envs.spec import env_modules
from ..pipeline.distributed import COMMAND_VARIABLE
from ..errors import CheckpointMismatchError, CorruptCheckpointError, RunDirBusyError, RunDirError
from ..contract.hookspecs import Build
from ..util.jsonfiles import read_json_object
from ..recipes.fields import Recipe, file_stem
from .lock import LOCK_FILE, busy_message, held_here, holder, lock_run_dir, os_reason, unlock_run_dir
from .versions import versions

RECIPE_FILE = "recipe.json"
SUMMARY_FILE = "summary.json"
CHECKPOINT = Path("checkpoints") / "latest.pt"
PREVIOUS_CHECKPOINT = CHECKPOINT.with_name(PREVIOUS)
BEST_CHECKPOINT = CHECKPOINT.with_name("best.pt")
"""The state of the best evaluation during training (``rlplug.runs.evaluations``)."""


def default_run_dir(recipe: Recipe, backend: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{file_stem(recipe.name)}-{backend}-{stamp}"


@contextmanager
def file_errors(path: Path, doing: str) -> Iterator[None]:
    """``OSError`` inside -> ``RunDirError``: ``cannot write metrics file runs/x/metrics.csv: Is a directory``."""
    try:
        yield
    except OSError as err:
        raise RunDirError(f"cannot {doing} {path}: {os_reason(err)}") from None


# ---- a new run: claiming its directory ----------------------------------------------------------


def check_new_run_dir(run_dir: Path) -> None:
    """Refuse a directory ``train`` cannot start a run in, writing nothing: a file, a path under a file,
    a directory another process is writing, one that holds a run already (``resume`` it) or anything else."""
    with file_errors(Path(run_dir), "use run directory"):
        _check_new_run_dir(Path(run_dir))


def _check_new_run_dir(run_dir: Path) -> None:
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"run directory {run_dir} is a file, not a directory; choose another --run-dir")
    for parent in run_dir.parents:
        if parent.exists():
            if not parent.is_dir():
                raise RunDirError(f"cannot create run directory {run_dir}: {parent} is a file, not a directory")
            break
    if not run_dir.is_dir():
        return
    if not held_here(run_dir):
        pid = holder(run_dir)
        if pid is not None:
            raise RunDirBusyError(busy_message(run_dir, pid))
    _check_empty(run_dir)


def _check_empty(run_dir: Path) -> None:
    with file_errors(run_dir, "read run directory"):
        entries = [p.name for p in run_dir.iterdir() if p.name != LOCK_FILE]
    if RECIPE_FILE in entries:
        state = "with a checkpoint" if any((run_dir / c).is_file() for c in (CHECKPOINT, PREVIOUS_CHECKPOINT)) else "stopped before its first checkpoint"
        raise RunDirError(
            f"run directory {run_dir} already holds a run ({_recipe_ref(run_dir)}, {state}); continue it with "
            f"`rlplug resume {run_dir}`, or choose another --run-dir"
        )
    if entries:
        raise RunDirError(f"run directory {run_dir} already exists and is not empty; choose another --run-dir")


def _recipe_ref(run_dir: Path) -> str:
    try:
        table = json.loads((run_dir / RECIPE_FILE).read_text()).get("recipe", {})
        return f"recipe {table['name']}@{table['version']}"
    except Exception:  # noqa: BLE001 - only a description; an unreadable file is reported by resume
        return "recipe unreadable"


@dataclass
class Claim:
    """A run directory this process locked to start a run in, and what it made to do so (undone by
    ``abandon`` when the run fails before it wrote anything)."""

    run_dir: Path
    made_dir: bool = False
    locked_now: bool = False


def claim_new_run_dir(run_dir: Path) -> Claim:
    """Check, make and lock the directory a new run is written to (``check_new_run_dir`` first, then once
    more under the lock, so two ``train`` processes racing for one new directory cannot both start)."""
    run_dir = Path(run_dir)
    check_new_run_dir(run_dir)
    made = not run_dir.exists()
    with file_errors(run_dir, "create run directory"):
        run_dir.mkdir(parents=True, exist_ok=True)
    claim = Claim(run_dir, made_dir=made)
    claim.locked_now = lock_run_dir(run_dir)
    try:
        _check_empty(run_dir)
    except RunDirError:
        abandon(claim)
        raise
    return claim


def abandon(claim: Claim | None) -> None:
    """Undo a claim whose run wrote nothing (no ``recipe.json``): the lock file and a directory it made."""
    if claim is None or not claim.locked_now or (claim.run_dir / RECIPE_FILE).exists():
        return
    unlock_run_dir(claim.run_dir, remove=True)
    claim.locked_now = False
    if claim.made_dir:
        try:
            claim.run_dir.rmdir()
        except OSError:
            pass  # something else appeared in it: leave it


def create_run_dir(run_dir: Path, build: Build, checkpoint_every: int | None = None,
                   loggers: tuple[str, ...] | None = None, eval_every: int | None = None) -> Claim:
    """Claim the directory (its lock is already held when the CLI claimed it) and write what describes the run."""
    claim = claim_new_run_dir(run_dir)
    write_json(run_dir / RECIPE_FILE, {
        "backend": build.backend,
        "recipe": build.recipe.to_table(),
        "plugins": list(build.plugin_modules),  # imported again by eval and resume
        "env_modules": env_modules(build.recipe),  # likewise: modules that register the run's environment
        "checkpoint_every": checkpoint_every,  # resume keeps the period
        "eval_every": eval_every,  # and the evaluation period
        "loggers": list(loggers) if loggers is not None else None,  # and the loggers
    })
    with file_errors(run_dir / "command.txt", "write"):
        (run_dir / "command.txt").write_text(os.environ.get(COMMAND_VARIABLE, shlex.join(sys.argv)) + "\n")
    write_json(run_dir / "versions.json", versions(build))
    return claim


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


def record_period(run_dir: Path, name: str, every: int) -> None:
    """A resume given another period (``checkpoint_every``, ``eval_every``) keeps it for the resumes after it."""
    path = run_dir / RECIPE_FILE
    data = read_json_object(path, RunDirError)
    if data.get(name) != every:
        data[name] = every
        write_json(path, data)


def clear_interrupted_writes(run_dir: Path) -> None:
    """Remove the temporary files of checkpoint writes a kill interrupted (a resumed run starts clean)."""
    with file_errors(run_dir / CHECKPOINT.parent, "clean up"):
        for stale in (run_dir / CHECKPOINT.parent).glob(".*.tmp"):
            stale.unlink(missing_ok=True)


# ---- an existing run: reading it back -------------------------------------------------------------


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
    recipe_file = _recipe_file(run_dir)
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
    data = read_json_object(recipe_file, RunDirError)
    try:
        recipe = Recipe.from_table(data["recipe"], source=str(recipe_file))
        backend = data["backend"]
        if not isinstance(backend, str):
            raise TypeError(f"'backend' is {backend!r}, not a name")
    except (ValueError, KeyError, TypeError) as err:
        raise RunDirError(f"{recipe_file} is unreadable: {err}") from None
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


def recorded_checkpoint_every(run_dir: Path) -> int | None:
    """The checkpoint period the run was trained with (``None`` for runs written before it was recorded)."""
    every = read_json_object(_recipe_file(run_dir), RunDirError).get("checkpoint_every")
    return every if isinstance(every, int) and not isinstance(every, bool) and every >= 1 else None


def recorded_eval_every(run_dir: Path) -> int | None:
    """The evaluation period the run was trained with (``None``: none, or a run written before it was recorded)."""
    every = read_json_object(_recipe_file(run_dir), RunDirError).get("eval_every")
    return every if isinstance(every, int) and not isinstance(every, bool) and every >= 0 else None


def recorded_loggers(run_dir: Path) -> tuple[str, ...] | None:
    """The ``--logger`` names the run was trained with (``None`` for runs written before they were recorded)."""
    loggers = read_json_object(_recipe_file(run_dir), RunDirError).get("loggers")
    return tuple(loggers) if isinstance(loggers, list) and all(isinstance(n, str) for n in loggers) else None


def recorded_plugins(run_dir: Path) -> list[str]:
    """The ``--plugin`` modules the run was trained with (none for runs written before they were recorded)."""
    recipe_file = _recipe_file(run_dir)
    plugins = read_json_object(recipe_file, RunDirError).get("plugins", [])
    if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
        raise RunDirError(f"{recipe_file} is unreadable: 'plugins' is {plugins!r}, not a list of module names")
    return plugins


def recorded_env_modules(run_dir: Path) -> list[str]:
    """The modules that register the run's environment (``env_module``, a ``module:`` id prefix)."""
    recipe_file = _recipe_file(run_dir)
    modules = read_json_object(recipe_file, RunDirError).get("env_modules", [])
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise RunDirError(f"{recipe_file} is unreadable: 'env_modules' is {modules!r}, not a list of module names")
    return modules


def _recipe_file(run_dir: Path) -> Path:
    if not run_dir.exists():
        raise RunDirError(f"run directory {run_dir} does not exist")
    if not run_dir.is_dir():
        raise RunDirError(f"run directory {run_dir} is a file, not a run directory")
    recipe_file = run_dir / RECIPE_FILE
    if not recipe_file.is_file():
        raise RunDirError(f"{run_dir} is not an rlplug run directory (no {RECIPE_FILE})")
    return recipe_file


def write_json(path: Path, data: Any) -> None:
    """Atomically: a reader never sees half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with file_errors(path, "write"):
        tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
        tmp.replace(path)
