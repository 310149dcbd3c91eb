"""Commands as a reader can re-run them: a path inside the repository relative to its root, a path outside it (a
scratch folder of the machine that ran it) under the placeholder ``SCRATCH/``.

Reports record the command that produced them (``rlplug bench --report``, the benchmark scripts); an absolute path of
the machine they ran on (``--runs-dir /work/runs/s4/x``) cannot be re-run anywhere else. Dependency-free.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

SCRATCH = "SCRATCH"
"""Stands for a scratch directory of the reader's choosing: ``--runs-dir SCRATCH/s4/x``."""
REPOSITORY_ENTRIES = frozenset({"benchmarks", "core", "docs", "examples", "plugins", "tests", "registry.toml",
                                "BENCHMARKS.md", "BENCHMARKS.json", "README.md", "pyproject.toml"})  # fmt: skip
"""The repository's top level: an absolute path through one of these names is a path inside a checkout."""
_ABSOLUTE = re.compile(r"(?<![\w/:.~-])/(?:[\w.+@-]+/)*[\w.+@-]+")
"""An absolute POSIX path inside a recorded command (not ``steps/s``, not the ``//`` of a URL)."""


def portable_path(path: str, root: Path | None = None) -> str:
    """``path`` as a reader re-runs it: relative to the repository (``root``, or where a top-level name of the
    repository appears in it), else ``SCRATCH/`` and its last two names. A relative path is left as it is."""
    if not path.startswith("/"):
        return path
    if root is not None:
        try:
            return str(PurePosixPath(path).relative_to(PurePosixPath(str(root)))) or "."
        except ValueError:
            pass
    parts = PurePosixPath(path).parts[1:]
    for index, part in enumerate(parts):
        if index > 0 and part in REPOSITORY_ENTRIES:
            return "/".join(parts[index:])
    return f"{SCRATCH}/" + "/".join(parts[-2:] if len(parts) > 1 else parts)


def portable_command(words: Sequence[str], root: Path | None = None) -> str:
    """A command line (``sys.argv``-like words) with each absolute path, alone or after ``--option=``, portable."""
    out = []
    for word in words:
        option, equals, value = word.partition("=")
        if equals and option.startswith("-") and value.startswith("/"):
            out.append(f"{option}={portable_path(value, root)}")
        else:
            out.append(portable_path(word, root))
    return shlex.join(out)


def portable_text(command: str, root: Path | None = None) -> str:
    """A stored command string (one command, or several a merge joined, with their dates) with its absolute
    paths made portable; everything else, numbers and dates included, as it was."""
    return _ABSOLUTE.sub(lambda match: portable_path(match.group(0), root), command)


def repository_root() -> Path | None:
    """The checkout this rlplug runs from (the folder of ``registry.toml``), or ``None`` for an installed copy."""
    from ..recipes.files import first_party_registry

    registry = first_party_registry()
    return registry.parent.resolve() if registry is not None else None
