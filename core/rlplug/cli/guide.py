"""The plugin author's guide (docs/plugins.md), readable wherever rlplug is installed.

The wheel carries the file as ``rlplug/docs/plugins.md`` and the repository's ``examples/`` (the plugins the
guide walks through) as ``rlplug/examples/`` (pyproject's force-include); a source checkout or an editable
install reads both from the repository.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RlplugError

GUIDES = {"plugins": "plugins.md"}


def guide_path(topic: str = "plugins") -> Path:
    """Where the guide on ``topic`` is: inside the installed package, else in the source tree."""
    name = GUIDES[topic]
    return _shipped(Path("docs") / name, f"the {topic} guide ({name})")


def examples_path() -> Path:
    """The folder of example plugins the guide names (``rlplug guide --examples``)."""
    return _shipped(Path("examples"), "the example plugins")


def _shipped(relative: Path, what: str) -> Path:
    here = Path(__file__).resolve().parents[1]  # the rlplug package
    for candidate in (here / relative, here.parents[1] / relative):
        if candidate.exists():
            return candidate
    raise RlplugError(f"{what} ({relative}) is missing from this installation of rlplug; reinstall rlplug")


def guide_text(topic: str = "plugins") -> str:
    return guide_path(topic).read_text(encoding="utf-8")
