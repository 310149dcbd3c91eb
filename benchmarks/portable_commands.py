"""Rewrite the commands stored in benchmark results so that a reader can re-run them: absolute paths of the machine
that ran them become paths relative to the repository, or ``SCRATCH/...`` for a scratch folder outside it
(``rlplug.util.commands.portable_text``, the rule new reports are recorded by).

Only command strings change: a JSON file's ``command`` values (and a row's, where rows carry one) and, in a Markdown
report, the backticked commands (``Produced by `rlplug bench ...```). Every number, date, run directory and other
field stays byte for byte; each JSON file is checked to load to the same data apart from its commands.

    python benchmarks/portable_commands.py [FILE ...]        # default: benchmarks/results/*.json and *.md
    python benchmarks/portable_commands.py --check           # list what would change, change nothing
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from rlplug.util.commands import portable_text

HERE = Path(__file__).resolve().parent
COMMAND_KEYS = ("command",)
_BACKTICKED = re.compile(r"`((?:rlplug|python|RLPLUG_\w+=)[^`]*)`")


def commands(data: Any) -> list[str]:
    """Every command string in ``data`` (the values of ``COMMAND_KEYS`` at any depth)."""
    found: list[str] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key in COMMAND_KEYS and isinstance(value, str):
                found.append(value)
            else:
                found += commands(value)
    elif isinstance(data, list):
        for item in data:
            found += commands(item)
    return found


def without_commands(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: (None if k in COMMAND_KEYS and isinstance(v, str) else without_commands(v)) for k, v in data.items()}
    if isinstance(data, list):
        return [without_commands(item) for item in data]
    return data


def rewrite_json(text: str) -> str:
    """The file's text with each command's JSON string replaced in place (the rest of the text untouched)."""
    data = json.loads(text)
    for old in sorted(set(commands(data)), key=len, reverse=True):
        new = portable_text(old)
        if new != old:
            for ascii_only in (True, False):
                text = text.replace(json.dumps(old, ensure_ascii=ascii_only), json.dumps(new, ensure_ascii=ascii_only))
    after = json.loads(text)
    if without_commands(after) != without_commands(data):
        raise SystemExit("a rewrite touched something other than a command; nothing written")
    return text


def rewrite_markdown(text: str) -> str:
    return _BACKTICKED.sub(lambda m: f"`{portable_text(m.group(1))}`", text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="list the files that would change; write nothing")
    args = parser.parse_args()
    files = args.files or sorted([*(HERE / "results").glob("*.json"), *(HERE / "results").glob("*.md")])
    changed = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        new = rewrite_json(text) if path.suffix == ".json" else rewrite_markdown(text)
        if new != text:
            changed.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    verb = "would rewrite" if args.check else "rewrote"
    print(f"{verb} the commands of {len(changed)} file(s)" + "".join(f"\n  {p}" for p in changed), file=sys.stderr)
    if args.check and changed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
