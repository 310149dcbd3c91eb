"""Parsing a recipe file, with the parse kept in ``marshal``'s format keyed by the file's bytes.

``tomllib`` is pure Python: importing it compiles a regular expression that alone costs ~9 ms, and parsing the
first-party registry ~5 ms, paid by every `rlplug recipes` and `show`. The parsed tables are stored under the user's
cache directory (``$XDG_CACHE_HOME/rlplug/toml``, else ``~/.cache/rlplug/toml``), named by the text's length, two
checksums and the interpreter (``marshal``'s format is the interpreter's, as ``__pycache__``'s is), and read back with
``marshal`` next time (built in: reading JSON imported the ``json`` package, ~1.4 ms of each command): an edited file
has other bytes, hence another name, and is parsed again. A table ``marshal`` cannot hold (a TOML date) is not cached;
a cache that cannot be read or written, or holds anything but a table, is ignored.
"""

from __future__ import annotations

import marshal
import os
import sys
import zlib
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rlplug" / "toml"


def loads(text: str) -> dict[str, Any]:
    """``tomllib.loads(text)``, from the cache when this text was parsed before. Raises what ``tomllib`` raises."""
    data = text.encode("utf-8")
    entry = cache_dir() / f"{len(data)}-{zlib.crc32(data):08x}-{zlib.adler32(data):08x}.{sys.implementation.cache_tag}.marshal"
    try:
        stored = marshal.loads(entry.read_bytes())
        if isinstance(stored, dict):
            return stored
    except (OSError, ValueError, EOFError, TypeError):  # absent, unreadable or damaged: parsed again
        pass
    import tomllib

    parsed = tomllib.loads(text)
    try:
        encoded = marshal.dumps(parsed)
    except ValueError:  # a date or time (TOML has them, marshal not), or absurd nesting
        return parsed
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        partial = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
        partial.write_bytes(encoded)
        os.replace(partial, entry)  # whole or absent: another process reads it at any moment
    except OSError:
        pass
    return parsed
