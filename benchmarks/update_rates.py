"""Shared by the ``*_updates.py`` benchmarks: gradient updates per second of a plain PyTorch loop and
of rlplug's cells, measured interleaved (plain, cell, plain, cell, ...) so load on the machine hits
both alike, and reported as ratios with their spread."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable

import torch

HAND_WRITTEN = "torchrl-hand-written"
"""A cell name for an upstream TorchRL loop without rlplug, to separate TorchRL's cost from rlplug's."""


def random_replay(size: int, obs_dim: int, act_dim: int) -> dict[str, torch.Tensor]:
    """A Pendulum-shaped replay of random transitions (actions in [-2, 2]) for the plain update loops."""
    return {
        "obs": torch.randn(size, obs_dim),
        "act": torch.rand(size, act_dim) * 4 - 2,
        "rew": torch.randn(size, 1),
        "next_obs": torch.randn(size, obs_dim),
        "done": torch.zeros(size, 1),
    }


def rate(step: Callable[[], object], updates: int) -> float:
    for _ in range(10):  # warm-up: allocator, autograd graph caches
        step()
    started = time.perf_counter()
    for _ in range(updates):
        step()
    return updates / (time.perf_counter() - started)


def interleaved(plain: Callable[[], object], cells: dict[str, Callable[[], object]], rounds: int, updates: int) -> dict[str, dict[str, list[float]]]:
    """Per cell: the plain loop's and the cell's rates, and their ratio, for each round."""
    results: dict[str, dict[str, list[float]]] = {name: {"plain": [], "rlplug": [], "ratio": []} for name in cells}
    for _ in range(rounds):
        for name, step in cells.items():
            plain_rate = rate(plain, updates)
            cell_rate = rate(step, updates)
            results[name]["plain"].append(plain_rate)
            results[name]["rlplug"].append(cell_rate)
            results[name]["ratio"].append(cell_rate / plain_rate)
    return results


def report(title: str, results: dict[str, dict[str, list[float]]], as_json: bool = False) -> None:
    if as_json:
        print(json.dumps(results))
        return
    print(title)
    for name, r in results.items():
        ratios = r["ratio"]
        print(
            f"  {name:20s} plain {statistics.mean(r['plain']):6.1f}/s  cell {statistics.mean(r['rlplug']):6.1f}/s  "
            f"ratio {statistics.mean(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})"
        )
    if "torchrl" in results and HAND_WRITTEN in results:
        ours, theirs = statistics.mean(results["torchrl"]["rlplug"]), statistics.mean(results[HAND_WRITTEN]["rlplug"])
        print(f"  rlplug's TorchRL cell / the hand-written TorchRL loop: {ours / theirs:.3f}")
