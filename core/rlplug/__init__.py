"""rlplug: a plugin-based registry of reinforcement-learning algorithms for PyTorch.

Importing ``rlplug`` is cheap: torch, skrl and torchrl are imported only when a backend is built.
"""

from __future__ import annotations

from .api import build, load, register, resolve, save, session, train
from .errors import (
    BackendMissingError,
    ExportUnsupportedError,
    LossRegistrationError,
    NoReplayMemoryError,
    PluginError,
    RecipeError,
    RlplugError,
    RunDirError,
    SpaceError,
    UnknownNameError,
    VideoUnsupportedError,
)
from .contract.encoders import EncoderEntry, EncoderRegistrationError, EncoderRegistry
from .contract.hookspecs import API_VERSION, Build, CountsGradientSteps, ExportsPolicy, ExportsReplay, Trainer, hookimpl
from .contract.losses import LossEntry, LossRegistry
from .pipeline.session import Session
from .contract.plugin import AlgorithmPlugin
from .recipes.fields import Recipe
from .schema import AlgorithmSpec, AutoOrFloat, BackendSpec, Interval, LossSpec, Param, Rule, Search, both_backends

__version__ = "0.1.0"

__all__ = [
    "API_VERSION",
    "AlgorithmPlugin",
    "AlgorithmSpec",
    "AutoOrFloat",
    "BackendMissingError",
    "BackendSpec",
    "Build",
    "CountsGradientSteps",
    "EncoderEntry",
    "EncoderRegistrationError",
    "EncoderRegistry",
    "ExportUnsupportedError",
    "ExportsPolicy",
    "ExportsReplay",
    "Interval",
    "LossEntry",
    "LossRegistrationError",
    "LossRegistry",
    "LossSpec",
    "NoReplayMemoryError",
    "Param",
    "PluginError",
    "RecipeError",
    "RlplugError",
    "Rule",
    "RunDirError",
    "SpaceError",
    "Trainer",
    "UnknownNameError",
    "VideoUnsupportedError",
    "Recipe",
    "Search",
    "Session",
    "both_backends",
    "build",
    "hookimpl",
    "load",
    "register",
    "resolve",
    "save",
    "session",
    "train",
]
