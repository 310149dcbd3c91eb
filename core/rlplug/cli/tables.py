"""Plain-text output helpers for the CLI: aligned tables and a small TOML writer for ``rlplug show``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

try:  # what json.dumps(a_string) calls, without importing the json package (~1.2 ms of `rlplug show`)
    from _json import encode_basestring_ascii as _quoted
except ImportError:  # an interpreter without the C accelerator
    from json.encoder import py_encode_basestring_ascii as _quoted


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def toml_value(value: Any) -> str:
    """A plain value as TOML text (``3e-4``, ``true``, ``[64, 64]``, ``"x"``); ``TypeError`` for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        # TOML has no null: an inline table leaves ``None`` entries out (a top-level one is a comment line)
        return "{ " + ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items() if v is not None) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _key(key: str) -> str:
    if key.replace("-", "").replace("_", "").isalnum():
        return key
    return _quoted(key)


def to_toml(table: Mapping[str, Any], prefix: str = "", comments: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """TOML text for a table of plain values; ``None`` values are written as comments (TOML has no null).

    ``comments`` maps a table's dotted name (``""`` for the top level) to trailing comments by key:
    ``{"hyperparameters": {"gamma": "[0, 1]"}}`` writes ``gamma = 0.99  # [0, 1]``.
    """
    comments = comments or {}
    notes = comments.get(prefix, {})
    plain, nested = [], []
    for key, value in table.items():
        if isinstance(value, Mapping) and value and all(not isinstance(v, Mapping) or not v for v in value.values()):
            nested.append((key, value))
            continue
        line = f"# {_key(key)} = (none)" if value is None else f"{_key(key)} = {toml_value(value)}"
        if notes.get(key):
            line += f"  # {notes[key]}"
        plain.append(line)
    out = []
    if prefix:
        out.append(f"[{prefix}]")
    out.extend(plain)
    for key, value in nested:
        out.append("")
        out.append(to_toml(value, f"{prefix}.{_key(key)}" if prefix else _key(key), comments))
    return "\n".join(out)
