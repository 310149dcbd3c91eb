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
    """torch, numpy (legacy global) and python ``random`` states as tensors, numbers and lists."""
    import torch

    _, keys, position, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    version, internal, gauss_next = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "numpy": {
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "position": int(position),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "python": {"version": int(version), "internal": torch.tensor(internal, dtype=torch.int64), "gauss_next": gauss_next},
    }


def restore_rng_state(state: Mapping[str, Any]) -> None:
    """Undo ``capture_rng_state``."""
    import torch

    torch.set_rng_state(state["torch"])
    numpy_state = state["numpy"]
    np.random.set_state(
        (
            "MT19937",
            numpy_state["keys"].numpy().astype(np.uint32),
            numpy_state["position"],
            numpy_state["has_gauss"],
            numpy_state["cached_gaussian"],
        )
    )
    python_state = state["python"]
    random.setstate((python_state["version"], tuple(python_state["internal"].tolist()), python_state["gauss_next"]))
