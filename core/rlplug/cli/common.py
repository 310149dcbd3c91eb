"""What every command shares: the session its options describe, and JSON output."""

from __future__ import annotations

import argparse
import json
from typing import Any


def open_session(args: argparse.Namespace):
    """The plugins and recipes ``--plugin`` and ``--recipes`` add to the installed ones."""
    from ..pipeline import Session

    return Session(plugins=args.plugin or (), recipe_files=args.recipes or ())


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2))
