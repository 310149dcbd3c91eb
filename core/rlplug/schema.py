"""Declarations plugins return from ``rlplug_algorithms()``: algorithms, backends, hyperparameters.

Nothing here imports torch: declarations are read by ``rlplug list`` and ``rlplug recipes``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

KINDS = ("on-policy", "off-policy", "offline", "multi-agent")
ACTION_SPACES = ("discrete", "continuous", "multi-discrete")

_TYPE_NAMES = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "table"}


def type_name(value_type: type) -> str:
    return _TYPE_NAMES.get(value_type, value_type.__name__)


def check_type(value: Any, expected: type, where: str) -> Any:
    """Return ``value`` converted to ``expected`` (int -> float only) or raise TypeError with a clear line."""
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is not bool and isinstance(value, bool):
        raise TypeError(f"{where} must be {type_name(expected)}, got bool {value!r}")
    if not isinstance(value, expected):
        raise TypeError(f"{where} must be {type_name(expected)}, got {type_name(type(value))} {value!r}")
    return value


INT64_MAX = 2**63 - 1
"""The largest count any parameter may hold: what a 64-bit counter (a torch or numpy int64) holds."""


def _number(text: str) -> float | int:
    """``"1"``, ``"0.5"``, ``"inf"``, ``"-inf"``, ``"10**12"``, ``"2**32 - 1"`` -> a number (nothing is evaluated)."""
    text = text.strip().replace(" ", "")
    if text in ("inf", "+inf"):
        return math.inf
    if text == "-inf":
        return -math.inf
    match = re.fullmatch(r"(-?\d+)\*\*(\d+)(-1)?", text)
    if match:
        return int(match.group(1)) ** int(match.group(2)) - (1 if match.group(3) else 0)
    try:
        return int(text)
    except ValueError:
        return float(text)


def _show(x: float | int) -> str:
    """A bound as people write it: ``1``, ``0.5``, ``10**12``, ``2**32 - 1``, ``inf``."""
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**53:
        x = int(x)
    if isinstance(x, int) and abs(x) >= 10**6:
        for base in (10, 2):
            for offset, suffix in ((0, ""), (1, " - 1")):
                exponent = round(math.log(abs(x) + offset, base))
                if base**exponent == abs(x) + offset:
                    return f"{'-' if x < 0 else ''}{base}**{exponent}{suffix}"
    return repr(x)


@dataclass(frozen=True)
class Interval:
    """A range of numbers with open or closed ends: ``Interval.parse("(0, 1]")``; ``None`` ends are unbounded."""

    low: float | int | None = None
    high: float | int | None = None
    low_open: bool = False
    high_open: bool = False

    @classmethod
    def parse(cls, text: str) -> Interval:
        """``"[0, 1]"``, ``"(0, inf)"``, ``"[1, 10**12]"``: brackets are closed ends, parentheses open ones."""
        match = re.fullmatch(r"\s*([\[(])\s*([^,]+?)\s*,\s*([^,]+?)\s*([\])])\s*", text)
        if not match:
            raise ValueError(f"bounds {text!r} are not an interval such as '[0, 1]' or '(0, inf)'")
        try:
            low, high = _number(match.group(2)), _number(match.group(3))
        except ValueError:
            raise ValueError(f"bounds {text!r}: the ends must be numbers, inf, or B**E (- 1)") from None
        if low > high:
            raise ValueError(f"bounds {text!r}: the low end is above the high end")
        return cls(
            None if low == -math.inf else low,
            None if high == math.inf else high,
            low_open=match.group(1) == "(",
            high_open=match.group(4) == ")",
        )

    def __contains__(self, value: float | int) -> bool:
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        if self.high is not None and (value >= self.high if self.high_open else value > self.high):
            return False
        return True

    def __str__(self) -> str:
        """``[0, 1]`` for two ends, ``> 0`` / ``>= 1`` / ``<= 0`` for one, ``any number`` for none."""
        if self.low is not None and self.high is not None:
            return f"{'(' if self.low_open else '['}{_show(self.low)}, {_show(self.high)}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {_show(self.low)}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {_show(self.high)}"
        return "any finite number"

    def refusal(self, value: Any) -> str:
        """What to say of a value outside: ``is outside [0, 1]`` or ``must be > 0``."""
        if isinstance(value, float) and not math.isfinite(value):
            if self.low is None and self.high is None:
                return "must be a finite number"
            return f"must be a finite number {'in ' if self.low is not None and self.high is not None else ''}{self}"
        return f"is outside {self}" if self.low is not None and self.high is not None else f"must be {self}"


def _interval(bounds: str | Interval | None) -> Interval | None:
    return Interval.parse(bounds) if isinstance(bounds, str) else bounds


def _gist(doc: str) -> str:
    """The gist of a one-line doc, for error messages: ``discount factor``. A leading qualifier
    (``Box actions: ...``) and parenthetical remarks are left out; the first clause is kept."""
    head, sep, rest = doc.partition(": ")
    if sep and (" " not in head.strip() or head.strip().endswith("actions")):
        doc = rest
    text, depth = "", 0
    for char in doc.strip(" ."):  # remarks in parentheses after a space are left out; log(alpha) stays
        if char == "(" and (depth or text.endswith(" ")):
            depth += 1
        elif char == ")" and depth:
            depth -= 1
        elif not depth:
            text += char
    text = " ".join(text.split())
    cut = len(text)
    for mark in ("; ", ", ", ": ", " -- ", ". "):
        at = text.find(mark)
        if 0 < at < cut:
            cut = at
    gist = text[:cut].strip(" .")
    return gist if len(gist) <= 60 else gist[:57].rsplit(" ", 1)[0] + " ..."


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
                from .suggest import did_you_mean

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
        gist = f" ({_gist(self.doc)})" if self.doc else ""
        if self.item_type is not None and isinstance(value, list):
            value = [_coerce(v, self.item_type, f"{where}[{i}]") for i, v in enumerate(value)]
            if self.length is not None and len(value) not in self.length:
                raise ValueError(f"{where} has {len(value)} items; the count {self.length.refusal(len(value))}{gist}")
            for i, item in enumerate(value):
                _check_number(item, self.item_bounds, f"{where}[{i}]", gist)
        if self.choices is not None and value not in self.choices:
            from .suggest import did_you_mean

            hint = did_you_mean(str(value), map(str, self.choices))
            raise ValueError(
                f"{where} = {value!r} is not one of {', '.join(map(repr, self.choices))}"
                + (hint if "did you mean" in hint else "")
            )
        _check_number(value, self.bounds, where, gist, shown=given)
        if self.check is not None:
            problem = self.check(value)
            if problem:
                raise ValueError(f"{where} = {value!r} {problem}{gist}")
        return value


def _coerce(value: Any, expected: type, where: str) -> Any:
    """``check_type``, and a whole float (``1e6``, as TOML and ``--set`` write big counts) where an int is expected."""
    if expected is int and isinstance(value, float) and value.is_integer():
        return int(value)
    return check_type(value, expected, where)


def _check_number(value: Any, bounds: Interval | None, where: str, gist: str, shown: Any = None) -> None:
    """Numbers are finite, lie in ``bounds`` when there are any, and ints fit a 64-bit counter.
    ``shown`` is the value as given (``1e+30`` rather than the int it converts to)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    shown = value if shown is None or isinstance(shown, bool) or not isinstance(shown, (int, float)) else shown
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} = {shown!r} {(bounds or Interval()).refusal(value)}{gist}")
    if bounds is not None and value not in bounds:
        raise ValueError(f"{where} = {shown!r} {bounds.refusal(value)}{gist}")
    if isinstance(value, int) and abs(value) > INT64_MAX:
        raise ValueError(f"{where} = {shown!r} is beyond what a 64-bit counter holds (2**63 - 1){gist}")


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


