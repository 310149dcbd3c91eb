"""Did-you-mean suggestions for unknown names."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or a list of the choices."""
    choices = sorted(set(choices))
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    if close:
        return f" (did you mean '{close[0]}'?)"
    if not choices:
        return ""
    if len(choices) <= 8:
        return f" (choose from: {', '.join(choices)})"
    return f" (e.g. {', '.join(choices[:8])}, ...)"
