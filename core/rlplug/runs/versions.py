"""The versions a run directory records (``versions.json``) and ``rlplug doctor`` prints."""

from __future__ import annotations

import functools
import platform
import re
import subprocess
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path
from typing import Any

LIBRARIES = ("torch", "skrl", "torchrl", "tensordict", "gymnasium", "numpy", "pluggy", "rlplug")


def versions(build: Any = None) -> dict[str, str]:
    """Python's and every library's version, plus the run's plugin and what that plugin depends on."""
    found = {"python": platform.python_version()}
    names = list(LIBRARIES)
    if build is not None and build.algorithm.plugin:
        names.append(build.algorithm.plugin)
        names.extend(_requirement_names(build.algorithm.plugin))  # e.g. mpe2, vmas for rlplug-mappo
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    found["rlplug_source"] = source_commit() or "not a git checkout"
    return found


# core/rlplug/runs/versions.py -> the checkout's root (a wheel's site-packages has no .git there)
_CHECKOUT = Path(__file__).resolve().parents[3]


@functools.lru_cache(maxsize=None)
def source_commit(root: Path = _CHECKOUT) -> str | None:
    """The commit of the rlplug checkout this code runs from (``-dirty`` with uncommitted edits), so a
    bench row says which code measured it; ``None`` for an installed wheel."""
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=12", "--exclude=*"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def _requirement_names(distribution: str) -> list[str]:
    """Names of what ``distribution`` depends on (extras and markers ignored), beyond rlplug itself."""
    try:
        lines = requires(distribution) or []
    except PackageNotFoundError:
        return []
    names = [re.split(r"[\s<>=!~;\[(]", line, maxsplit=1)[0] for line in lines if "extra ==" not in line]
    return [n for n in names if n and n != "rlplug" and n not in LIBRARIES]
