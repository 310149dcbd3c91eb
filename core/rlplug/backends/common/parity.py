"""Config parity: every argument of a library class a cell builds is a recipe setting or excluded by name.

The rule (issue 30, stricter than TorchRL's own Hydra-config test, which checks names only): for each
constructor argument of a TorchRL class a cell constructs, and each field of an skrl agent config it
fills, a parity table says either ``Setting(name)`` (the cell's backend setting ``name`` feeds it and,
at the algorithm's neutral defaults, has the library's default value) or ``Excluded(reason)``. A
setting whose default differs from the library's on purpose says why in ``differs``. An argument a
library upgrade adds, one it removes, or a default that drifts is a problem, named by ``problems``.

The tables themselves live next to the classes they describe (``rlplug.backends.torchrl.parity``,
``rlplug.backends.skrl.parity``); this module is the library-neutral check. No torch imports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Union

REQUIRED = object()
"""The "default" of an argument the library makes the caller pass (nothing to compare)."""

KNOWN_DIFFERENCE = "known difference: no reason recorded in the code or the registry (reported to the lead)"
"""``differs`` of a setting whose default is not the library's and nobody wrote down why."""


@dataclass(frozen=True)
class Setting:
    """The argument is the cell's backend setting ``name`` (``rlplug show NAME --backend B`` prints it).

    ``convert`` turns the setting into the argument where the cell does (a hard-copy period into
    ``HardUpdate``'s interval); ``differs`` is why its default is not the library's ("" = it must be).
    """

    name: str
    differs: str = ""
    convert: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class Excluded:
    """The argument is not a recipe setting, for ``reason`` (one line)."""

    reason: str


Entry = Union[Setting, Excluded, Mapping[str, Union[Setting, Excluded]]]
"""A table entry; a mapping gives one per family (``"on-policy"``, ``"off-policy"``, ``"offline"``)
where the same class is fed from different settings by different families' building blocks, or one for an
algorithm (its name) that feeds an argument otherwise than the rest of its family (CrossQ's ``polyak``)."""

Table = Mapping[str, Entry]


def resolve(entry: Entry | None, family: str | tuple[str, ...]) -> Setting | Excluded | None:
    """The entry that applies to ``family`` (``None``: the table does not cover the argument there); a tuple of
    keys is tried in order (an algorithm's name before its family's)."""
    if isinstance(entry, Mapping):
        for key in (family,) if isinstance(family, str) else family:
            if key in entry:
                return entry[key]
        return None
    return entry


def problems(owner: str, arguments: Mapping[str, Any], table: Table | None, settings: Mapping[str, Any],
             family: str | tuple[str, ...]) -> list[str]:  # fmt: skip
    """What breaks parity between ``arguments`` (name -> library default, or ``REQUIRED``) of ``owner``
    and its ``table``, given the cell's backend ``settings`` at the algorithm's neutral defaults."""
    if table is None:
        return [f"{owner}: no parity table (add one: every argument mapped to a setting or excluded with a reason)"]
    found = []
    for name, default in arguments.items():
        entry = resolve(table.get(name), family)
        where = f"{owner}.{name}"
        if entry is None:
            scope = f" ({family if isinstance(family, str) else family[-1]})" if family else ""
            found.append(f"{where}: not in the parity table{scope}; map it to a recipe setting or exclude it with a reason")
        elif isinstance(entry, Setting):
            if entry.name not in settings:
                found.append(f"{where}: mapped to setting '{entry.name}', which this cell's settings do not have")
                continue
            if default is REQUIRED:
                continue
            value = settings[entry.name] if entry.convert is None else entry.convert(settings[entry.name])
            same = _same(value, default)
            if not same and not entry.differs:
                found.append(f"{where}: recipe default {value!r} (setting '{entry.name}') differs from the library's {default!r}")
            elif same and entry.differs:
                found.append(f"{where}: listed as a default difference, but both are {default!r} now; drop 'differs'")
    for name in table:
        if name not in arguments:
            found.append(f"{owner}.{name}: in the parity table but no longer an argument of the library class")
    return found


def counts(arguments: Mapping[str, Any], table: Table, family: str | tuple[str, ...]) -> dict[str, int]:
    """How the table covers ``arguments``: mapped (same default), differs (mapped, default differs), excluded."""
    tally = {"mapped": 0, "differs": 0, "excluded": 0}
    for name in arguments:
        entry = resolve(table.get(name), family)
        if isinstance(entry, Setting):
            tally["differs" if entry.differs else "mapped"] += 1
        elif isinstance(entry, Excluded):
            tally["excluded"] += 1
    return tally


def differences(table: Table, family: str | tuple[str, ...]) -> dict[str, str]:
    """``{argument: why}`` for the settings whose default differs from the library's."""
    out = {}
    for name, entry in table.items():
        entry = resolve(entry, family)
        if isinstance(entry, Setting) and entry.differs:
            out[name] = entry.differs
    return out


def _same(value: Any, default: Any) -> bool:
    """Equal as configuration values: a list setting equals a tuple default with the same items."""
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return list(value) == list(default)
    try:
        return bool(value == default)
    except (TypeError, ValueError, RuntimeError):  # tensors, specs: not comparable as config values
        return False
