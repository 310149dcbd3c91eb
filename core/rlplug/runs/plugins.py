"""A run's ``--plugin`` modules and environment modules, imported again when the run is opened: a run
trained with a custom model, loss or environment is evaluated and resumed with it, or refused with one
line naming the missing module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import RunPluginMissingError
from ..util.here import import_from_here
from .rundir import recorded_env_modules, recorded_plugins


def session_for_run(session: Any, run_dir: Path) -> Any:
    """``session`` itself when it already has every plugin module the run was trained with, else a
    session that also imports the missing ones (registered after those given now)."""
    for module in recorded_env_modules(run_dir):
        require_env_module(module, run_dir)
    missing = [value for value in recorded_plugins(run_dir) if value not in session.plugins]
    if not missing:
        return session
    for value in missing:
        require_importable(value, run_dir)
    return session.with_plugins(missing)


def require_importable(value: str, run_dir: Path) -> None:
    """Import the module of a recorded ``MODULE[:OBJ]``, or refuse the run naming it."""
    module = value.partition(":")[0]
    try:
        import_from_here(module)
    except Exception as err:  # noqa: BLE001 - whatever the import raised, the line names it
        raise RunPluginMissingError(
            f"run {run_dir} was trained with plugin module '{module}', which cannot be imported here "
            f"({type(err).__name__}: {err}); install it, run rlplug in the directory that holds it, or put that directory on PYTHONPATH"
        ) from None


def require_env_module(module: str, run_dir: Path) -> None:
    """Import a module that registers the run's environment, or refuse the run naming it."""
    try:
        import_from_here(module)
    except Exception as err:  # noqa: BLE001 - whatever the import raised, the line names it
        raise RunPluginMissingError(
            f"run {run_dir} was trained with environment module '{module}', which cannot be imported here "
            f"({type(err).__name__}: {err}); install it, run rlplug in the directory that holds it, or put that directory on PYTHONPATH"
        ) from None
