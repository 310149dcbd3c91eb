"""The recipe field ``wrappers``: any Gymnasium wrapper a user names, around every single env rlplug makes.

An entry is a table ``{wrapper = "module:Name", kwargs = {...}}`` (``kwargs`` optional). ``Name`` is imported
from ``module`` (a class or any callable that takes the env first and returns a ``gymnasium.Env``), then called
as ``Name(env, **kwargs)``. The entries wrap innermost first, right above ``gym.make`` and under rlplug's own
wrapper fields (``rlplug.envs.wrappers``), the place RL Zoo applies its ``env_wrapper``: MiniGrid's
``FlatObsWrapper`` turns the Dict observation with a text ``mission`` into a flat vector before anything else
sees it. One chain serves the skrl env, the TorchRL env, evaluation and the spaces probe alike.

The shape of each entry is checked with the recipe (``check_entries``: no import); the import and the callable are
checked when the environment is resolved (``resolve_wrappers``), before anything is built. The modules are
recorded in the run directory with the env's own, so ``eval``, ``resume`` and ``export`` import them again.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import EnvModuleError, RecipeError, SpaceError
from ..util.suggest import did_you_mean

ENTRY_KEYS = ("wrapper", "kwargs")
EXAMPLE = '{wrapper = "minigrid.wrappers:FlatObsWrapper"}'


def split_path(path: str) -> tuple[str, str]:
    """``"minigrid.wrappers:FlatObsWrapper"`` -> ``("minigrid.wrappers", "FlatObsWrapper")``."""
    module, _, name = path.partition(":")
    return module, name


def entry_problem(entry: Any) -> str | None:
    """What is wrong with one entry's shape (nothing is imported), or ``None``."""
    if not isinstance(entry, Mapping):
        return f"must be a table like {EXAMPLE}, not {type(entry).__name__} {entry!r}"
    unknown = [key for key in entry if key not in ENTRY_KEYS]
    if unknown:
        return f"has key {unknown[0]!r}" + did_you_mean(str(unknown[0]), ENTRY_KEYS) + " (keys: wrapper, kwargs)"
    path = entry.get("wrapper")
    if not isinstance(path, str):
        return f"needs wrapper = \"module:Name\" (e.g. {EXAMPLE})"
    module, name = split_path(path)
    if not module or not name or not all(part.isidentifier() for part in module.split(".")) or not name.isidentifier():
        return f"wrapper {path!r} is not \"module:Name\" (a dotted module, a colon, a name: {EXAMPLE})"
    kwargs = entry.get("kwargs", {})
    if not isinstance(kwargs, Mapping):
        return f"kwargs of {path!r} must be a table of keyword arguments, not {type(kwargs).__name__}"
    bad = [key for key in kwargs if not isinstance(key, str) or not key.isidentifier()]
    if bad:
        return f"kwargs of {path!r} has key {bad[0]!r}, which is not a keyword-argument name"
    return None


def check_entries(value: Sequence[Any]) -> str | None:
    """The field's ``check``: the first entry whose shape is wrong, named by its index."""
    for index, entry in enumerate(value):
        problem = entry_problem(entry)
        if problem:
            return f"entry [{index}] {problem}"
    return None


def normalised(value: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The entries as ``{"wrapper": path, "kwargs": {...}}`` tables (``kwargs`` always present)."""
    return tuple({"wrapper": entry["wrapper"], "kwargs": dict(entry.get("kwargs", {}))} for entry in value)


def modules(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The modules the entries import (recorded for ``eval``/``resume`` with the env's own modules)."""
    return [split_path(entry["wrapper"])[0] for entry in entries]


def load(entry: Mapping[str, Any], index: int, env_id: str) -> Any:
    """The callable an entry names, imported; one line naming the entry when it cannot be had."""
    path = entry["wrapper"]
    module_name, name = split_path(path)
    where = f"environment '{env_id}': wrappers[{index}] '{path}'"
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - whatever the module raises on import, the line names it
        message = " ".join(str(err).split()) or "(no message)"
        missing = f" (pip install {module_name.partition('.')[0]})" if isinstance(err, ModuleNotFoundError) else ""
        raise EnvModuleError(f"{where}: module '{module_name}' cannot be imported ({type(err).__name__}: "
                             f"{message[:200]}){missing}") from None  # fmt: skip
    found = getattr(module, name, None)
    if found is None:
        public = [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n, None))]
        raise RecipeError(f"{where}: module '{module_name}' has no '{name}'" + did_you_mean(name, public))
    if not callable(found):
        raise RecipeError(f"{where}: '{name}' is a {type(found).__name__}, not a wrapper class or function")
    return found


def resolve_wrappers(entries: Sequence[Mapping[str, Any]], env_id: str) -> None:
    """Import every entry's callable (before anything is built), refusing the first that cannot be had."""
    for index, entry in enumerate(entries):
        load(entry, index, env_id)


def apply(made: Any, entries: Sequence[Mapping[str, Any]], env_id: str) -> Any:
    """``made`` wrapped by each entry in order; a wrapper that raises, or returns no environment, is one line."""
    import gymnasium as gym

    for index, entry in enumerate(entries):
        wrapper = load(entry, index, env_id)
        kwargs = dict(entry.get("kwargs", {}))
        where = f"environment '{env_id}': wrappers[{index}] '{entry['wrapper']}'"
        try:
            wrapped = wrapper(made, **kwargs)
        except Exception as err:  # noqa: BLE001 - a third party's constructor raises anything
            message = " ".join(str(err).split()) or "(no message)"
            given = f" with kwargs {kwargs}" if kwargs else ""
            raise SpaceError(f"{where} failed{given}: {type(err).__name__}: {message[:200]}") from None
        if not isinstance(wrapped, gym.Env):
            raise SpaceError(f"{where} returned {type(wrapped).__name__}, not a gymnasium.Env")
        made = wrapped
    return made
