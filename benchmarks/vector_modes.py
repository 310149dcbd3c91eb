"""``vector_mode = "sync"`` against ``"async"``: environment steps/s of a recipe's training loop, per backend
and number of environments, sync and async runs interleaved in fresh processes.

Each run builds the recipe (the async workers start during the build, outside the timing), trains
``--steps`` environment steps and reports the training loop's wall time and the main process's CPU time
(the async workers' CPU time is not in it: compare wall clocks). Default workload: ``ppo-pendulum`` on
HalfCheetah-v5 (MuJoCo), 2 and 4 environments, both backends; ``--set`` adds recipe overrides (an Atari
game: ``--recipe ppo-cartpole --env ALE/Pong-v5 --set atari=true --set frame_stack=4``), ``--append`` adds the
rows to an earlier ``--json`` file. Prints/stores one JSON object
(``--json OUT``): the ``vector_modes`` section of BENCHMARKS.md.

    python benchmarks/vector_modes.py [--recipe ppo-pendulum] [--env HalfCheetah-v5] [--num-envs 2,4]
                                      [--backends skrl,torchrl] [--steps 16384] [--repeats 2]
                                      [--set KEY=VALUE ...] [--json OUT [--append]]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(recipe: str, backend: str, overrides: list[str], steps: int) -> dict:
    import torch

    import rlplug

    torch.set_num_threads(1)
    build = rlplug.build(recipe, backend=backend, overrides=overrides)
    wall, cpu = time.perf_counter(), time.process_time()
    build.trainer.train(steps)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    taken = build.trainer.env_steps
    build.trainer.close()
    return {"steps": taken, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "steps_per_s": round(taken / wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="ppo-pendulum")
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--num-envs", default="2,4")
    parser.add_argument("--backends", default="skrl,torchrl")
    parser.add_argument("--steps", type=int, default=16384)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a further recipe override for every run (repeatable), e.g. --set atari=true")
    parser.add_argument("--json", default=None)
    parser.add_argument("--append", action="store_true", help="add the rows to the --json file's rows instead of replacing them")
    parser.add_argument("--worker", nargs="*", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        backend, *overrides = args.worker
        print(json.dumps(worker(args.recipe, backend, overrides, args.steps)))
        return
    env = {**os.environ, "RL_LOGGING_LEVEL": "WARNING"}
    rows = []
    for backend in args.backends.split(","):
        for n in (int(x) for x in args.num_envs.split(",")):
            runs: dict[str, list[dict]] = {"sync": [], "async": []}
            for _ in range(args.repeats):
                for mode in ("sync", "async"):
                    overrides = [f"env={args.env}", *args.overrides, f"num_envs={n}", f"vector_mode={mode}"]
                    command = [sys.executable, str(HERE / "vector_modes.py"), "--recipe", args.recipe, "--steps", str(args.steps),
                               "--worker", backend, *overrides]
                    print(f"$ {' '.join(command[1:])}", file=sys.stderr, flush=True)
                    out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, env=env, cwd=HERE.parent).stdout
                    runs[mode].append(json.loads(out.strip().splitlines()[-1]))
            ratios = [a["steps_per_s"] / s["steps_per_s"] for s, a in zip(runs["sync"], runs["async"])]
            row = {"recipe": args.recipe, "env": args.env, "overrides": args.overrides, "backend": backend, "num_envs": n, "steps": args.steps,
                   "sync": runs["sync"], "async": runs["async"], "async_vs_sync": ratios}  # fmt: skip
            rows.append(row)
            print(f"{backend} x{n}: sync {statistics.mean(r['steps_per_s'] for r in runs['sync']):.0f} steps/s, async "
                  f"{statistics.mean(r['steps_per_s'] for r in runs['async']):.0f} steps/s, async/sync {statistics.mean(ratios):.3f}",
                  file=sys.stderr, flush=True)
    result = {"rows": rows, "cpu_count": os.cpu_count()}
    if args.json and args.append and Path(args.json).exists():
        result["rows"] = json.loads(Path(args.json).read_text())["rows"] + rows
    if args.json:
        Path(args.json).write_text(json.dumps(result) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
