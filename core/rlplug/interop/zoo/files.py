"""RL Baselines3 Zoo's hyperparameter files (``rl_zoo3/hyperparams/*.yml``), read as data.

The files ship inside the ``rl_zoo3`` wheel. They are located through the distribution's metadata and parsed
with ``yaml.safe_load``: neither ``rl_zoo3`` nor Stable-Baselines3 is imported (both import torch, and the Zoo
``eval``s its strings; rlplug parses them itself, ``rlplug.interop.zoo.sb3``).
"""

from __future__ import annotations

import functools
import importlib.metadata
from pathlib import Path
from typing import Any

from ...errors import RecipeError, ZooMissingError

DISTRIBUTION = "rl_zoo3"
INSTALL = "pip install 'rlplug[zoo]'"


def _missing(ref: str) -> ZooMissingError:
    return ZooMissingError(f"recipe '{ref}' is read from RL Baselines3 Zoo's hyperparameter files, which are not "
                           f"installed: {INSTALL}")  # fmt: skip


@functools.cache
def hyperparams_dir(ref: str = "zoo:...") -> Path:
    """The installed ``rl_zoo3/hyperparams`` directory."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise _missing(ref) from None
    for file in dist.files or ():
        if file.parent.name == "hyperparams" and file.suffix == ".yml":
            path = Path(str(dist.locate_file(file))).parent
            if path.is_dir():
                return path
    raise _missing(ref)


def zoo_version() -> str:
    return importlib.metadata.version(DISTRIBUTION)


@functools.cache
def load(algorithm: str, ref: str = "zoo:...") -> dict[str, dict[str, Any]]:
    """The entries of ``<algorithm>.yml`` (environment id -> Zoo keys); empty when the Zoo has no such file."""
    path = hyperparams_dir(ref) / f"{algorithm}.yml"
    if not path.is_file():
        return {}
    try:
        import yaml
    except ImportError:
        raise ZooMissingError(f"recipe '{ref}': reading RL Baselines3 Zoo's files needs PyYAML: {INSTALL}") from None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise RecipeError(f"recipe '{ref}': {path} cannot be read: {err}") from None
    if not isinstance(data, dict):
        raise RecipeError(f"recipe '{ref}': {path} is not a table of environments")
    return {str(env): dict(entry or {}) for env, entry in data.items()}
