"""``rlplug doctor``'s check of installed versions against the tested set: each installed distribution that
``constraints.txt`` pins (when the file is there: a source checkout) at another version, and each one an extra
of rlplug requires outside the extra's range, with the command that puts it back. Read from metadata only."""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Callable
from pathlib import Path

from .extras import installed_version

PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)")


def constraints_path() -> Path | None:
    """``constraints.txt`` beside the core's ``pyproject.toml`` (a source checkout, editable or not); ``None`` for
    an installed wheel, which does not carry it."""
    root = Path(__file__).resolve().parents[3]
    path = root / "constraints.txt"
    return path if path.is_file() and (root / "pyproject.toml").is_file() else None


def pins(text: str) -> dict[str, str]:
    """``{distribution: version}`` of a constraints file's ``name==version`` lines (comments and blanks skipped)."""
    return {m.group(1): m.group(2) for line in text.splitlines() if (m := PIN.match(line))}


def matches(version: str, specifier: str) -> bool | None:
    """Whether ``version`` is in ``specifier`` (PEP 440: ``==2.13.0`` takes ``2.13.0+cpu``); ``None`` without
    ``packaging`` to tell."""
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
        from packaging.version import InvalidVersion
    except ImportError:
        return None
    try:
        return SpecifierSet(specifier).contains(version, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return None


def off_pins(pinned: dict[str, str], constraints: str, version_of: Callable[[str], str | None] = installed_version) -> list[str]:
    lines = []
    for name, wanted in pinned.items():
        have = version_of(name)
        if have is not None and matches(have, f"=={wanted}") is False:
            lines.append(f"{name} {have} is off {Path(constraints).name} ({wanted}): pip install -c {constraints} '{name}=={wanted}'")
    return lines


def extra_ranges(requires: list[str] | None = None) -> list[tuple[str, str, str]]:
    """``(extra, distribution, specifier)`` of each requirement of rlplug's extras, from its metadata."""
    if requires is None:
        try:
            requires = importlib.metadata.requires("rlplug") or []
        except importlib.metadata.PackageNotFoundError:
            return []
    found = []
    for line in requires:
        requirement, _, marker = line.partition(";")
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
        head = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(.*)", requirement)
        if extra and head and head.group(2).strip():
            found.append((extra.group(1), head.group(1), head.group(2).strip().strip("()")))
    return found


def outside_ranges(ranges: list[tuple[str, str, str]], constraints: str | None,
                   version_of: Callable[[str], str | None] = installed_version) -> list[str]:  # fmt: skip
    lines, seen = [], set()
    for extra, name, specifier in ranges:
        have = version_of(name)
        if have is None or (name, specifier) in seen or matches(have, specifier) is not False:
            continue
        seen.add((name, specifier))
        fix = f"pip install -c {constraints} 'rlplug[{extra}]'" if constraints else f"pip install '{name}{specifier}'"
        lines.append(f"{name} {have} is outside rlplug[{extra}]'s range {specifier}: {fix}")
    return lines


def install_command(extra: str) -> str:
    """``pip install 'rlplug[EXTRA]'``, with ``-c constraints.txt`` where the file is there (the tested versions)."""
    path = constraints_path()
    return f"pip install -c {path} 'rlplug[{extra}]'" if path is not None else f"pip install 'rlplug[{extra}]'"


def pin_lines() -> list[str]:
    """What ``rlplug doctor`` prints under "tested versions": one line per distribution off the tested set, or one
    line saying all are on it."""
    path = constraints_path()
    constraints = str(path) if path is not None else None
    lines = outside_ranges(extra_ranges(), constraints)
    if path is not None:
        pinned = pins(path.read_text(encoding="utf-8"))
        off = off_pins(pinned, constraints)
        lines = off + [line for line in lines if line.split(" ", 1)[0] not in {o.split(" ", 1)[0] for o in off}]
        if not lines:
            installed = sum(1 for name in pinned if installed_version(name) is not None)
            lines = [f"every installed distribution that {path.name} pins ({installed} of {len(pinned)}) is at its pinned version"]
    elif not lines:
        lines = ["every installed extra's distributions are within rlplug's ranges (no constraints.txt here to check pins)"]
    return lines
