"""TorchRL backend ÷ skrl backend on the same recipe, interleaved, with where each side's time goes.

For every recipe both backends run, each repeat trains it once per backend in a fresh process (the
order alternates between repeats, so load drift hits both): the recipe is built, trained ``warm``
steps untimed (the random warm-up of off-policy recipes, lazy initialisation, the first iteration),
then ``steps`` more, timed (wall and process CPU). Reported per recipe: the TorchRL ÷ skrl ratio of
seconds per step (per gradient update for offline recipes), mean, min and max over repeats.

``--profile`` adds one cProfile run per backend of the same timed stretch, its self time grouped by
where it is spent (the simulator, gymnasium's wrappers, TorchRL's env and collector, the replay
buffer, tensordict, TorchRL's losses, skrl's agents, autograd, optimiser, forward kernels, rlplug):
the shares name the costs that remain. cProfile inflates Python-heavy code, so read the shares as
where the time goes and the unprofiled ratio as how fast it is.

    RLPLUG_DATA_DIR=... python benchmarks/backend_ratio.py [--recipes td3-pendulum,...] [--repeats 2]
                                                            [--profile] [--json OUT]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

GOAL = 1.3


@dataclass(frozen=True)
class Workload:
    warm: int  # untimed steps first (updates for offline recipes)
    steps: int  # then these, timed


# About 10-20 s a side on the 2-core box; off-policy warm-ups cover each recipe's random learning_starts.
WORKLOADS = {
    "ppo-cartpole": Workload(4_096, 40_960),
    "ppo-pendulum": Workload(4_096, 32_768),
    "ppo-lunarlander": Workload(16_384, 49_152),
    "mappo-navigation": Workload(6_000, 18_000),
    "mappo-simple-spread": Workload(10_000, 30_000),
    "td3-pendulum": Workload(1_000, 3_000),
    "sac-pendulum": Workload(1_000, 1_000),
    "sac-mountaincar": Workload(1_000, 1_000),
    "sac-halfcheetah": Workload(10_000, 1_000),
    "dqn-cartpole": Workload(1_024, 8_192),
    "dqn-lunarlander": Workload(1_000, 2_000),
    "iql-pendulum-medium": Workload(200, 2_000),
    "cql-pendulum-medium": Workload(100, 800),
    "cql-cartpole-medium": Workload(500, 5_000),
    "ddpg-pendulum": Workload(1_000, 3_000),
    "td3-halfcheetah": Workload(10_000, 1_500),
    "ppo-halfcheetah": Workload(1_024, 4_096),
    "ppo-minatar-breakout": Workload(2_048, 16_384),
    "dqn-minatar-breakout": Workload(5_000, 3_000),
    "ppo-cartpole-novel": Workload(2_048, 16_384),
    "ppo-lstm-cartpole-novel": Workload(2_048, 16_384),
    "ppo-pendulum-novel": Workload(4_096, 12_288),
    "ppo-lstm-pendulum-novel": Workload(4_096, 8_192),
    "iql-halfcheetah-medium": Workload(200, 2_000),
    "cql-halfcheetah-medium": Workload(100, 800),
    "td3bc-pendulum-medium": Workload(200, 3_000),
    "td3bc-halfcheetah-medium": Workload(200, 2_000),
}
BACKENDS = ("skrl", "torchrl")


def category(filename: str, name: str) -> str:
    """Where a function's self time is spent, by the file (or, for C functions, the name) it belongs to."""
    f = filename.replace("\\", "/")
    if "run_backward" in name:
        return "autograd backward"
    if "/optim/" in f or "fused_adam" in name or "_foreach_" in name:
        return "optimiser, target update"
    if "/torchrl/data/" in f or "/skrl/memories/" in f:
        return "replay buffer / memory"
    if "/tensordict/" in f:
        return "tensordict"
    if "/torchrl/collectors/" in f:
        return "torchrl collector"
    if "/torchrl/envs/" in f:
        return "torchrl env + transforms"
    if "/torchrl/" in f:
        return "torchrl losses, modules"
    if "/skrl/envs/" in f:
        return "skrl env wrapper"
    if "/skrl/" in f:
        return "skrl agents, models"
    if any(part in f for part in ("/gymnasium/envs/", "/mujoco/", "/Box2D/", "/box2d/", "/mpe2/", "/pettingzoo/", "/vmas/")):
        return "simulator"
    if "/gymnasium/" in f:
        return "gymnasium wrappers, vector env"
    if "/numpy/" in f:
        return "numpy"
    if f == "~" and ("torch" in name or "Tensor" in name):
        return "forward kernels (torch ops)"
    if "/torch/" in f:
        return "torch python (nn.Module, distributions)"
    if "/rlplug" in f or "/plugins/" in f:
        return "rlplug, plugin cells"
    if f == "~":
        return "python builtins (isinstance, getattr, dict)"
    return "other python"


