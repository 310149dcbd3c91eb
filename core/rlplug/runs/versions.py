"""The versions a run directory records (``versions.json``) and ``rlplug doctor`` prints."""

from __future__ import annotations

import platform
import re
from importlib.metadata import PackageNotFoundError, requires, version
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
    return found


def _requirement_names(distribution: str) -> list[str]:
    """Names of what ``distribution`` depends on (extras and markers ignored), beyond rlplug itself."""
    try:
        lines = requires(distribution) or []
    except PackageNotFoundError:
        return []
    names = [re.split(r"[\s<>=!~;\[(]", line, maxsplit=1)[0] for line in lines if "extra ==" not in line]
    return [n for n in names if n and n != "rlplug" and n not in LIBRARIES]