@dataclass(frozen=True)
class BackendSpec:
    """What one backend of an algorithm supports, and how neutral hyperparameters map onto it.

    ``settings`` turns the validated neutral hyperparameters (and the recipe) into the backend's own
    settings (a flat dict of plain values, shown by ``rlplug show``); it must not import torch.
    ``module`` is the import path of the backend module; it is imported only when this backend is built.
    """

    module: str
    action_spaces: tuple[str, ...]
    settings: Callable[[Mapping[str, Any], Any], dict[str, Any]] | None = None
    requires: tuple[str, ...] = ()  # import names of the libraries it needs, e.g. ("skrl",)
    extra: str = ""  # the pip extra of the core that installs them
    distributed: bool = False  # trains data-parallel under torchrun (``rlplug train --nproc N``)


@dataclass(frozen=True)
class LossSpec:
    """A loss a plugin contributes for one (algorithm, backend) cell.

    ``factory`` is ``"module:attribute"``: it is imported only when the loss is built. ``optimisers``
    maps each optimised term to the optimiser that steps on it (``{"loss_qvalue": "critic"}``); a cell
    with a single optimiser leaves it empty.
    """

    name: str
    backend: str
    factory: str
    terms: tuple[str, ...]
    reported: tuple[str, ...] = ()
    doc: str = ""
    optimisers: Mapping[str, str] = field(default_factory=dict)
    describe: str = ""  # optional "module:function" returning extra facts for ``rlplug losses``


@dataclass(frozen=True)
class AutoOrFloat(Param):
    """A hyperparameter that is either the string ``"auto"`` or a finite number (stored as a float)."""

    @property
    def domain_text(self) -> str:
        return f"'auto' | {self.bounds or 'any finite number'}"

    def validate(self, value: Any, where: str) -> Any:
        if value == "auto":
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = float(value)
            _check_number(value, self.bounds, where, f" ({_gist(self.doc)})" if self.doc else "")
            return value
        raise TypeError(f"{where} must be 'auto' or a number, got {type(value).__name__} {value!r}")


