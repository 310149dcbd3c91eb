"""rlplug: a plugin-based registry of reinforcement-learning algorithms for PyTorch.

Importing ``rlplug`` is cheap: torch, skrl and torchrl are imported only when a backend is built.
"""

from __future__ import annotations

from .api import build, load, register, resolve, save, session, train
from .errors import (
    BackendMissingError,
    LossRegistrationError,
    PluginError,
    RecipeError,
    RlplugError,
    RunDirError,
    SpaceError,
    UnknownNameError,
)
from .hookspecs import API_VERSION, Build, Trainer, hookimpl
from .losses import LossEntry, LossRegistry
from .pipeline import Session
from .plugin import AlgorithmPlugin
from .recipes import Recipe
from .schema import AlgorithmSpec, BackendSpec, LossSpec, Param

__version__ = "0.1.0"

__all__ = [
    "API_VERSION",
    "AlgorithmPlugin",
    "AlgorithmSpec",
    "BackendMissingError",
    "BackendSpec",
    "Build",
    "LossEntry",
    "LossRegistrationError",
    "LossRegistry",
    "LossSpec",
    "Param",
    "PluginError",
    "RecipeError",
    "RlplugError",
    "RunDirError",
    "SpaceError",
    "Trainer",
    "UnknownNameError",
    "Recipe",
    "Session",
    "build",
    "hookimpl",
    "load",
    "register",
    "resolve",
    "save",
    "session",
    "train",
]
