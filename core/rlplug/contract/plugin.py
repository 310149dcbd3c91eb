"""``AlgorithmPlugin``: the hook implementations every first-party plugin shares.

A plugin's entry module declares its ``AlgorithmSpec``s and exposes ``plugin = AlgorithmPlugin(...)``.
Each construction hook imports the cell's backend module (only when that backend is built) and calls
its function of the same stage name: ``build_models``, ``build_memory``, ``build_loss`` (optional:
the registered loss factory is called otherwise), ``build_target_updater`` (optional) and
``build_trainer``.
"""

from __future__ import annotations

import importlib
from typing import Any

from .hookspecs import Build, hookimpl
from .losses import LossRegistry
from ..schema import AlgorithmSpec


class AlgorithmPlugin:
    """Implements the rlplug hooks for the algorithms it declares by dispatching to backend modules."""

    def __init__(self, *algorithms: AlgorithmSpec, recipes: list[dict[str, Any]] | None = None, source: str = "") -> None:
        self.algorithms = {spec.name: spec for spec in algorithms}
        self.recipes = recipes or []
        self.source = source

    def _backend_module(self, build: Build) -> Any | None:
        spec = self.algorithms.get(build.algorithm.name)
        if spec is None or build.backend not in spec.backends:
            return None
        return importlib.import_module(spec.backends[build.backend].module)

    def _dispatch(self, build: Build, stage: str) -> Any:
        module = self._backend_module(build)
        if module is None:
            return None
        function = getattr(module, stage, None)
        return None if function is None else function(build)

    @hookimpl
    def rlplug_algorithms(self) -> list[AlgorithmSpec]:
        return list(self.algorithms.values())

    @hookimpl
    def rlplug_recipes(self) -> list[dict[str, Any]]:
        return list(self.recipes)

    @hookimpl
    def rlplug_register_losses(self, losses: LossRegistry) -> None:
        for spec in self.algorithms.values():
            for loss in spec.losses:
                losses.register(
                    spec.name,
                    loss.backend,
                    loss.name,
                    loss.factory,
                    terms=loss.terms,
                    reported=loss.reported,
                    optimisers=dict(loss.optimisers),
                    doc=loss.doc,
                    source=self.source or spec.name,
                    describe=loss.describe or None,
                )

    @hookimpl
    def rlplug_build_models(self, build: Build) -> Any:
        return self._dispatch(build, "build_models")

    @hookimpl
    def rlplug_build_memory(self, build: Build) -> Any:
        return self._dispatch(build, "build_memory")

    @hookimpl
    def rlplug_build_loss(self, build: Build) -> Any:
        module = self._backend_module(build)
        if module is None:
            return None
        function = getattr(module, "build_loss", None)
        return function(build) if function is not None else build.loss_entry.build(build)

    @hookimpl
    def rlplug_build_target_updater(self, build: Build) -> Any:
        return self._dispatch(build, "build_target_updater")

    @hookimpl
    def rlplug_build_trainer(self, build: Build) -> Any:
        return self._dispatch(build, "build_trainer")

