"""Startup: cold wall time of the commands that train nothing, and how long `rlplug train` takes to
reach its first training step beyond importing the backend's libraries.

Every measurement is a fresh interpreter (``python -m rlplug.cli ...`` or ``python -c ...``), repeated
``--repeats`` times after one warm-up; the median and the spread are reported, and for the listing commands
the CPU seconds too (less sensitive than wall time to other processes on the box). Goals (issue 7): listing
commands ≤ 0.3 s; `train` ready to step ≤ 1.5 s + the backend's own import time. The floor (issue 51): a bare
interpreter that imports pluggy and scans the ``rlplug.plugins`` entry points (each one's distribution name and
version, what `rlplug list` shows), measured side by side with the listing commands (each repeat runs the floor and
every command in turn); `list`, `recipes` and `show` at most 1.5 times it.

The children run with Python's bytecode cache on, as an installed package has it: with
``PYTHONDONTWRITEBYTECODE=1`` in the environment (some shells and CI images set it) every run compiles
rlplug's ~60 modules again, which alone doubled `rlplug list`'s CPU time here (0.31 s against 0.15 s).

    python benchmarks/startup.py [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

COMMANDS = (["list"], ["recipes"], ["show", "ppo-cartpole"], ["--help"])
FLOOR_COMMANDS = (["list"], ["recipes"], ["show", "ppo-cartpole"])
FLOOR = """
import pluggy
from importlib.metadata import entry_points
for ep in entry_points(group="rlplug.plugins"):
    ep.dist.name, ep.dist.version
"""
FLOOR_NAME = "floor: python, pluggy and the rlplug.plugins entry points"

# Time to the trainer's first step(): `rlplug train` with TrainerBase.train patched to report and exit.
READY = """
import os, sys, time
started = time.perf_counter()
from rlplug.contract.trainer import TrainerBase
def ready(self, steps, callbacks=()):
    print(f"READY {{time.perf_counter() - started:.4f}}", flush=True)
    os._exit(0)
TrainerBase.train = ready
from rlplug.cli import main
main(["train", "{recipe}", "--backend", "{backend}", "--no-write", "--no-progress"])
"""

# The backend module a cell imports, alone (torch + skrl, or torch + torchrl + tensordict), plus one
# optimiser: torch imports torch._dynamo (~1 s here) the first time any optimiser is made, a cost
# every training script pays, rlplug or not.
IMPORT = """
import time
started = time.perf_counter()
import {module}
import torch
torch.optim.Adam([torch.zeros(1, requires_grad=True)])
print(f"READY {{time.perf_counter() - started:.4f}}", flush=True)
"""

BACKEND_MODULES = {"skrl": "rlplug_ppo.skrl_backend", "torchrl": "rlplug_ppo.torchrl_backend"}


CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wall_and_cpu(argv: list[str]) -> tuple[float, float]:
    started, cpu = time.perf_counter(), children_cpu()
    subprocess.run(argv, capture_output=True, check=True, env=CHILD_ENV)
    return time.perf_counter() - started, children_cpu() - cpu


def reported(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=CHILD_ENV).stdout
    return float(next(line for line in out.splitlines() if line.startswith("READY")).split()[1])


def summary(values: list[float], digits: int = 3) -> dict[str, float]:
    return {"median": round(statistics.median(values), digits), "min": round(min(values), digits), "max": round(max(values), digits)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--listing-only", action="store_true", help="the floor and the listing commands only (no train)")
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    argvs = {"floor": [sys.executable, "-c", FLOOR], **{" ".join(c): [sys.executable, "-m", "rlplug.cli", *c] for c in COMMANDS}}
    for argv in argvs.values():
        wall_and_cpu(argv)  # warm-up: writes the bytecode cache if this checkout has none yet
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in argvs}
    for _ in range(args.repeats):  # side by side: a load that comes and goes weighs on the floor and the commands alike
        for name, argv in argvs.items():
            runs[name].append(wall_and_cpu(argv))
    results[FLOOR_NAME] = summary([w for w, _ in runs["floor"]])
    results[FLOOR_NAME + " (CPU s)"] = summary([c for _, c in runs["floor"]])
    for command in COMMANDS:
        name = " ".join(command)
        results["rlplug " + name] = summary([w for w, _ in runs[name]])
        results["rlplug " + name + " (CPU s)"] = summary([c for _, c in runs[name]])
    for command in FLOOR_COMMANDS:  # each repeat's command ÷ the floor run beside it
        name = " ".join(command)
        results[f"rlplug {name} ÷ floor"] = summary([w / f for (w, _), (f, _) in zip(runs[name], runs["floor"])], digits=2)
    if args.listing_only:
        return report(results, args.json)
    reported(READY.format(recipe="ppo-cartpole", backend="skrl"))  # warm-up of torch's and the backends' bytecode
    for backend, module in BACKEND_MODULES.items():
        imports = [reported(IMPORT.format(module=module)) for _ in range(args.repeats)]
        ready = [reported(READY.format(recipe="ppo-cartpole", backend=backend)) for _ in range(args.repeats)]
        results[f"import {module}"] = summary(imports)
        results[f"train ppo-cartpole --backend {backend}: ready to step"] = summary(ready)
        results[f"  of which beyond the backend import ({backend})"] = summary([r - i for r, i in zip(ready, imports)])
    report(results, args.json)


def report(results: dict[str, dict[str, float]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(results, indent=2))
        return
    for name, s in results.items():
        unit = "x" if name.endswith("÷ floor") else "s"
        print(f"{name:64s} {s['median']:7.3f} {unit}  (min {s['min']:.3f}, max {s['max']:.3f})")


if __name__ == "__main__":
    main()
