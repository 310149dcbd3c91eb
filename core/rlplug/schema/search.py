"""Where ``rlplug tune`` looks for a hyperparameter's value: ``Search`` (a range or choices)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .domains import _show, type_name

if TYPE_CHECKING:
    from .params import Param

SEARCH_VALUE_TYPES = (bool, int, float, str)
"""What Optuna stores for a choice; any other choice (a list such as ``[64, 64]``) is stored as its TOML text."""


@dataclass(frozen=True)
class Search:
    """Where ``rlplug tune`` looks for a hyperparameter's value: a range of numbers (``low`` to ``high``,
    both ends included, log-uniform with ``log=True``) or a few ``choices``.

    An ``int`` parameter draws whole numbers from its range, a ``float`` parameter real ones; ``choices``
    suit everything else (names, switches, layer widths). ``Param(..., search=...)`` takes a ``Search``,
    a tuple or list of choices, or a table as a recipe writes it (``{"low": 1e-5, "high": 1e-3, "log": True}``).
    """

    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    choices: tuple[Any, ...] | None = None

    @classmethod
    def of(cls, value: Any, where: str = "search") -> Search:
        """A ``Search`` from what a declaration or a recipe's search table writes: a ``Search``, a
        list or tuple of choices, or a table with ``low``, ``high`` and optionally ``log``."""
        if isinstance(value, Search):
            return value
        if isinstance(value, (list, tuple)):
            return cls(choices=tuple(value))
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - {"low", "high", "log"})
            if unknown:
                from ..util.suggest import did_you_mean

                hint = did_you_mean(unknown[0], ["low", "high", "log"])
                raise ValueError(f"{where} has key {unknown[0]!r}{hint}; a range is {{low = ..., high = ..., log = true|false}}")
            if "low" not in value or "high" not in value:
                raise ValueError(f"{where}: a range needs both 'low' and 'high'")
            log = value.get("log", False)
            if not isinstance(log, bool):
                raise ValueError(f"{where}: 'log' must be true or false, got {log!r}")
            return cls(value["low"], value["high"], log)
        raise ValueError(f"{where} is {type_name(type(value))} {value!r}, not a range {{low = ..., high = ...}} or a list of choices")

    @property
    def is_range(self) -> bool:
        return self.choices is None

    def checked(self, param: Param, where: str) -> Search:
        """This search, its ends and choices converted to ``param``'s type, or a one-line ``ValueError``:
        an empty range, a range for a parameter that takes choices, ends or choices outside its domain."""
        if self.choices is not None:
            if self.low is not None or self.high is not None:
                raise ValueError(f"{where} has both a range and choices")
            if not self.choices:
                raise ValueError(f"{where} has no choices")
            try:
                choices = tuple(param.validate(c, f"{where} choice") for c in self.choices)
            except TypeError as err:
                raise ValueError(str(err)) from None
            if len(set(map(_choice_key, choices))) != len(choices):
                raise ValueError(f"{where} lists a choice twice")
            return Search(choices=choices)
        from .params import AutoOrFloat

        kind = param.value_type
        if kind not in (int, float) or param.choices is not None or isinstance(param, AutoOrFloat):
            raise ValueError(f"{where} must be a list of choices, not a range: '{param.name}' is not a number")
        if self.low is None or self.high is None:
            raise ValueError(f"{where} needs both 'low' and 'high'")
        for end in (self.low, self.high):
            if isinstance(end, bool) or not isinstance(end, (int, float)):
                raise ValueError(f"{where}: the ends must be numbers, got {end!r}")
            if kind is int and not float(end).is_integer():
                raise ValueError(f"{where}: the ends must be whole numbers ('{param.name}' is an int), got {end!r}")
        try:
            low, high = (param.validate(end, f"{where} {label}") for end, label in ((self.low, "low"), (self.high, "high")))
        except TypeError as err:
            raise ValueError(str(err)) from None
        if low >= high:
            raise ValueError(f"{where} is an empty range: low = {self.low!r} is not below high = {self.high!r}"
                             + (" (to fix the value, write it alone)" if low == high else ""))
        if self.log and low <= 0:
            raise ValueError(f"{where}: a log-scale range needs low > 0, got {self.low!r}")
        return Search(low, high, self.log)

    def text(self) -> str:
        """``log-uniform [1e-05, 0.002]``, ``uniform [0.0, 1.0]``, ``one of 5, 10, 20``."""
        if self.choices is not None:
            return "one of " + ", ".join(choice_text(c) for c in self.choices)
        scale = "log-uniform" if self.log else "uniform"
        return f"{scale} [{_show(self.low)}, {_show(self.high)}]"

    def as_table(self) -> Any:
        """What a recipe's search table writes for this search (``{low, high, log}`` or a list of choices)."""
        if self.choices is not None:
            return list(self.choices)
        return {"low": self.low, "high": self.high, "log": self.log}


def choice_text(value: Any) -> str:
    """A choice as TOML writes it: ``0.99``, ``'relu'``, ``[64, 64]``, ``true``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(choice_text(v) for v in value) + "]"
    return repr(value)


def _choice_key(value: Any) -> Any:
    return (type(value).__name__, choice_text(value))
