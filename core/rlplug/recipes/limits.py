"""The bounds rlplug puts on what it is given, in one place: each one turns an input that would exhaust
memory, the stack or the user's patience into one ``rlplug: error:`` line naming the limit.

Dependency-free, so the cheap paths (``rlplug list``, ``recipes``, ``show``) can use it.
"""

from __future__ import annotations

from typing import Any

MAX_RECIPE_FILE_BYTES = 4 * 1024 * 1024
"""A recipe file (``--recipes``, a plugin's, ``registry.toml``) is read up to this size; the first-party
registry is ~40 KB. A larger file, or one that is not a regular file (``/dev/zero``, a FIFO), is refused
before it is read."""
MAX_EXTENDS_DEPTH = 32
"""The most ``extends`` links one recipe's chain may follow (the first-party registry uses 2)."""
MAX_NESTING = 32
"""The deepest a recipe may nest tables and arrays (the recipe's own table is level 1; ``hyperparameters.
search.lr = {low, high}`` is level 3). Python's parser and ``copy.deepcopy`` recurse, and would exhaust
the stack a few hundred levels down."""
TRACKER_CONNECT_TIMEOUT_S = 5.0
"""How long opening an MLflow or W&B run waits for its server (a connection; an MLflow request while the
run is opened) before giving up with a line naming it."""
WANDB_INIT_TIMEOUT_S = 30.0
"""How long ``wandb.init`` may take once its server took the connection (W&B's own default is 90 s)."""


def nesting_depth(value: Any) -> tuple[int, str]:
    """How deep ``value`` nests dicts and lists (a scalar: 0, ``{"a": [1]}``: 2) and the top-level key of
    the deepest branch (``""`` for a list or a scalar). Iterative: a value too deep to recurse into is
    measured too."""
    deepest, where = 0, ""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        item, depth, top = stack.pop()
        if isinstance(item, dict):
            stack.extend((child, depth + 1, top if depth else str(key)) for key, child in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((child, depth + 1, top) for child in item)
        else:
            continue
        if depth + 1 > deepest:
            deepest, where = depth + 1, top
    return deepest, where
