"""Types and number domains: type checks, intervals with open or closed ends, and the checks every
declared number passes (finite, inside its bounds, within a 64-bit counter)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

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
    base, power, exponent = text.partition("**")  # B**E or B**E-1, read without a regex: see Interval.parse
    if power:
        minus_one = exponent.endswith("-1")
        exponent = exponent[:-2] if minus_one else exponent
        digits = base[1:] if base.startswith("-") else base
        if digits.isascii() and digits.isdigit() and exponent.isascii() and exponent.isdigit():
            return int(base) ** int(exponent) - (1 if minus_one else 0)
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
        # string operations, not a regex: the first regex a process compiles costs milliseconds, and every command
        # parses the bounds of every plugin's parameters at its start
        stripped = text.strip()
        ends = stripped[1:-1].split(",") if len(stripped) >= 2 else []
        if (len(ends) != 2 or stripped[0] not in "[(" or stripped[-1] not in "])"
                or not ends[0].strip() or not ends[1].strip()):  # fmt: skip
            raise ValueError(f"bounds {text!r} are not an interval such as '[0, 1]' or '(0, inf)'")
        try:
            low, high = _number(ends[0]), _number(ends[1])
        except ValueError:
            raise ValueError(f"bounds {text!r}: the ends must be numbers, inf, or B**E (- 1)") from None
        if low > high:
            raise ValueError(f"bounds {text!r}: the low end is above the high end")
        return cls(
            None if low == -math.inf else low,
            None if high == math.inf else high,
            low_open=stripped[0] == "(",
            high_open=stripped[-1] == ")",
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
    return _parsed_interval(bounds) if isinstance(bounds, str) else bounds


@functools.lru_cache(maxsize=None)
def _parsed_interval(text: str) -> Interval:
    """Each bounds text parsed once (an ``Interval`` is frozen): every plugin's parameters are declared at every
    command's start, and most share a handful of bounds."""
    return Interval.parse(text)


def _coerce(value: Any, expected: type, where: str) -> Any:
    """``check_type``, and a whole float (``1e6``, as TOML and ``--set`` write big counts) where an int is expected."""
    if expected is int and isinstance(value, float) and value.is_integer():
        return int(value)
    return check_type(value, expected, where)


def _check_number(value: Any, bounds: Interval | None, where: str, doc: str, shown: Any = None) -> None:
    """Numbers are finite, lie in ``bounds`` when there are any, and ints fit a 64-bit counter.
    ``shown`` is the value as given (``1e+30`` rather than the int it converts to); a refusal ends with the gist
    of ``doc``, the parameter's doc (``_remark``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    shown = value if shown is None or isinstance(shown, bool) or not isinstance(shown, (int, float)) else shown
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} = {shown!r} {(bounds or Interval()).refusal(value)}{_remark(doc)}")
    if bounds is not None and value not in bounds:
        raise ValueError(f"{where} = {shown!r} {bounds.refusal(value)}{_remark(doc)}")
    if isinstance(value, int) and abs(value) > INT64_MAX:
        raise ValueError(f"{where} = {shown!r} is beyond what a 64-bit counter holds (2**63 - 1){_remark(doc)}")


def _remark(doc: str) -> str:
    """`` (the gist of doc)`` to end a refusal with, or nothing without a doc. Made only when a value is refused:
    every installed plugin's defaults are validated at start-up (439 of them), where it cost ~3 ms."""
    return f" ({_gist(doc)})" if doc else ""


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
