"""What every plain_*.py script shares besides its training: the command line and the result line.

The training itself stays written out in each script, against its library alone (no rlplug).
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def parse_args(doc: str, default_steps: int, steps_help: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--steps", type=int, default=default_steps, help=steps_help)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", action="store_true", help="print one JSON line only")
    return parser.parse_args()


def report(backend: str, steps: int, wall: float, cpu: float, returns: list[float], quiet: bool) -> None:
    """The last stdout line: one JSON object (training-loop throughput, greedy evaluation)."""
    if not quiet:
        print(f"eval returns: {returns}")
    print(json.dumps({
        "backend": backend,
        "steps": steps,
        "wall_s": round(wall, 3),
        "steps_per_s": round(steps / wall, 1),
        "steps_per_cpu_s": round(steps / cpu, 1),
        "eval_mean": float(np.mean(returns)),
        "eval_std": float(np.std(returns)),
    }))