def child(recipe: str, backend: str, warm: int, steps: int, profile: bool) -> dict:
    import torch

    import rlplug

    torch.set_num_threads(1)
    trainer = rlplug.build(recipe, backend=backend).trainer
    trainer.train(warm)
    done = trainer.progress  # env steps, or updates for offline trainers
    profiler = cProfile.Profile() if profile else None
    wall, cpu = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    trainer.train(warm + steps)
    if profiler:
        profiler.disable()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    taken = trainer.progress - done
    trainer.close()
    out = {"steps": taken, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
           "ms_per_step": round(1000 * wall / max(taken, 1), 4)}
    if profiler:
        from profile_updates import grouped_self_time  # this script's directory: run as a script, it is on sys.path

        whole, out["shares"] = grouped_self_time(pstats.Stats(profiler).stats, category, digits=4)
        out["profile_ms_per_step"] = round(1000 * whole / max(taken, 1), 4)
    return out


def run_child(recipe: str, backend: str, workload: Workload, profile: bool) -> dict:
    command = [sys.executable, __file__, "--child", recipe, backend, str(workload.warm), str(workload.steps)]
    if profile:
        command.append("--profile")
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
    if done.returncode != 0:
        raise SystemExit(f"{recipe} on {backend} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(recipe: str, repeats: int, profile: bool) -> dict:
    workload = WORKLOADS[recipe]
    runs: dict[str, list[dict]] = {b: [] for b in BACKENDS}
    for repeat in range(repeats):
        for backend in BACKENDS if repeat % 2 == 0 else BACKENDS[::-1]:
            runs[backend].append(run_child(recipe, backend, workload, profile=False))
    result: dict = {"warm": workload.warm, "steps": workload.steps, "runs": runs}
    for clock in ("wall_s", "cpu_s"):
        ratios = [(t[clock] / t["steps"]) / (s[clock] / s["steps"]) for s, t in zip(runs["skrl"], runs["torchrl"])]
        result[clock.replace("_s", "")] = {"ratios": [round(r, 3) for r in ratios], "mean": round(statistics.mean(ratios), 3),
                                           "min": round(min(ratios), 3), "max": round(max(ratios), 3)}
    if profile:
        result["profile"] = {backend: run_child(recipe, backend, workload, profile=True) for backend in BACKENDS}
    ratio = result["wall"]["mean"]
    print(f"{recipe}: torchrl ÷ skrl wall {ratio:.2f} ({result['wall']['min']:.2f}-{result['wall']['max']:.2f}), "
          f"cpu {result['cpu']['mean']:.2f}; ms/step skrl {statistics.mean(r['ms_per_step'] for r in runs['skrl']):.3f}, "
          f"torchrl {statistics.mean(r['ms_per_step'] for r in runs['torchrl']):.3f}", file=sys.stderr, flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", default=",".join(WORKLOADS), help=f"comma-separated, of {', '.join(WORKLOADS)}")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="add one cProfile run per backend and recipe")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    parser.add_argument("--child", nargs=4, metavar=("RECIPE", "BACKEND", "WARM", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        recipe, backend, warm, steps = args.child
        print(json.dumps(child(recipe, backend, int(warm), int(steps), args.profile)))
        return
    recipes = args.recipes.split(",")
    for recipe in recipes:
        if recipe not in WORKLOADS:
            parser.error(f"unknown recipe '{recipe}' (choose from {', '.join(WORKLOADS)})")
    results = {"goal": GOAL, "repeats": args.repeats, "recipes": {r: measure(r, args.repeats, args.profile) for r in recipes}}
    text = json.dumps(results, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
