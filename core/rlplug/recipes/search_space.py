"""A recipe's search space for ``rlplug tune``: the ``search`` its algorithm's ``Param``s declare, narrowed,
widened or fixed by the recipe's ``[recipes.X.search]`` table.

A search-table entry is a range ``{low = 1e-4, high = 1e-3, log = true}``, a list of choices
(``epochs = [5, 10]``; for a list parameter, a list of lists: ``hidden_sizes = [[64], [64, 64]]``), or a
single value, which fixes the parameter for every trial (``gamma = 0.99``). Every entry is checked
against the parameter's domain when the recipe is resolved, like every other field. Torch- and
Optuna-free: ``rlplug show NAME --space`` prints it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import RecipeError, UnknownNameError
from ..schema import AlgorithmSpec, Param, Search, choice_text
from ..util.suggest import did_you_mean


@dataclass
class SearchSpace:
    """What a study searches (name -> ``Search``, in the algorithm's parameter order), where each search
    comes from (``declared`` or ``recipe``), and the values the recipe's search table fixes."""

    searched: dict[str, Search] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)

    def as_table(self) -> dict[str, Any]:
        """The space as a recipe's search table writes it (study records and ``--json``)."""
        return {**{n: s.as_table() for n, s in self.searched.items()}, **self.fixed}


def recipe_space(spec: AlgorithmSpec, recipe: Any, pinned: Iterable[str] = ()) -> SearchSpace:
    """The search space of ``recipe`` (its ``search`` table checked against ``spec``'s parameters); a bad
    entry raises a one-line ``RecipeError`` / ``UnknownNameError`` naming the recipe and the entry.
    ``pinned`` parameters (set on the command line) keep the recipe's value: their declared search is left out."""
    params = spec.param_map
    where = f"recipe '{recipe.name}'"
    table = getattr(recipe, "search", None) or {}
    if not isinstance(table, Mapping):
        raise RecipeError(f"{where}: 'search' must be a table of hyperparameter = range, choices or value")
    for name in table:
        if name not in params:
            raise UnknownNameError(
                f"{where}: 'search' names '{name}', which is not a hyperparameter of {spec.name}"
                + did_you_mean(name, params)
            )
    space = SearchSpace()
    values = {**spec.defaults(), **recipe.hyperparameters}
    for param in spec.params:
        if param.name in table:
            entry = table[param.name]
            try:
                kind, value = _entry(param, entry, f"'search.{param.name}'")
            except (TypeError, ValueError) as err:
                raise RecipeError(f"{where}: {err}") from None
            if kind == "fixed":
                space.fixed[param.name] = value
            else:
                space.searched[param.name], space.source[param.name] = value, "recipe"
        elif param.search is not None and param.name not in pinned:
            space.searched[param.name] = _with_value(param.search, values.get(param.name))
            space.source[param.name] = "declared"
    return space


def _with_value(search: Search, value: Any) -> Search:
    """A declared search that also holds the recipe's own value (a choice added, a range stretched to it), so the
    recipe as written is always one point of its space; a recipe's own search table is taken as written."""
    if search.choices is not None:
        if value is None or any(choice_text(c) == choice_text(value) and type(c) is type(value) for c in search.choices):
            return search
        choices = (*search.choices, value)
        if all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in choices):
            choices = tuple(sorted(choices))
        return Search(choices=choices)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (search.log and value <= 0):
        return search
    return Search(min(search.low, value), max(search.high, value), search.log)


def pinned_by(overrides: Iterable[str], names: Iterable[str]) -> set[str]:
    """The hyperparameters ``--set`` overrides name (``lr=...`` or ``hyperparameters.lr=...``)."""
    names, pinned = set(names), set()
    for item in overrides:
        key = item.partition("=")[0].strip()
        key = key.removeprefix("hyperparameters.")
        if key in names:
            pinned.add(key)
    return pinned


def check_search(spec: AlgorithmSpec, recipe: Any) -> None:
    """What ``rlplug.pipeline.session.check_recipe`` runs: the search table's entries in their parameters' domains."""
    if getattr(recipe, "search", None):
        recipe_space(spec, recipe)


def _entry(param: Param, entry: Any, where: str) -> tuple[str, Any]:
    """``("search", Search)`` or ``("fixed", value)`` for one search-table entry."""
    if isinstance(entry, Mapping):
        return "search", Search.of(entry, where).checked(param, where)
    is_list_param = param.value_type is list
    if isinstance(entry, list) and (not is_list_param or (entry and all(isinstance(e, list) for e in entry))):
        return "search", Search(choices=tuple(entry)).checked(param, where)
    return "fixed", param.validate(entry, where)


def space_rows(spec: AlgorithmSpec, recipe: Any, space: SearchSpace) -> list[dict[str, Any]]:
    """One row per parameter a study touches: searched ones (with the recipe's own value) then fixed ones."""
    values = {**spec.defaults(), **recipe.hyperparameters}
    rows = []
    for name, search in space.searched.items():
        rows.append({"parameter": name, "search": search.text(), "value": values.get(name), "from": space.source[name],
                     "table": search.as_table()})
    for name, value in space.fixed.items():
        rows.append({"parameter": name, "search": f"fixed at {choice_text(value)}", "value": values.get(name),
                     "from": "recipe", "table": value})
    return rows


def nothing_to_search(spec: AlgorithmSpec, recipe: Any) -> str:
    """The line refusing to tune a recipe whose space is empty."""
    return (
        f"recipe '{recipe.name}': nothing to search: algorithm '{spec.name}' declares no search ranges "
        f"(Param(search=...)) and the recipe's [recipes.{recipe.name}.search] table adds none"
    )
