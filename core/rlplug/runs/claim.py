"""Starting a run: claiming its directory (checked, made, locked) and writing what describes the run.

Two ``train`` processes cannot both start in one directory; a claim whose run wrote nothing is undone.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from ..contract.hookspecs import Build
from ..envs.spec import env_modules
from ..errors import RunDirBusyError, RunDirError
from ..pipeline.distributed import COMMAND_VARIABLE
from .lock import LOCK_FILE, busy_message, held_here, holder, lock_run_dir, unlock_run_dir
from .rundir import CHECKPOINT, PREVIOUS_CHECKPOINT, RECIPE_FILE, file_errors, write_json
from .versions import versions


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
