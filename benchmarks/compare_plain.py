"""rlplug's overhead: rlplug vs the plain skrl / TorchRL scripts of a recipe, interleaved.

Each repeat runs, for every backend, the plain script (``plain_<backend>_<algo>.py``) and
``rlplug train RECIPE --no-write`` back to back in fresh processes (same hyperparameters, same seed,
same step budget, one torch thread), alternating which goes first, so machine load hits both sides
alike. Reported per backend: steps/s of each side (training loop only: no imports, no evaluation)
and the ratio rlplug ÷ plain per repeat with its mean, min and max, measured twice: by wall clock
and by the process's CPU time in the training loop (one torch thread, so CPU time is what the loop
costs, little disturbed by other jobs on the machine). Goal: ratio >= 0.97.

    python benchmarks/compare_plain.py --recipe ppo-cartpole --repeats 3 [--backends skrl,torchrl] [--steps 100000]
    python benchmarks/compare_plain.py --recipe sac-pendulum --steps 3000 --repeats 3 --json results/overhead.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOAL = 0.97

# recipe -> (plain script stem, default step budget, rlplug --set flags per backend). Where a plain
# script does less than the recipe, rlplug is told to do the same less.
RECIPES = {
    "ppo-cartpole": ("ppo", 100_000, {"skrl": [], "torchrl": ["--set", "normalize_values=false"]}),  # plain TorchRL has no value normalisation
    "sac-pendulum": ("sac", 3_000, {"skrl": [], "torchrl": []}),  # 1,000 random steps, then one update per step
}


def last_json(command: list[str]) -> dict:
    """The JSON a command prints last: one line, or (``rlplug --json``) the whole indented stdout."""
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()
    return json.loads(out if out.startswith("{") else out.splitlines()[-1])


def plain(recipe: str, backend: str, steps: int, seed: int) -> dict:
    script = HERE / f"plain_{backend}_{RECIPES[recipe][0]}.py"
    out = last_json([sys.executable, str(script), "--steps", str(steps), "--seed", str(seed), "--json"])
    return {"steps_per_s": out["steps_per_s"], "steps_per_cpu_s": out["steps_per_cpu_s"], "eval_mean": out["eval_mean"]}


# the plain SAC scripts mirror sac-pendulum@1 (256x256, skrl's unsquashed Gaussian, 1,000 random steps)
PINNED = {"sac-pendulum": "sac-pendulum@1"}


def rlplug(recipe: str, backend: str, steps: int, seed: int) -> dict:
    command = [sys.executable, "-m", "rlplug.cli", "train", PINNED.get(recipe, recipe), "--backend", backend, "--steps", str(steps),
               "--seed", str(seed), "--no-write", "--json", *RECIPES[recipe][2][backend]]
    out = last_json(command)
    return {"steps_per_s": out["steps_per_second"], "steps_per_cpu_s": out["steps_per_cpu_second"], "eval_mean": out["eval_return_mean"]}


def summarise(plain_runs: list[dict], rlplug_runs: list[dict]) -> dict:
    """Per clock: both sides' steps/s per repeat and the ratio rlplug ÷ plain (mean, min, max, goal met)."""
    summary = {}
    for clock, key in (("wall", "steps_per_s"), ("cpu", "steps_per_cpu_s")):
        ratios = [r[key] / p[key] for r, p in zip(rlplug_runs, plain_runs)]
        summary[clock] = {
            "plain_steps_per_s": [round(p[key], 1) for p in plain_runs],
            "rlplug_steps_per_s": [round(r[key], 1) for r in rlplug_runs],
            "ratios": [round(x, 3) for x in ratios],
            "ratio_mean": round(statistics.mean(ratios), 3),
            "ratio_min": round(min(ratios), 3),
            "ratio_max": round(max(ratios), 3),
            "goal": GOAL,
            "met": statistics.mean(ratios) >= GOAL,
        }
    summary["eval_mean"] = {"plain": [p["eval_mean"] for p in plain_runs], "rlplug": [r["eval_mean"] for r in rlplug_runs]}
    return summary


def compare(recipe: str, backends: list[str], steps: int, repeats: int, seed: int) -> dict:
    results = {}
    for backend in backends:
        runs: dict[str, list[dict]] = {"plain": [], "rlplug": []}
        for repeat in range(repeats):
            order = (plain, rlplug) if repeat % 2 == 0 else (rlplug, plain)  # alternate who runs first
            for fn in order:
                runs[fn.__name__].append(fn(recipe, backend, steps, seed))
            p, r = runs["plain"][-1], runs["rlplug"][-1]
            print(f"{recipe} {backend} repeat {repeat + 1}: wall steps/s plain {p['steps_per_s']:.0f} rlplug "
                  f"{r['steps_per_s']:.0f} (ratio {r['steps_per_s'] / p['steps_per_s']:.3f}); CPU steps/s plain "
                  f"{p['steps_per_cpu_s']:.0f} rlplug {r['steps_per_cpu_s']:.0f} "
                  f"(ratio {r['steps_per_cpu_s'] / p['steps_per_cpu_s']:.3f})", file=sys.stderr, flush=True)
        results[backend] = {"steps": steps, "repeats": repeats, **summarise(runs["plain"], runs["rlplug"])}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="ppo-cartpole,sac-pendulum", help=f"comma-separated, of {', '.join(RECIPES)}")
    parser.add_argument("--steps", type=int, default=None, help="env steps per run (default per recipe: " +
                        ", ".join(f"{k} {v[1]}" for k, v in RECIPES.items()) + ")")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", default="skrl,torchrl")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    args = parser.parse_args()
    results = {}
    for recipe in args.recipe.split(","):
        if recipe not in RECIPES:
            parser.error(f"unknown recipe '{recipe}' (choose from {', '.join(RECIPES)})")
        steps = args.steps or RECIPES[recipe][1]
        results[recipe] = compare(recipe, args.backends.split(","), steps, args.repeats, args.seed)
    text = json.dumps(results, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
