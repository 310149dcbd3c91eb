"""``Param``: one backend-neutral hyperparameter with its default, type, doc, domain and search
space; ``AutoOrFloat`` for ``"auto"``-or-a-number; ``Rule``: a constraint between hyperparameters."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .domains import Interval, _check_number, _coerce, _interval, _remark
from .search import Search

@dataclass(frozen=True)
class Param:
    """One backend-neutral hyperparameter: its default, its type, a one-line doc and its domain.

    The domain is what a value must satisfy before anything is built: ``bounds`` for a number
    (``"[0, 1]"``, ``"(0, inf)"``, ``"[1, 10**12]"``: brackets closed, parentheses open), ``choices`` for a
    name, ``item_bounds`` and ``length`` for a list of numbers, and ``check`` for anything else (a function
    returning what is wrong with a value, or ``None``; ``domain`` says in words what it accepts). Numbers
    are always finite; an ``int`` parameter takes a whole float (``1e6``) and never exceeds ``INT64_MAX``.
    A default outside its own domain is a declaration error (raised when the plugin's module is imported).

    ``search`` is where ``rlplug tune`` looks for a value (a ``Search``: a range, log-scale or not, or a few
    choices, inside the domain); a parameter without one is left at the recipe's value unless a recipe's
    ``[recipes.X.search]`` table names it.
    """

    name: str
    default: Any
    doc: str
    type: type | None = None
    choices: tuple[Any, ...] | None = None
    item_type: type | None = None  # for list parameters
    bounds: str | Interval | None = None
    item_bounds: str | Interval | None = None  # for list parameters: each item
    length: str | Interval | None = None  # for list parameters: how many items
    check: Callable[[Any], str | None] | None = None
    domain: str = ""  # ``check``'s domain in words, shown by ``rlplug show``
    search: Search | None = None  # where ``rlplug tune`` looks (a Search, a tuple of choices, or a range table)

    def __post_init__(self) -> None:
        for name in ("bounds", "item_bounds", "length"):
            object.__setattr__(self, name, _interval(getattr(self, name)))
        if self.default is not None:
            try:
                self.validate(self.default, f"'{self.name}'")
            except (TypeError, ValueError) as err:
                raise ValueError(f"parameter '{self.name}': its default is outside its own domain: {err}") from None
        if self.search is not None:
            try:
                object.__setattr__(self, "search", Search.of(self.search, "its search").checked(self, "its search"))
            except ValueError as err:
                raise ValueError(f"parameter '{self.name}': {err}") from None

    @property
    def value_type(self) -> type:
        return self.type or type(self.default)

    @property
    def domain_text(self) -> str:
        """The domain in a few characters (``[0, 1]``, ``> 0``, ``'l2' | 'huber'``), for ``rlplug show``."""
        parts = []
        if self.choices is not None:
            parts.append(" | ".join(map(repr, self.choices)))
        elif self.value_type is bool:
            parts.append("true | false")
        if self.bounds is not None:
            parts.append(str(self.bounds))
        if self.length is not None or self.item_bounds is not None:
            parts.append(f"{self.length or 'any number of'} items{f', each {self.item_bounds}' if self.item_bounds else ''}")
        if self.domain:
            parts.append(self.domain)
        return "; ".join(parts)

    def coerce(self, value: Any, where: str) -> Any:
        """Type check only (a whole float becomes an int where an int is expected); raises TypeError."""
        return _coerce(value, self.value_type, where)

    def validate(self, value: Any, where: str) -> Any:
        """The value converted to the parameter's type, or a TypeError / ValueError that reads as one line."""
        given = value
        value = self.coerce(value, where)
        if self.item_type is not None and isinstance(value, list):
            value = [_coerce(v, self.item_type, f"{where}[{i}]") for i, v in enumerate(value)]
            if self.length is not None and len(value) not in self.length:
                raise ValueError(f"{where} has {len(value)} items; the count {self.length.refusal(len(value))}{_remark(self.doc)}")
            for i, item in enumerate(value):
                _check_number(item, self.item_bounds, f"{where}[{i}]", self.doc)
        if self.choices is not None and value not in self.choices:
            from ..util.suggest import did_you_mean

            hint = did_you_mean(str(value), map(str, self.choices))
            raise ValueError(
                f"{where} = {value!r} is not one of {', '.join(map(repr, self.choices))}"
                + (hint if "did you mean" in hint else "")
            )
        _check_number(value, self.bounds, where, self.doc, shown=given)
        if self.check is not None:
            problem = self.check(value)
            if problem:
                raise ValueError(f"{where} = {value!r} {problem}{_remark(self.doc)}")
        return value


class AutoOrFloat(Param):  # no @dataclass: it adds no field (the decorator is ~0.5 ms of every command's start)
    """A hyperparameter that is either the string ``"auto"`` or a finite number (stored as a float)."""

    @property
    def domain_text(self) -> str:
        return f"'auto' | {self.bounds or 'any finite number'}"

    def validate(self, value: Any, where: str) -> Any:
        if value == "auto":
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = float(value)
            _check_number(value, self.bounds, where, self.doc)
            return value
        raise TypeError(f"{where} must be 'auto' or a number, got {type(value).__name__} {value!r}")


@dataclass(frozen=True)
class Rule:
    """A constraint between hyperparameters (and recipe fields such as ``num_envs``), declared once.

    ``holds(hp, recipe)`` sees the validated hyperparameters with defaults filled in and the resolved
    recipe, after every value passed its own domain. ``text`` is the rule as users read it
    (``"minibatches <= rollout_steps x num_envs"``), ``why`` a few words of reason; ``fields`` are the
    names whose values the refusal quotes (hyperparameters first, then recipe fields).
    """

    fields: tuple[str, ...]
    text: str
    holds: Callable[[Mapping[str, Any], Any], bool]
    why: str = ""

    def refusal(self, hp: Mapping[str, Any], recipe: Any) -> str | None:
        """``None`` when the rule holds, else the line saying which values break it."""
        if self.holds(hp, recipe):
            return None
        values = ", ".join(f"{f} = {hp[f] if f in hp else getattr(recipe, f, '?')!r}" for f in self.fields)
        verb = "breaks" if len(self.fields) == 1 else "break"
        return f"{values} {verb} the rule {self.text}" + (f" ({self.why})" if self.why else "")
