"""What every command shares: the session its options describe, and JSON output."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def open_session(args: argparse.Namespace):
    """The plugins and recipes ``--plugin`` and ``--recipes`` add to the installed ones."""
    from ..pipeline.session import Session

    return Session(plugins=args.plugin or (), recipe_files=args.recipes or ())


def print_json(data: Any) -> None:
    import json  # here: the listing commands print tables unless --json

    print(json.dumps(data, indent=2))


def note(line: str | None) -> None:
    """A remark on stderr that is not an error (``rlplug: note: ...``)."""
    if line:
        print(f"rlplug: note: {line}", file=sys.stderr)
