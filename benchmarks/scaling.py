"""Steps/s of one process against ``--nproc N`` processes (data-parallel through torchrun).

For each recipe and backend, runs ``rlplug train RECIPE --no-write --json`` on one process and on
``--nproc N`` processes, alternating which goes first, ``--repeats`` times. Reported: environment
steps per second over all ranks (per-rank budget x ranks / rank 0's training wall time), and the
ratio N-process / one-process with its spread. The budget is per rank, so the N-process run collects
N times the data and takes as many optimiser steps, each on an N times larger global batch.

    python benchmarks/scaling.py --recipes ppo-cartpole,sac-pendulum --nproc 2 --repeats 2 [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

STEPS = {"ppo-cartpole": 30_720, "sac-pendulum": 3_000}


def run(recipe: str, backend: str, steps: int, nproc: int) -> dict:
    command = [sys.executable, "-m", "rlplug.cli", "train", recipe, "--backend", backend, "--steps", str(steps),
               "--no-write", "--json", "--set", "eval_episodes=2"]
    if nproc > 1:
        command += ["--nproc", str(nproc)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    summary = json.loads(out)
    total = summary.get("steps_per_second_all_ranks") or summary["steps_per_second"]
    return {"steps_per_second_all_ranks": total, "wall_seconds": summary["wall_seconds"],
            "ranks_in_sync": summary.get("ranks_in_sync", True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", default="ppo-cartpole,sac-pendulum")
    parser.add_argument("--backends", default="skrl,torchrl")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    args = parser.parse_args()
    rows = []
    for recipe in args.recipes.split(","):
        for backend in args.backends.split(","):
            single, multi = [], []
            for repeat in range(args.repeats):
                order = (1, args.nproc) if repeat % 2 == 0 else (args.nproc, 1)
                for nproc in order:
                    (single if nproc == 1 else multi).append(run(recipe, backend, STEPS[recipe], nproc))
            ratios = [m["steps_per_second_all_ranks"] / s["steps_per_second_all_ranks"] for s, m in zip(single, multi)]
            row = {
                "recipe": recipe, "backend": backend, "nproc": args.nproc, "steps_per_rank": STEPS[recipe],
                "one_process_steps_per_second": round(statistics.mean(r["steps_per_second_all_ranks"] for r in single), 1),
                "n_process_steps_per_second": round(statistics.mean(r["steps_per_second_all_ranks"] for r in multi), 1),
                "ratio_mean": round(statistics.mean(ratios), 3), "ratio_min": round(min(ratios), 3), "ratio_max": round(max(ratios), 3),
                "ranks_in_sync": all(r["ranks_in_sync"] for r in multi),
            }
            rows.append(row)
            print(f"{recipe} {backend}: 1 process {row['one_process_steps_per_second']:.0f} steps/s, {args.nproc} processes "
                  f"{row['n_process_steps_per_second']:.0f} steps/s (all ranks), ratio {row['ratio_mean']:.2f} "
                  f"[{row['ratio_min']:.2f}, {row['ratio_max']:.2f}]", flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"nproc": args.nproc, "repeats": args.repeats, "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
