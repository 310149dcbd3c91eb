"""rlplug's overhead on ppo-cartpole: rlplug vs the plain skrl / TorchRL scripts, interleaved.

Each repeat runs, for every backend, the plain script and ``rlplug train ppo-cartpole --no-write``
back to back in fresh processes (same hyperparameters, same seed, one torch thread), so machine load
hits both sides alike. Reported: steps/s of each side (training loop only: no imports, no
evaluation) and the ratio rlplug ÷ plain per repeat, with its mean and spread.

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


def plain(backend: str, steps: int, seed: int) -> float:
    script = HERE / f"plain_{backend}_ppo.py"
    return last_json_line([sys.executable, str(script), "--steps", str(steps), "--seed", str(seed), "--json"])["steps_per_s"]


def rlplug(backend: str, steps: int, seed: int) -> float:
    command = [sys.executable, "-m", "rlplug.cli", "train", "ppo-cartpole", "--backend", backend,
               "--steps", str(steps), "--seed", str(seed), "--no-write", "--json", *MATCH_PLAIN[backend]]
    return last_json_line(command)["steps_per_second"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", default="skrl,torchrl")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    results = {}
    for backend in args.backends.split(","):
        ratios, sides = [], {"plain": [], "rlplug": []}
        for repeat in range(args.repeats):
            order = (plain, rlplug) if repeat % 2 == 0 else (rlplug, plain)  # alternate who runs first
            measured = {fn.__name__: fn(backend, args.steps, args.seed) for fn in order}
            sides["plain"].append(measured["plain"])
            sides["rlplug"].append(measured["rlplug"])
            ratios.append(measured["rlplug"] / measured["plain"])
            print(f"{backend} repeat {repeat + 1}: plain {measured['plain']:.0f} steps/s, "
                  f"rlplug {measured['rlplug']:.0f} steps/s, ratio {ratios[-1]:.3f}", file=sys.stderr)
        results[backend] = {
            "plain_steps_per_s": [round(v, 1) for v in sides["plain"]],
            "rlplug_steps_per_s": [round(v, 1) for v in sides["rlplug"]],
            "ratio_mean": round(statistics.mean(ratios), 3),
            "ratio_min": round(min(ratios), 3),
            "ratio_max": round(max(ratios), 3),
        }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
