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


def rates(step: Callable[[], object], updates: int) -> tuple[float, float]:
    """Updates per second of wall time and of this process's CPU time (one torch thread: the CPU time is
    what the loop costs, much less disturbed by other jobs on a shared machine than the wall clock)."""
    for _ in range(10):  # warm-up: allocator, autograd graph caches
        step()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(updates):
        step()
    return updates / (time.perf_counter() - wall), updates / max(time.process_time() - cpu, 1e-9)


def rate(step: Callable[[], object], updates: int) -> float:
    return rates(step, updates)[0]


def interleaved(plain: Callable[[], object], cells: dict[str, Callable[[], object]], rounds: int, updates: int) -> dict[str, dict[str, list[float]]]:
    """Per cell: the plain loop's and the cell's rates, and their ratio, for each round (wall clock;
    ``*_cpu``: by process CPU time)."""
    keys = ("plain", "rlplug", "ratio", "plain_cpu", "rlplug_cpu", "ratio_cpu")
    results: dict[str, dict[str, list[float]]] = {name: {k: [] for k in keys} for name in cells}
    for _ in range(rounds):
        for name, step in cells.items():
            plain_wall, plain_cpu = rates(plain, updates)
            cell_wall, cell_cpu = rates(step, updates)
            r = results[name]
            r["plain"].append(plain_wall), r["rlplug"].append(cell_wall), r["ratio"].append(cell_wall / plain_wall)
            r["plain_cpu"].append(plain_cpu), r["rlplug_cpu"].append(cell_cpu), r["ratio_cpu"].append(cell_cpu / plain_cpu)
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
            + (f"  CPU-time ratio {statistics.mean(r['ratio_cpu']):.3f}" if r.get("ratio_cpu") else "")
        )
    if "torchrl" in results and HAND_WRITTEN in results:
        ours, theirs = statistics.mean(results["torchrl"]["rlplug"]), statistics.mean(results[HAND_WRITTEN]["rlplug"])
        print(f"  rlplug's TorchRL cell / the hand-written TorchRL loop: {ours / theirs:.3f}")
