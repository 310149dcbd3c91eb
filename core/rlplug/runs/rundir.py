"""A run directory's layout and the files that describe the run.

``recipe.json``, ``command.txt``, ``versions.json``: their names, writing them atomically, and the periods, loggers
and modules the run recorded.

Everything here that touches the file system turns an ``OSError`` into one ``RunDirError`` line that
names the file and what the OS said.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import RunDirError
from ..recipes.fields import Recipe, file_stem
from ..util.jsonfiles import read_json_object
from .checkpoint_io import PREVIOUS
from .lock import os_reason

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


def record_period(run_dir: Path, name: str, every: int) -> None:
    """A resume given another period (``checkpoint_every``, ``eval_every``) keeps it for the resumes after it."""
    path = run_dir / RECIPE_FILE
    data = read_json_object(path, RunDirError)
    if data.get(name) != every:
        data[name] = every
        write_json(path, data)


def recorded_checkpoint_every(run_dir: Path) -> int | None:
    """The checkpoint period the run was trained with (``None`` for runs written before it was recorded)."""
    every = read_json_object(recipe_path(run_dir), RunDirError).get("checkpoint_every")
    return every if isinstance(every, int) and not isinstance(every, bool) and every >= 1 else None


def recorded_eval_every(run_dir: Path) -> int | None:
    """The evaluation period the run was trained with (``None``: none, or a run written before it was recorded)."""
    every = read_json_object(recipe_path(run_dir), RunDirError).get("eval_every")
    return every if isinstance(every, int) and not isinstance(every, bool) and every >= 0 else None


def recorded_loggers(run_dir: Path) -> tuple[str, ...] | None:
    """The ``--logger`` names the run was trained with (``None`` for runs written before they were recorded)."""
    loggers = read_json_object(recipe_path(run_dir), RunDirError).get("loggers")
    return tuple(loggers) if isinstance(loggers, list) and all(isinstance(n, str) for n in loggers) else None


def recorded_plugins(run_dir: Path) -> list[str]:
    """The ``--plugin`` modules the run was trained with (none for runs written before they were recorded)."""
    recipe_file = recipe_path(run_dir)
    plugins = read_json_object(recipe_file, RunDirError).get("plugins", [])
    if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
        raise RunDirError(f"{recipe_file} is unreadable: 'plugins' is {plugins!r}, not a list of module names")
    return plugins


def recorded_env_modules(run_dir: Path) -> list[str]:
    """The modules that register the run's environment (``env_module``, a ``module:`` id prefix)."""
    recipe_file = recipe_path(run_dir)
    modules = read_json_object(recipe_file, RunDirError).get("env_modules", [])
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise RunDirError(f"{recipe_file} is unreadable: 'env_modules' is {modules!r}, not a list of module names")
    return modules


def recipe_path(run_dir: Path) -> Path:
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
