"""``compile = true``: a cell's gradient step (loss, backward, optimiser step) through ``torch.compile``.

Declared torch-free in ``rlplug.families.optim`` (``COMPILE_MODES``); both backends wrap their update
function with ``compiled_step``. ``torch.compile`` with ``fullgraph=False``: TorchRL's and skrl's
Python (tensordicts, distributions, ``backward()``) may break the graph, and the pieces around the
breaks still compile. On CUDA the mode is ``"reduce-overhead"`` (CUDA graphs), elsewhere inductor's
``"default"``. The first call compiles; its wall time is the trainer's ``compile_seconds`` (the run's
summary reports it). Inductor's on-disk cache lives in rlplug's data directory (``inductor_cache_dir``),
so a second run of the same cell compiles from it, much faster.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def inductor_cache_dir() -> Path:
    """``$RLPLUG_DATA_DIR/_inductor-cache`` (the leading underscore keeps ``rlplug dataset list``, which
    reads every other directory there as a dataset, from listing it), else
    ``$XDG_DATA_HOME/rlplug/inductor-cache`` (``~/.local/share/rlplug/inductor-cache``), beside the datasets."""
    explicit = os.environ.get("RLPLUG_DATA_DIR")
    if explicit:
        return Path(explicit).expanduser() / "_inductor-cache"
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "rlplug" / "inductor-cache"


def use_inductor_cache() -> str:
    """Point ``TORCHINDUCTOR_CACHE_DIR`` at ``inductor_cache_dir()`` unless the user set it; returns the directory."""
    if not os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        path = inductor_cache_dir()
        path.mkdir(parents=True, exist_ok=True)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(path)
    return os.environ["TORCHINDUCTOR_CACHE_DIR"]


def compile_mode(device: Any) -> str:
    """``"reduce-overhead"`` (CUDA graphs) on a CUDA device, inductor's ``"default"`` elsewhere."""
    return "reduce-overhead" if str(device).startswith("cuda") else "default"


class CompiledStep:
    """``fn`` through ``torch.compile(mode=compile_mode(device), fullgraph=False)``; ``compile_seconds``
    is the wall time of the calls that compiled a graph (the first call; a stage or branch reached
    later compiles on its own first call), ``None`` before any."""

    def __init__(self, fn: Callable[..., Any], device: Any = "cpu") -> None:
        import torch

        use_inductor_cache()
        self.mode = compile_mode(device)
        self.eager = fn
        self.compiled = torch.compile(fn, mode=self.mode, fullgraph=False)
        self.compile_seconds: float | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from torch._dynamo.utils import counters

        graphs = counters["stats"]["unique_graphs"]
        started = time.perf_counter()
        out = self.compiled(*args, **kwargs)
        if counters["stats"]["unique_graphs"] != graphs:  # this call compiled (a first call, a new stage, a recompile)
            self.compile_seconds = (self.compile_seconds or 0.0) + time.perf_counter() - started
        return out


def compiled_step(fn: Callable[..., Any], settings: dict[str, Any], device: Any = "cpu") -> Callable[..., Any]:
    """``fn`` itself, or a ``CompiledStep`` of it when the cell's settings say ``compile``."""
    return CompiledStep(fn, device) if settings.get("compile") else fn


def compile_seconds(*steps: Any) -> float | None:
    """The summed first-call times of the ``CompiledStep``s among ``steps`` (``None`` if none compiled)."""
    times = [s.compile_seconds for s in steps if isinstance(s, CompiledStep) and s.compile_seconds is not None]
    return round(sum(times), 2) if times else None
