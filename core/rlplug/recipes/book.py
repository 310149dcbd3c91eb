"""``RecipeBook``: every known recipe by name and version, and resolving a reference to a ``Recipe``.

Resolution follows ``extends``, applies ``--set`` overrides, fills defaults and checks every field's domain.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import RecipeError, UnknownNameError
from ..util.suggest import did_you_mean
from .fields import FIELD_PARAMS, FIELDS, Recipe, check_table_fields, dropped_target, is_zoo_name, task_of
from .files import DatasetTable, Entry, check_nesting, entry_from_table, read_recipe_file, split_ref
from .limits import MAX_EXTENDS_DEPTH
from .overrides import apply_override

ALGORITHM_FIELDS = ("tier", "reference")
"""Fields that hold for the recipe's algorithm: its measured tier and the reference run it is compared with. A
recipe that ``extends`` one of another algorithm, or a ``--set algorithm=...``, drops them unless it gives its
own (as a target is dropped when the task changes)."""


_SCALARS = (str, int, float, bool, type(None))


def _copied(value: Any) -> Any:
    """A copy of recipe data (TOML's dicts, lists and scalars): ``copy.deepcopy``'s result without its memo, a
    fifth of its cost (`rlplug recipes` copies every recipe table); anything else goes through ``deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {key: _copied(item) for key, item in value.items()}
    if kind is list:
        return [_copied(item) for item in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


def _merge_into(base: dict[str, Any], top: Mapping[str, Any], atomic: bool = False) -> dict[str, Any]:
    """``top`` over ``base``, table by table, into ``base`` (a copy the caller owns; what comes from ``top`` is
    copied); ``env_kwargs``, ``encoder_kwargs`` and ``reference`` are replaced whole, and so is each entry of a
    ``search`` table (a child's range replaces its parent's, ``log`` included)."""
    for key, value in top.items():
        if not atomic and isinstance(value, dict) and isinstance(base.get(key), dict) and key not in ("env_kwargs", "encoder_kwargs", "reference"):
            base[key] = _merge_into(base[key], value, atomic=key == "search")
        else:
            base[key] = _copied(value)
    return base


class RecipeBook:
    """All known recipes: first-party ``registry.toml``, plugin contributions, then user files."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[int, Entry]] = {}
        self.conflicts: dict[str, list[str]] = {}
        self.datasets: dict[str, DatasetTable] = {}
        """Declared datasets by name (``[datasets.NAME]`` tables); a later file's declaration wins."""
        self._zoo: dict[str, Entry] = {}
        """``zoo:`` recipes translated so far; the Zoo is read only when one is asked for."""

    def add(self, entry: Entry) -> None:
        """Add a recipe; the same name and version from two sources is an error when that recipe is used."""
        versions = self._entries.setdefault(entry.name, {})
        other = versions.get(entry.version)
        if other is not None and other.source != entry.source:
            self.conflicts.setdefault(f"{entry.name}@{entry.version}", [other.source]).append(entry.source)
            return
        versions[entry.version] = entry

    def add_file(self, path: Path | str) -> None:
        entries, datasets = read_recipe_file(path)
        for entry in entries:
            self.add(entry)
        self.datasets.update(datasets)

    def add_tables(self, tables: Iterable[Mapping[str, Any]], source: str) -> None:
        for table in tables:
            table = dict(table)
            if "name" not in table:
                raise RecipeError(f"a recipe contributed by {source} has no 'name'")
            self.add(entry_from_table(str(table.pop("name")), table, source))

    def names(self) -> list[str]:
        return sorted(self._entries)

    def refs(self) -> list[tuple[str, int]]:
        return [(n, v) for n in self.names() for v in sorted(self._entries[n])]

    def _entry(self, ref: str) -> Entry:
        name, version = split_ref(ref)
        if is_zoo_name(name):
            return self._zoo_entry(name, version)
        versions = self._entries.get(name)
        if not versions:
            raise UnknownNameError(f"unknown recipe '{name}'" + did_you_mean(name, self._entries))
        if version is None:
            version = max(versions)
        if version not in versions:
            raise UnknownNameError(
                f"recipe '{name}' has no version {version} (versions: {', '.join(map(str, sorted(versions)))})"
            )
        sources = self.conflicts.get(f"{name}@{version}")
        if sources:
            raise RecipeError(f"recipe '{name}@{version}' is defined twice: in {' and in '.join(sources)}")
        return versions[version]

    def _zoo_entry(self, name: str, version: int | None) -> Entry:
        """A ``zoo:ALGO/ENV`` recipe (version 1: the installed Zoo's entry), translated on first use."""
        if version not in (None, 1):
            raise UnknownNameError(f"recipe '{name}' has no version {version} (Zoo recipes have one: 1)")
        entry = self._zoo.get(name)
        if entry is None:
            from ..interop.zoo import recipe_table

            table, source = recipe_table(name)
            check_table_fields(table, f"recipe '{name}' ({source})")
            entry = self._zoo[name] = Entry(name, 1, table, source)
        return entry

    def raw(self, ref: str, _seen: tuple[str, ...] = ()) -> tuple[dict[str, Any], Entry]:
        """The recipe's table with its ``extends`` chain merged in (parents first)."""
        entry = self._entry(ref)
        key = f"{entry.name}@{entry.version}"
        if key in _seen:
            raise RecipeError(f"recipe '{entry.name}' extends itself: {' -> '.join((*_seen, key))}")
        table = entry.table
        parent_ref = table.get("extends")
        if parent_ref and len(_seen) >= MAX_EXTENDS_DEPTH:
            chain = [*_seen[:3], "...", key]
            raise RecipeError(
                f"recipe '{_seen[0].partition('@')[0]}' extends a chain of more than {MAX_EXTENDS_DEPTH} recipes "
                f"({' -> '.join(chain)} -> {parent_ref}); the limit is {MAX_EXTENDS_DEPTH}"
            )
        if not parent_ref:
            return _copied(table), entry
        parent, _ = self.raw(parent_ref, (*_seen, key))  # a copy of its own: merged into, not copied again
        parent.pop("version", None)
        parent.pop("description", None)
        parent_task, parent_algorithm = _copied(task_of(parent)), parent.get("algorithm")
        merged = _merge_into(parent, table)
        if "target" not in table and task_of(merged) != parent_task:
            merged["target"] = None
        if merged.get("algorithm") != parent_algorithm:
            for key in ALGORITHM_FIELDS:  # the parent's measurements and tier were of another algorithm
                if key not in table:
                    merged.pop(key, None)
        return merged, entry

    def resolve(self, ref: str, overrides: Iterable[str] = (), hyperparameter_names: Iterable[str] = ()) -> Recipe:
        """Resolve ``ref`` and apply ``--set key=value`` overrides.

        ``hyperparameter_names`` lets a bare hyperparameter name (``--set lr=1e-3``) address
        ``hyperparameters.lr``. Unknown hyperparameter names are caught by validation against the algorithm.
        """
        table, entry = self.raw(ref)
        hp_names = set(hyperparameter_names)
        task, algorithm, given = task_of(table), table.get("algorithm"), set()
        for item in overrides:
            given.add(apply_override(table, item, hp_names))
        if "target" not in given and task_of(table) != task:
            table["target"] = None
        if table.get("algorithm") != algorithm:
            for key in set(ALGORITHM_FIELDS) - given:
                table.pop(key, None)
        where = f"recipe '{entry.name}'"
        check_nesting(table, f"{where} with its --set values")
        check_table_fields(table, where)
        missing = [k for k, (_, default, _) in FIELDS.items() if default is None and k not in table]
        if missing:
            raise RecipeError(f"{where} ({entry.source}) is missing required field '{missing[0]}'")
        for key, (_, default, _) in FIELDS.items():
            if key not in table and key != "extends":
                table[key] = _copied(default)
        for key, param in FIELD_PARAMS.items():
            if key in table and not dropped_target(key, table[key]):
                try:
                    table[key] = param.validate(table[key], f"'{key}'")
                except (TypeError, ValueError) as err:
                    raise RecipeError(f"{where}: {err}") from None
        if (table["target_metric"] == "normalised_score" or table["beat_dataset"]) and not table["dataset"]:
            raise RecipeError(f"{where}: target_metric 'normalised_score' and beat_dataset need a 'dataset'")
        baseline_of = table["baseline_of"]
        if baseline_of and split_ref(baseline_of)[0] not in self._entries:
            raise RecipeError(f"{where}: 'baseline_of' names no known recipe ('{baseline_of}')" + did_you_mean(baseline_of, self._entries))
        if table["terminal_on_life_loss"] and not table["atari"]:
            raise RecipeError(f"{where}: terminal_on_life_loss is an option of atari preprocessing; set atari = true too")
        return Recipe.from_table({"name": entry.name, **table}, source=entry.source)
