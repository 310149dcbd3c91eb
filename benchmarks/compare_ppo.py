"""rlplug's overhead on ppo-cartpole: rlplug vs the plain skrl / TorchRL scripts, interleaved.

Each repeat runs, for every backend, the plain script and ``rlplug train ppo-cartpole --no-write``
back to back in fresh processes (same hyperparameters, same seed, one torch thread), so machine load
hits both sides alike. Reported: steps/s of each side (training loop only: no imports, no
evaluation) and the ratio rlplug ÷ plain per repeat, with its mean and spread, measured twice: by
wall clock and by the process's CPU time in the training loop (one torch thread, so CPU time is
what the loop costs, little disturbed by other jobs on the machine).

    python benchmarks/compare_ppo.py --repeats 3 [--backends skrl,torchrl] [--steps 100000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# where a plain script does less than the recipe, rlplug is told to do the same less
MATCH_PLAIN = {"skrl": [], "torchrl": ["--set", "normalize_values=false"]}  # the plain TorchRL script has no value normalisation


def last_json_line(command: list[str]) -> dict:
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1] if not out.lstrip().startswith("{") else out)


def plain(backend: str, steps: int, seed: int) -> tuple[float, float]:
    script = HERE / f"plain_{backend}_ppo.py"
    out = last_json_line([sys.executable, str(script), "--steps", str(steps), "--seed", str(seed), "--json"])
    return out["steps_per_s"], out["steps_per_cpu_s"]


def rlplug(backend: str, steps: int, seed: int) -> tuple[float, float]:
    command = [sys.executable, "-m", "rlplug.cli", "train", "ppo-cartpole", "--backend", backend,
               "--steps", str(steps), "--seed", str(seed), "--no-write", "--json", *MATCH_PLAIN[backend]]
    out = last_json_line(command)
    return out["steps_per_second"], out["steps_per_cpu_second"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", default="skrl,torchrl")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    results = {}
    for backend in args.backends.split(","):
        runs: dict[str, list[tuple[float, float]]] = {"plain": [], "rlplug": []}
        for repeat in range(args.repeats):
            order = (plain, rlplug) if repeat % 2 == 0 else (rlplug, plain)  # alternate who runs first
            for fn in order:
                runs[fn.__name__].append(fn(backend, args.steps, args.seed))
            (pw, pc), (rw, rc) = runs["plain"][-1], runs["rlplug"][-1]
            print(f"{backend} repeat {repeat + 1}: wall steps/s plain {pw:.0f} rlplug {rw:.0f} (ratio {rw / pw:.3f}); "
                  f"CPU steps/s plain {pc:.0f} rlplug {rc:.0f} (ratio {rc / pc:.3f})", file=sys.stderr)
        results[backend] = {}
        for index, clock in enumerate(("wall", "cpu")):
            ratios = [r[index] / p[index] for r, p in zip(runs["rlplug"], runs["plain"])]
            results[backend][clock] = {
                "plain_steps_per_s": [round(p[index], 1) for p in runs["plain"]],
                "rlplug_steps_per_s": [round(r[index], 1) for r in runs["rlplug"]],
                "ratio_mean": round(statistics.mean(ratios), 3),
                "ratio_min": round(min(ratios), 3),
                "ratio_max": round(max(ratios), 3),
            }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
