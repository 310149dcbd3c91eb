"""Importing a module a user names (an environment module, a plugin) from the current directory too, as
``python -m`` would: the ``rlplug`` console script starts with its own directory, not the current one, on
``sys.path``."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any


def import_from_here(module: str) -> Any:
    """``importlib.import_module(module)``, looking in the current directory as ``python -m`` does when the module is
    not found elsewhere: the directory joins the front of ``sys.path`` (where ``python -m`` puts it), so the vector
    env's worker processes, which start with this process's path, find it too."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        here = os.getcwd()
        if err.name != module.partition(".")[0] or any(os.path.abspath(p or ".") == here for p in sys.path):
            raise
    sys.path.insert(0, here)
    importlib.invalidate_caches()
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name == module.partition(".")[0]:
            sys.path.remove(here)  # not here either: the path stays as it was
        raise
