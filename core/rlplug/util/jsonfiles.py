"""Reading the JSON files rlplug writes (recipe.json, summary.json, trackers.json, a dataset's metadata.json).

Torch-free and dependency-free, so ``rlplug compare`` and ``rlplug dataset info`` can read them cheaply.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import RlplugError


def read_json_object(path: Path, error: type[RlplugError]) -> dict[str, Any]:
    """The JSON object in ``path``, or ``error`` with one line: why it cannot be read, or what it holds instead."""
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        raise error(f"cannot read {path}: {err.strerror or type(err).__name__}") from None
    except ValueError as err:
        raise error(f"{path} is unreadable: {err}") from None
    if not isinstance(data, dict):
        raise error(f"{path} is unreadable: a JSON {type(data).__name__}, not an object")
    return data
