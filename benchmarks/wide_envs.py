"""Wide vector environments: PPO's training-loop steps/s with hundreds of envs, rlplug on each backend against
a plain batched PyTorch PPO loop (``plain_batched_ppo.py``) with the same envs, rollout, epochs and minibatches.

For each ``--num-envs`` the plain loop and ``ppo-cartpole`` on each backend (its normalisers and KL-adaptive
learning rate off, ``rollout_steps``/``epochs``/``minibatches`` as the plain loop's) run in fresh processes,
alternating, ``--repeats`` times. Each reports the training loop's wall time and its process CPU time (the
build and env construction are outside both); the ratio rlplug ÷ plain is taken per repeat on steps per CPU
second, which holds on a busy machine where wall time does not. Goal (issue 29): ≥ 0.8 at 256 envs on both
backends. Stores the ``wide_envs`` section of BENCHMARKS.md with ``--json OUT``.

    python benchmarks/wide_envs.py [--num-envs 8,64,256,1024] [--backends skrl,torchrl] [--iterations 48]
                                   [--rollout-steps 16] [--epochs 4] [--minibatches 4] [--repeats 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from vector_modes import worker  # a recipe's training loop timed in this process (the build outside the timing)

HERE = Path(__file__).resolve().parent
RECIPE = "ppo-cartpole"
# what the plain loop does not do: the recipe's normalisers and its KL-adaptive learning rate
PLAIN_EQUIVALENT = ["normalize_observations=false", "normalize_values=false", "lr_schedule=\"constant\"",
                    "learning_rate=0.001", "value_clip=0.2", "entropy_coef=0.01", "max_grad_norm=0.5"]


def run(command: list[str]) -> dict:
    env = {**os.environ, "RL_LOGGING_LEVEL": "WARNING", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    print(f"$ {' '.join(command[1:])}", file=sys.stderr, flush=True)
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, env=env, cwd=HERE.parent).stdout
    result = json.loads(out.strip().splitlines()[-1])
    result["steps_per_cpu_s"] = round(result["steps"] / result["cpu_s"], 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", default="8,64,256,1024")
    parser.add_argument("--backends", default="skrl,torchrl")
    parser.add_argument("--iterations", type=int, default=48, help="rollouts per run (steps = iterations x envs x rollout)")
    parser.add_argument("--rollout-steps", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--minibatches", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", default=None)
    parser.add_argument("--worker", nargs="*", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        backend, *overrides = args.worker
        print(json.dumps(worker(RECIPE, backend, overrides, args.steps)))
        return
    rows = []
    for n in (int(x) for x in args.num_envs.split(",")):
        steps = args.iterations * n * args.rollout_steps
        shape = [f"num_envs={n}", f"rollout_steps={args.rollout_steps}", f"epochs={args.epochs}", f"minibatches={args.minibatches}"]
        plain_cmd = [sys.executable, str(HERE / "plain_batched_ppo.py"), "--num-envs", str(n), "--rollout-steps",
                     str(args.rollout_steps), "--epochs", str(args.epochs), "--minibatches", str(args.minibatches),
                     "--steps", str(steps), "--json"]
        runs: dict[str, list[dict]] = {"plain": [], **{b: [] for b in args.backends.split(",")}}
        for _ in range(args.repeats):
            runs["plain"].append(run(plain_cmd))
            for backend in args.backends.split(","):
                runs[backend].append(run([sys.executable, str(HERE / "wide_envs.py"), "--steps", str(steps), "--worker",
                                          backend, *PLAIN_EQUIVALENT, *shape]))
        row = {"num_envs": n, "steps": steps, "runs": runs, "ratios": {}}
        for backend in args.backends.split(","):
            row["ratios"][backend] = [r["steps_per_cpu_s"] / p["steps_per_cpu_s"] for r, p in zip(runs[backend], runs["plain"])]
        rows.append(row)
        print(f"x{n}: plain {statistics.mean(r['steps_per_cpu_s'] for r in runs['plain']):.0f} steps/CPU s; " + "; ".join(
            f"{b} {statistics.mean(r['steps_per_cpu_s'] for r in runs[b]):.0f} ({statistics.mean(row['ratios'][b]):.3f} of plain)"
            for b in args.backends.split(",")), file=sys.stderr, flush=True)
    result = {"recipe": RECIPE, "overrides": PLAIN_EQUIVALENT, "rollout_steps": args.rollout_steps, "epochs": args.epochs,
              "minibatches": args.minibatches, "iterations": args.iterations, "rows": rows, "cpu_count": os.cpu_count(),
              "goal": {"num_envs": 256, "ratio": 0.8}}
    if args.json:
        Path(args.json).write_text(json.dumps(result) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
