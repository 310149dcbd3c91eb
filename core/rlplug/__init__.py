"""rlplug: a plugin-based registry of reinforcement-learning algorithms for PyTorch.

Importing ``rlplug`` is cheap: torch, skrl and torchrl are imported only when a backend is built.
``__all__`` is what a plugin declares itself with and what a user's script calls; everything else lives in
the core's packages (``rlplug.errors`` holds every error class).
"""

from __future__ import annotations

from .api import build, load, register, resolve, save, session, train
from .contract.hookspecs import API_VERSION, Build, Trainer, hookimpl
from .contract.plugin import AlgorithmPlugin
from .errors import RlplugError
from .schema import AlgorithmSpec, AutoOrFloat, BackendSpec, LossSpec, Param, Rule, Search, both_backends

__version__ = "0.1.0"

__all__ = [
    # declaring a plugin
    "API_VERSION",
    "AlgorithmPlugin",
    "AlgorithmSpec",
    "AutoOrFloat",
    "BackendSpec",
    "LossSpec",
    "Param",
    "Rule",
    "Search",
    "both_backends",
    "hookimpl",
    # the contract a cell's stages see and fill
    "Build",
    "Trainer",
    # the Python API
    "build",
    "load",
    "register",
    "resolve",
    "save",
    "session",
    "train",
    # the base of every error rlplug raises
    "RlplugError",
]
