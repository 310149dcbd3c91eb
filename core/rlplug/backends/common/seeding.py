"""Threads and seeds, the same on both backends."""

from __future__ import annotations

import torch

from ...util.rng import seed_all


def configure_threads(threads: int = 1) -> None:
    """One torch thread by default: on small shared CPUs extra OpenMP threads spin on busy cores and
    slow small-network updates down by orders of magnitude (reference skrl §13, TorchRL §10)."""
    torch.set_num_threads(threads)


def seed_everything(seed: int) -> None:
    """Seed python ``random``, numpy's global generator and torch (what TorchRL and rlplug sample from).

    skrl cells call ``rlplug.backends.skrl.seed_skrl`` instead: skrl's own ``set_seed`` also sets the
    key its env wrappers read and offsets the seed by rank in distributed runs.
    """
    seed_all(seed)
