"""``compile = true`` against eager: gradient updates/s of each off-policy / offline cell, and compile time
cold (an empty inductor cache) and warm (a second process reusing it).

For each cell (SAC, TD3 on their Pendulum recipes; IQL, CQL on ``*-pendulum-medium``; both backends) a
fresh process builds the cell twice from its recipe (``compile=false`` and ``compile=true``), fills the
off-policy replay with the random warm-up, times the compiled cell's first gradient steps (the compile:
``trainer.compile_seconds``), then alternates rounds of eager and compiled gradient steps (process CPU
time and wall time, one torch thread). A second process then builds the compiled cell again on the same
inductor cache and records its compile time (warm). The cache lives in ``--cache-dir`` (default: a fresh
temporary directory), never in a shared data directory. Prints/stores one JSON object (``--json OUT``):
the ``compile`` section of BENCHMARKS.md.

    RLPLUG_DATA_DIR=... python benchmarks/compile_gains.py [--cells sac/torchrl,sac/skrl,...] [--updates 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECIPES = {"sac": "sac-pendulum@1",  # the measured (stored) sizes: 256x256
           "td3": "td3-pendulum", "iql": "iql-pendulum-medium", "cql": "cql-pendulum-medium"}
CELLS = [f"{algo}/{backend}" for algo in RECIPES for backend in ("skrl", "torchrl")]
WARMUP = 512  # random transitions in the replay before the first gradient step (off-policy cells)


def gradient_step(build):
    """A zero-argument callable taking one of ``build``'s gradient steps (its trainer's own path)."""
    trainer = build.trainer
    if build.algorithm.kind == "offline":
        return trainer.gradient_step
    trainer.train(WARMUP)  # random actions only: fills the replay, takes no gradient step
    if build.backend == "skrl":
        agent = trainer.agent
        return lambda: agent.gradient_step(timestep=WARMUP, timesteps=build.recipe.steps)
    return trainer.gradient_step


def make(cell: str, compiled: bool):
    import rlplug
    from rlplug.pipeline.session import Session

    algo, backend = cell.split("/")
    overrides = [f"compile={'true' if compiled else 'false'}"]
    if RECIPES[algo].endswith("-medium"):
        build = Session().build(RECIPES[algo], backend=backend, overrides=overrides)
    else:
        build = rlplug.build(RECIPES[algo], backend=backend, overrides=overrides + [f"learning_starts={WARMUP}", f"log_every={WARMUP}"])
    return build, gradient_step(build)


def rates(step, updates: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(updates):
        step()
    return updates / (time.perf_counter() - wall), updates / max(time.process_time() - cpu, 1e-9)


def worker(cell: str, measure: bool, updates: int, rounds: int) -> dict:
    import torch

    torch.set_num_threads(1)
    compiled_build, compiled = make(cell, True)
    started = time.perf_counter()
    for _ in range(4):  # TD3 reaches its delayed actor step on the second update; each stage compiles once
        compiled()
    first_steps = time.perf_counter() - started
    out = {"cell": cell, "compile_seconds": compiled_build.trainer.compile_seconds, "first_steps_s": round(first_steps, 2)}
    if measure:
        _, eager = make(cell, False)
        for step in (eager, compiled):
            for _ in range(10):
                step()
        result = {"eager_wall": [], "compiled_wall": [], "eager_cpu": [], "compiled_cpu": []}
        for _ in range(rounds):
            for name, step in (("eager", eager), ("compiled", compiled)):
                wall, cpu = rates(step, updates)
                result[f"{name}_wall"].append(wall), result[f"{name}_cpu"].append(cpu)
        result["ratio_wall"] = [c / e for c, e in zip(result["compiled_wall"], result["eager_wall"])]
        result["ratio_cpu"] = [c / e for c, e in zip(result["compiled_cpu"], result["eager_cpu"])]
        out.update(result)
    return out


def break_even(r: dict, budget_updates: int) -> dict:
    """Updates after which the compiled run has caught up with eager, and whether the recipe's budget reaches it."""
    eager, compiled = statistics.mean(r["eager_cpu"]), statistics.mean(r["compiled_cpu"])
    saved_per_update = 1 / eager - 1 / compiled
    updates = None if saved_per_update <= 0 else int(r["compile_seconds_cold"] / saved_per_update)
    return {"break_even_updates": updates, "pays_back": updates is not None and updates <= budget_updates}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default=",".join(CELLS))
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cache-dir", default=None, help="inductor cache (default: a fresh temporary directory)")
    parser.add_argument("--json", default=None, help="also write the result here")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.measure, args.updates, args.rounds)))
        return
    os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")
    results = {}
    for cell in args.cells.split(","):
        with tempfile.TemporaryDirectory() as scratch:
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": args.cache_dir or str(Path(scratch) / "inductor")}
            if args.cache_dir:
                subprocess.run(["rm", "-rf", args.cache_dir], check=True)
            runs = []
            for measure in (True, False):  # cold (and the rates), then warm in a second process
                command = [sys.executable, str(HERE / "compile_gains.py"), "--worker", cell, "--updates", str(args.updates),
                           "--rounds", str(args.rounds), *(["--measure"] if measure else [])]
                print(f"$ {' '.join(command[1:])}", file=sys.stderr, flush=True)
                done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, env=env, cwd=HERE.parent)
                runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        cold, warm = runs
        r = {k: v for k, v in cold.items() if k not in ("cell", "compile_seconds")}
        r["compile_seconds_cold"], r["compile_seconds_warm"] = cold["compile_seconds"], warm["compile_seconds"]
        from rlplug.api import resolve

        recipe = resolve(RECIPES[cell.split("/")[0]])
        budget = recipe.steps if recipe.algorithm in ("iql", "cql") else max(0, recipe.steps - int(recipe.hyperparameters.get("learning_starts", 0)))
        r["budget_updates"] = budget
        r.update(break_even(r, budget))
        results[cell] = r
        print(f"{cell}: compiled/eager CPU {statistics.mean(r['ratio_cpu']):.3f} wall {statistics.mean(r['ratio_wall']):.3f}, "
              f"compile cold {r['compile_seconds_cold']} s, warm {r['compile_seconds_warm']} s, break-even {r['break_even_updates']}",
              file=sys.stderr, flush=True)
    text = json.dumps(results)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
