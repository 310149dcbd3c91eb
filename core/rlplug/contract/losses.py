"""The registry of named losses per (algorithm, backend); built-ins register here like users' losses."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import LossRegistrationError
from ..util.suggest import did_you_mean


@dataclass(frozen=True)
class LossEntry:
    """One registered loss.

    ``factory(build)`` returns the loss object: on TorchRL a ``LossModule``; on skrl an object called
    as ``loss(agent, batch, epoch)`` that returns a dict of term tensors. ``terms`` are the outputs
    that are summed and optimised; ``reported`` are logged only. ``optimisers`` maps each optimised
    term to the optimiser group that steps on it (cells with one optimiser may leave it empty).
    """

    algorithm: str
    backend: str
    name: str
    factory: Callable[[Any], Any]
    terms: tuple[str, ...]
    reported: tuple[str, ...] = ()
    optimisers: tuple[tuple[str, str], ...] = ()
    doc: str = ""
    source: str = ""  # who registered it: the distribution (or, not installed, the module) that called register
    describe: Callable[[], dict[str, Any]] | None = None
    """Optional: extra facts for ``rlplug losses`` (TorchRL: accepted ``set_keys`` fields, estimator)."""

    def build(self, build: Any) -> Any:
        return self.factory(build)


def import_attribute(path: str) -> Any:
    """Import ``"package.module:attribute"``; only ever called on paths a plugin registered."""
    module_name, _, attribute = path.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


class LossRegistry:
    """Named losses per cell. ``register`` refuses a taken name unless ``override=True``.

    ``sources`` maps a top-level package to the distribution that ships it (discovery fills it for every
    loaded plugin): a loss registered without ``source`` is credited to the distribution of the module that
    called ``register``, else to that module (a ``--plugin`` module, a script), else ``"user"``.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str, str], LossEntry] = {}
        self.sources: dict[str, str] = {}

    def registering_source(self, module: str) -> str:
        top = module.partition(".")[0]
        return self.sources.get(top) or (module if module and module != "__main__" else "user")

    def register(
        self,
        algorithm: str,
        backend: str,
        name: str,
        factory: Callable[[Any], Any] | str,
        *,
        terms: tuple[str, ...] | list[str],
        reported: tuple[str, ...] | list[str] = (),
        optimisers: dict[str, str] | None = None,
        doc: str = "",
        source: str | None = None,
        describe: Callable[[], dict[str, Any]] | str | None = None,
        override: bool = False,
    ) -> LossEntry:
        if source is None:
            source = self.registering_source(sys._getframe(1).f_globals.get("__name__", ""))
        key = (algorithm, backend, name)
        if key in self._entries and not override:
            old = self._entries[key]
            raise LossRegistrationError(
                f"loss '{name}' for {algorithm}/{backend} is already registered by {old.source or 'another plugin'}; "
                "pass override=True to replace it"
            )
        if isinstance(factory, str):
            path = factory
            factory = lambda build, _path=path: import_attribute(_path)(build)  # noqa: E731
        if isinstance(describe, str):
            describe_path = describe
            describe = lambda _path=describe_path: import_attribute(_path)()  # noqa: E731
        entry = LossEntry(
            algorithm=algorithm,
            backend=backend,
            name=name,
            factory=factory,
            terms=tuple(terms),
            reported=tuple(reported),
            optimisers=tuple((optimisers or {}).items()),
            doc=doc,
            source=source,
            describe=describe,
        )
        self._entries[key] = entry
        return entry

    def get(self, algorithm: str, backend: str, name: str) -> LossEntry:
        try:
            return self._entries[(algorithm, backend, name)]
        except KeyError:
            names = [n for (a, b, n) in self._entries if (a, b) == (algorithm, backend)]
            raise LossRegistrationError(
                f"unknown loss '{name}' for {algorithm}/{backend}" + did_you_mean(name, names)
            ) from None

    def names(self, algorithm: str, backend: str) -> list[str]:
        return sorted(n for (a, b, n) in self._entries if (a, b) == (algorithm, backend))

    def entries(self, algorithm: str | None = None) -> list[LossEntry]:
        return [e for k, e in sorted(self._entries.items()) if algorithm is None or e.algorithm == algorithm]

    def __contains__(self, key: tuple[str, str, str]) -> bool:
        return key in self._entries
