"""The ``rlplug.plugins`` entry points, kept between commands.

Finding them with ``importlib.metadata`` means importing it (``email``, ``zipfile``, ``csv``, ...) and reading every
installed distribution's ``entry_points.txt`` (about 200 here): together most of what every command pays beyond the
interpreter's own start (issue 51). The scan's result (each entry point's name and value, its distribution's name and
version) is kept under the user's cache directory (``$XDG_CACHE_HOME/rlplug``, else ``~/.cache/rlplug``) with a
fingerprint of what it was read from: ``sys.path``, and for each ``*.dist-info`` / ``*.egg-info`` on it the size and
modification time of its ``entry_points.txt`` and ``METADATA`` (``PKG-INFO``). Installing, upgrading, removing or
editing a distribution changes the fingerprint, and the next command scans again. The fingerprint is ~400 ``stat``
calls (~3 ms); a cache that cannot be read or written is ignored, as ``rlplug.util.tomlcache``'s is.
"""

from __future__ import annotations

import marshal
import os
import sys
import zlib
from pathlib import Path
from typing import Any

from ..util.tomlcache import cache_dir

EntryPoint = tuple[str, str, str, str]
"""``(name, value, distribution name, distribution version)``."""

_METADATA_FILES = ("entry_points.txt", "METADATA", "PKG-INFO")


def _file_stamp(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


def fingerprint() -> tuple[Any, ...]:
    """What the scan depends on: every ``sys.path`` entry and the metadata files of the distributions found there."""
    parts: list[Any] = []
    for entry in sys.path:
        parts.append(entry)
        try:
            listing = os.scandir(entry or ".")
        except (NotADirectoryError, FileNotFoundError):
            parts.append(_file_stamp(entry))  # a zip (or a missing entry): its own time stands for what it holds
            continue
        except OSError:
            continue
        with listing:
            for item in sorted(listing, key=lambda e: e.name):
                if not item.name.endswith((".dist-info", ".egg-info")):
                    continue
                if item.is_dir():
                    parts.append((item.name, *(_file_stamp(os.path.join(item.path, f)) for f in _METADATA_FILES)))
                else:  # an .egg-info file is the metadata itself
                    parts.append((item.name, _file_stamp(item.path)))
    return tuple(parts)


def _cache_file() -> Path:
    """One file per interpreter and ``sys.path`` (the ``rlplug`` script's and ``python -m``'s differ in their first
    entry): alternating between them keeps both warm."""
    paths = "\0".join([sys.prefix, *sys.path]).encode("utf-8", "surrogateescape")
    name = f"{sys.implementation.cache_tag}-{zlib.crc32(paths):08x}-{zlib.adler32(paths):08x}.marshal"
    return cache_dir().parent / "entry-points" / name


def _scan(group: str) -> list[EntryPoint]:
    from importlib.metadata import entry_points

    found = []
    for ep in entry_points(group=group):
        # the metadata parsed once for both fields (``Distribution.name`` and ``.version`` each parse it again)
        metadata = ep.dist.metadata if ep.dist is not None else {"Name": "?", "Version": ""}
        found.append((ep.name, ep.value, str(metadata["Name"]), str(metadata["Version"] or "")))
    return found


def entry_points_of(group: str) -> list[EntryPoint]:
    """The entry points of ``group``, from the cache while its fingerprint holds, else scanned (and cached)."""
    stamp = (group, fingerprint())
    path = _cache_file()
    try:
        stored = marshal.loads(path.read_bytes())
        if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == stamp:
            return [tuple(ep) for ep in stored[1]]  # type: ignore[misc]
    except (OSError, ValueError, EOFError, TypeError):  # absent, unreadable or damaged: scanned again
        pass
    found = _scan(group)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        partial.write_bytes(marshal.dumps((stamp, found)))
        os.replace(partial, path)  # whole or absent: another process reads it at any moment
    except (OSError, ValueError):
        pass
    return found
