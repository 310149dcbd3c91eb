"""Critic ensembles as one batched module (issue 48): gradient updates/s of N Q(s, a) critics stepped as rlplug's skrl
cells step them today (N modules called one after another, one Adam over all) against the same critics as one
``EnsembleMlp`` (stacked weights, one batched matmul per layer) and against ``torch.func`` (``stack_module_state`` +
``vmap`` over ``functional_call``, what TorchRL's losses do with stacked parameters).

One update: every critic's Q at a batch of (s, a), the mean squared error to a fixed target, backward, one Adam step
(fused, rlplug's default). Sizes: Pendulum's (3 + 1 inputs), batch 256, 64x64 and 256x256 hidden layers, N = 2, 5, 10
(SAC's twins, TQC's 5, REDQ's 10). Rounds alternate the three ways in one process (one torch thread) so machine load
hits all alike; reported: the median updates per second of process CPU time of each and the ratios to the loop.
The three compute the same values (tests/test_ensemble_mlp.py).

    python benchmarks/ensemble_critics.py [--updates 200] [--rounds 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from rlplug.backends.common.nets import EnsembleMlp, mlp  # noqa: E402

INPUTS, BATCH = 4, 256
SIZES = {"64x64": [64, 64], "256x256": [256, 256]}
COUNTS = (2, 5, 10)


def looped(members: list[nn.Sequential], x: torch.Tensor, target: torch.Tensor) -> Callable[[], None]:
    optimizer = torch.optim.Adam([p for m in members for p in m.parameters()], lr=1e-3, fused=True)

    def update() -> None:
        loss = sum(((member(x) - target) ** 2).mean() for member in members) / len(members)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return update


def batched(members: list[nn.Sequential], x: torch.Tensor, target: torch.Tensor) -> Callable[[], None]:
    ensemble = EnsembleMlp(members)
    optimizer = torch.optim.Adam(ensemble.parameters(), lr=1e-3, fused=True)

    def update() -> None:
        loss = ((ensemble(x) - target) ** 2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return update


def vmapped(members: list[nn.Sequential], x: torch.Tensor, target: torch.Tensor) -> Callable[[], None]:
    params, buffers = torch.func.stack_module_state(members)
    base = [m for m in members[:1]][0]
    leaves = [nn.Parameter(p) for p in params.values()]
    named = dict(zip(params, leaves))
    optimizer = torch.optim.Adam(leaves, lr=1e-3, fused=True)

    def call(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor], inputs: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(base, (p, b), (inputs,))

    forward = torch.func.vmap(call, in_dims=(0, 0, None))

    def update() -> None:
        loss = ((forward(named, buffers, x) - target) ** 2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return update


WAYS = {"loop": looped, "EnsembleMlp": batched, "vmap": vmapped}


def measure(update: Callable[[], None], updates: int) -> float:
    """Updates per second of process CPU time."""
    update()  # the first step allocates Adam's state
    start = time.process_time()
    for _ in range(updates):
        update()
    return updates / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for size, hidden in SIZES.items():
        for n in COUNTS:
            torch.manual_seed(0)
            x, target = torch.randn(BATCH, INPUTS), torch.randn(n, BATCH, 1)
            updates = {}
            for way, make in WAYS.items():
                torch.manual_seed(1)  # the same members for each way
                updates[way] = make([mlp(INPUTS, hidden, 1, "relu") for _ in range(n)], x, target)
            rates: dict[str, list[float]] = {way: [] for way in WAYS}
            for _ in range(args.rounds):
                for way, update in updates.items():
                    rates[way].append(measure(update, args.updates))
            median = {way: statistics.median(r) for way, r in rates.items()}
            row = {"hidden": size, "critics": n, "updates_per_cpu_s": {w: round(m, 1) for w, m in median.items()},
                   "ensemble_vs_loop": round(median["EnsembleMlp"] / median["loop"], 2),
                   "vmap_vs_loop": round(median["vmap"] / median["loop"], 2), "rounds": rates}  # fmt: skip
            rows.append(row)
            print(f"{size:>8} N={n:<3} loop {median['loop']:7.1f}/s  EnsembleMlp {median['EnsembleMlp']:7.1f}/s "
                  f"({row['ensemble_vs_loop']:.2f}x)  vmap {median['vmap']:7.1f}/s ({row['vmap_vs_loop']:.2f}x)", flush=True)
    result = {"command": f"python benchmarks/ensemble_critics.py --updates {args.updates} --rounds {args.rounds}",
              "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "machine": {"cpu_count": __import__("os").cpu_count(), "python": platform.python_version(),
                          "torch": torch.__version__},
              "batch": BATCH, "inputs": INPUTS, "updates": args.updates, "rows": rows}  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
