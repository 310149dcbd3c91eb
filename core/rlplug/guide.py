"""The plugin author's guide (docs/plugins.md), readable wherever rlplug is installed.

The wheel carries the file as ``rlplug/docs/plugins.md`` (pyproject's force-include); a source
checkout or an editable install reads it from the repository's ``docs/``.
"""

from __future__ import annotations

from pathlib import Path

from .errors import RlplugError

GUIDES = {"plugins": "plugins.md"}


def guide_path(topic: str = "plugins") -> Path:
    """Where the guide on ``topic`` is: inside the installed package, else in the source tree."""
    name = GUIDES[topic]
    here = Path(__file__).resolve().parent
    for candidate in (here / "docs" / name, here.parents[1] / "docs" / name):
        if candidate.is_file():
            return candidate
    raise RlplugError(f"the {topic} guide ({name}) is missing from this installation of rlplug; reinstall rlplug")


def guide_text(topic: str = "plugins") -> str:
    return guide_path(topic).read_text(encoding="utf-8")
