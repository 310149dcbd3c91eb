"""Global RNGs of python ``random``, numpy and torch: seeding them, and their states as tensors and
numbers for ``weights_only`` checkpoints. torch is imported only when a function needs it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import importlib.util

import numpy as np


def seed_all(seed: int) -> None:
    """Seed python ``random``, numpy's global generator and, when it is installed, torch."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.manual_seed(seed)


def capture_rng_state() -> dict[str, Any]:
    """torch, numpy (legacy global) and python ``random`` states as tensors, numbers and lists; with VMAS imported,
    also the private copies of the three it swaps in around every reset and step (``vmas_random_state``)."""
    import torch

    state = _encoded(torch.get_rng_state(), np.random.get_state(legacy=True), random.getstate())
    vmas = _vmas_random_state()
    if vmas is not None:
        state["vmas"] = _encoded(*vmas)
    return state


def restore_rng_state(state: Mapping[str, Any]) -> None:
    """Undo ``capture_rng_state``."""
    import torch

    torch_state, numpy_state, python_state = _decoded(state)
    torch.set_rng_state(torch_state)
    np.random.set_state(numpy_state)
    random.setstate(python_state)
    vmas = _vmas_random_state()
    if vmas is not None and "vmas" in state:
        vmas[:] = list(_decoded(state["vmas"]))


def _vmas_random_state() -> list[Any] | None:
    """VMAS keeps its own torch, numpy and python RNG states, class-wide (``Environment.vmas_random_state``), and
    swaps them in around every reset and step: a scenario's random spawns draw from those, not the globals."""
    import sys

    module = sys.modules.get("vmas.simulator.environment.environment")
    return None if module is None else module.Environment.vmas_random_state


def _encoded(torch_state: Any, numpy_state: tuple[Any, ...], python_state: tuple[Any, ...]) -> dict[str, Any]:
    import torch

    _, keys, position, has_gauss, cached_gaussian = numpy_state
    version, internal, gauss_next = python_state
    return {
        "torch": torch_state.clone(),
        "numpy": {
            "keys": torch.from_numpy(np.asarray(keys).astype(np.int64)),
            "position": int(position),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "python": {"version": int(version), "internal": torch.tensor(internal, dtype=torch.int64), "gauss_next": gauss_next},
    }


def _decoded(state: Mapping[str, Any]) -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
    numpy_state, python_state = state["numpy"], state["python"]
    numpy_tuple = ("MT19937", numpy_state["keys"].numpy().astype(np.uint32), numpy_state["position"], numpy_state["has_gauss"],
                   numpy_state["cached_gaussian"])  # fmt: skip
    return state["torch"], numpy_tuple, (python_state["version"], tuple(python_state["internal"].tolist()), python_state["gauss_next"])
