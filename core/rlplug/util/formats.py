"""Refusing a file rlplug wrote in another format version: one line naming both versions and the writer.

A checkpoint, a dataset's ``metadata.json`` and an exported policy's metadata each carry a format number and the
rlplug version that wrote them; a number this rlplug does not read is refused by name (exit 2), never taken for a
corrupt file (which a checkpoint's loader would stand ``previous.pt`` in for and move aside).
"""

from __future__ import annotations

from typing import Any


def rlplug_version() -> str:
    from .. import __version__

    return __version__


def other_format(what: str, found: Any, writer: str | None, reads: int, kind: str, then: str) -> str:
    """``what has KIND FOUND, written by rlplug W; this rlplug V reads KIND READS; THEN``."""
    by = f"rlplug {writer}" if writer else "an rlplug that did not record its version"
    newer = isinstance(found, int) and not isinstance(found, bool) and found > reads
    hint = f"; {then}" if writer else ""
    return (f"{what} has {kind} {found!r}, written by {by}; this rlplug {rlplug_version()} reads {kind} {reads}"
            f"{' (the file is newer)' if newer else ''}{hint}")