def both_backends(
    package: str,
    action_spaces: tuple[str, ...],
    skrl_settings: Callable[..., dict[str, Any]] | None,
    torchrl_settings: Callable[..., dict[str, Any]] | None,
    distributed: bool = False,
) -> dict[str, BackendSpec]:
    """The usual pair of backends: ``<package>.skrl_backend`` needing skrl and
    ``<package>.torchrl_backend`` needing torchrl and tensordict, installed by the core's extras."""
    return {
        "skrl": BackendSpec(
            f"{package}.skrl_backend", action_spaces, skrl_settings, requires=("skrl",), extra="skrl", distributed=distributed
        ),
        "torchrl": BackendSpec(
            f"{package}.torchrl_backend", action_spaces, torchrl_settings, requires=("torchrl", "tensordict"), extra="torchrl",
            distributed=distributed,
        ),
    }


@dataclass(frozen=True)
class AlgorithmSpec:
    """The declaration of one algorithm, as returned by ``rlplug_algorithms()``."""

    name: str
    summary: str
    kind: str
    backends: Mapping[str, BackendSpec]
    params: tuple[Param, ...]
    api_version: int
    default_loss: str = "default"
    losses: tuple[LossSpec, ...] = ()
    rules: tuple[Rule, ...] = ()
    """Cross-field constraints, checked after each hyperparameter passed its own domain."""
    # filled in by discovery: which distribution declared it
    plugin: str = field(default="", compare=False)
    plugin_version: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"algorithm {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        for backend, spec in self.backends.items():
            for space in spec.action_spaces:
                if space not in ACTION_SPACES:
                    raise ValueError(f"algorithm {self.name!r}/{backend}: unknown action space {space!r}")

    @property
    def param_map(self) -> dict[str, Param]:
        return {p.name: p for p in self.params}

    def defaults(self) -> dict[str, Any]:
        return {p.name: (list(p.default) if isinstance(p.default, list) else p.default) for p in self.params}

    def domains(self) -> dict[str, str]:
        """Each hyperparameter's domain in a few characters (``rlplug show`` prints them by the defaults)."""
        return {p.name: p.domain_text for p in self.params}

    def broken_rule(self, hp: Mapping[str, Any], recipe: Any) -> str | None:
        """The first of ``rules`` that ``hp`` (defaults filled in) and ``recipe`` break, as a line; else ``None``."""
        for rule in self.rules:
            problem = rule.refusal(hp, recipe)
            if problem:
                return problem
        return None


def declaration_problems(spec: Any) -> list[str]:
    """What is wrong with an ``rlplug_algorithms()`` item (an empty list: a well-formed ``AlgorithmSpec``).

    Dataclasses do not check field types, so a plugin can hand over a dict, or an ``AlgorithmSpec`` whose
    ``params`` hold dicts; discovery marks such a plugin broken with the first problem instead of failing
    later, in every command, on an attribute error.
    """
    if not isinstance(spec, AlgorithmSpec):
        return [f"it declared {type(spec).__name__} {_short(spec)}, not an rlplug.AlgorithmSpec"]
    where = f"algorithm {spec.name!r}"
    problems = []
    if not isinstance(spec.name, str) or not spec.name.strip():
        problems.append(f"an algorithm's name is {_short(spec.name)}, not a non-empty string")
    if not isinstance(spec.api_version, int) or isinstance(spec.api_version, bool):
        problems.append(f"{where}: api_version is {_short(spec.api_version)}, not an int")
    if not isinstance(spec.backends, Mapping) or not spec.backends:
        problems.append(f"{where}: backends is {_short(spec.backends)}, not a table of backend name -> BackendSpec")
    else:
        problems += [f"{where}: backend {k!r} is {_short(v)}, not a BackendSpec" for k, v in spec.backends.items()
                     if not isinstance(k, str) or not isinstance(v, BackendSpec)]
    for label, items, kind in (("params", spec.params, Param), ("losses", spec.losses, LossSpec), ("rules", spec.rules, Rule)):
        if not isinstance(items, (tuple, list)):
            problems.append(f"{where}: {label} is {_short(items)}, not a tuple of {kind.__name__}")
            continue
        problems += [f"{where}: {label} holds {_short(item)}, not a {kind.__name__}" for item in items if not isinstance(item, kind)]
    if not problems:
        names = [p.name for p in spec.params]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            problems.append(f"{where}: hyperparameter {twice[0]!r} is declared twice")
        unknown = [f for rule in spec.rules for f in rule.fields if f not in names and f not in _RULE_RECIPE_FIELDS]
        if unknown:
            problems.append(f"{where}: a rule names {unknown[0]!r}, which is neither a hyperparameter nor a recipe field")
    return problems


_RULE_RECIPE_FIELDS = ("steps", "seed", "num_envs", "eval_episodes", "env", "dataset")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
