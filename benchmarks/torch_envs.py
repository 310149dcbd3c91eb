"""Torch-native vector envs against gymnasium's: steps/s of the same PPO recipe on the same task, both backends.

The task is CartPole-v1: gymnasium's ``SyncVectorEnv`` of ``CartPole-v1`` copies (``env = "CartPole-v1"``, stepped
through numpy) against the pure-torch batched CartPole (``env = "torch:rlplug.envs.torch_cartpole:cartpole"``,
``rlplug.envs.torch_native``: tensors on the env's device end to end). Same recipe (``ppo-cartpole`` with
``--set`` overrides, default ``rollout_steps=16``), same network, same number of envs; each run in a fresh
process, one torch thread. A run builds the recipe (the build's seconds are reported: gymnasium makes one Python
env per copy), trains one iteration untimed (what is built once), then ``--iterations`` timed ones. Reported per
run: training steps/s (collection and updates), and ``env_only`` steps/s: the env alone, stepped ``--env-steps``
times with random actions made where its actions live (numpy for gymnasium, torch on the device for the torch env).
``--train-steps N`` adds a run of N steps per backend and env count on the torch env with its evaluation return
(10 deterministic episodes), the learning check (``--learning-only``: those runs alone). ``--device cuda`` runs everything on a GPU; ``--gym-max-envs``
caps the gymnasium runs' env count (its rows then say how many it had).

    python benchmarks/torch_envs.py [--num-envs 1024,4096] [--backends skrl,torchrl] [--iterations 3]
                                    [--device cpu] [--train-steps 0] [--set KEY=VALUE ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TORCH_ENV = "torch:rlplug.envs.torch_cartpole:cartpole"
GYM_ENV = "CartPole-v1"


def env_only(env: str, num_envs: int, steps: int, device: str) -> float:
    """Steps/s of the env alone, random actions made where its actions live."""
    import numpy as np
    import torch

    if env == GYM_ENV:
        from rlplug.envs.factory import make_gym_vector_env

        vector = make_gym_vector_env(GYM_ENV, None, num_envs)
        vector.reset(seed=0)
        rng = np.random.default_rng(0)
        start = time.perf_counter()
        for _ in range(steps):
            vector.step(rng.integers(0, 2, num_envs))
        elapsed = time.perf_counter() - start
        vector.close()
    else:
        from rlplug.envs.torch_cartpole import cartpole

        made = cartpole(num_envs, device, 0)
        made.reset(seed=0)
        start = time.perf_counter()
        for _ in range(steps):
            made.step(torch.randint(0, 2, (num_envs,), device=made.device))
        if made.device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
    return round(steps * num_envs / elapsed, 1)


def worker(backend: str, env: str, num_envs: int, overrides: list[str], iterations: int, env_steps: int, device: str,
           train_steps: int) -> dict:  # fmt: skip
    import torch

    import rlplug

    torch.set_num_threads(1)
    started = time.perf_counter()
    build = rlplug.build("ppo-cartpole", backend=backend, overrides=[f"env={env}", f"num_envs={num_envs}", *overrides], device=device)
    build_s = time.perf_counter() - started
    trainer = build.trainer
    row = {"backend": backend, "env": env, "num_envs": num_envs, "device": device, "build_s": round(build_s, 2)}
    try:
        if train_steps:
            start = time.perf_counter()
            trainer.train(train_steps)
            wall = time.perf_counter() - start
            returns = trainer.evaluate(10)
            row.update(steps=trainer.env_steps, wall_s=round(wall, 2), steps_per_s=round(trainer.env_steps / wall, 1),
                       eval_return_mean=round(sum(returns) / len(returns), 1), eval_returns=[round(r, 1) for r in returns])  # fmt: skip
            return row
        trainer.train(1)  # one iteration, untimed
        first = trainer.env_steps
        start = time.perf_counter()
        trainer.train(first + iterations * trainer.steps_per_iteration)
        if str(device).startswith("cuda"):
            torch.cuda.synchronize()
        wall = time.perf_counter() - start
        steps = trainer.env_steps - first
        row.update(steps=steps, wall_s=round(wall, 3), steps_per_s=round(steps / wall, 1))
    finally:
        trainer.close()
    row["env_only_steps_per_s"] = env_only(env, num_envs, env_steps, device)
    return row


def render(result: dict) -> str:
    """The markdown table of a result (``--render JSON``): one row per backend and env count."""
    lines = [f"PPO (`{result['recipe']}`, {' '.join(result['overrides'])}) on CartPole-v1, device `{result['device']}`, "
             f"{result['machine']}, {result['torch_threads']} torch thread; steps/s of training (collection and updates) and of the env alone.",
             ]  # fmt: skip
    if result["rows"]:
        lines += ["", "| backend | envs | torch env train steps/s | gymnasium train steps/s | speed-up | torch env alone | gymnasium alone | speed-up |",
                  "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in result["rows"]:
        t, g = row["torch"], row["gymnasium"]
        envs = row["num_envs"] if g["num_envs"] == row["num_envs"] else f"{row['num_envs']} (gymnasium {g['num_envs']})"
        lines.append(f"| {row['backend']} | {envs} | {t['steps_per_s']:,.0f} | {g['steps_per_s']:,.0f} | {row['train_speedup']:.2f}x "
                     f"| {t['env_only_steps_per_s']:,.0f} | {g['env_only_steps_per_s']:,.0f} | {row['env_only_speedup']:.1f}x |")  # fmt: skip
    if result.get("learning"):
        lines += ["", "| backend | envs | steps | wall s | steps/s | eval return (10 episodes) |", "|---|---|---|---|---|---|"]
        for row in result["learning"]:
            lines.append(f"| {row['backend']} | {row['num_envs']} | {row['steps']:,} | {row['wall_s']} | {row['steps_per_s']:,.0f} | {row['eval_return_mean']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", default="1024,4096")
    parser.add_argument("--backends", default="skrl,torchrl")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--env-steps", type=int, default=200, help="steps of the env-only measurement")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--gym-max-envs", type=int, default=0, help="cap the gymnasium runs' env count (0: the same as the torch runs)")
    parser.add_argument("--train-steps", type=int, default=0, help="also train the torch env this many steps and evaluate it")
    parser.add_argument("--learning-only", action="store_true", help="only the --train-steps runs (no steps/s rows)")
    parser.add_argument("--set", dest="overrides", action="append", default=None, metavar="KEY=VALUE",
                        help="recipe overrides for every run (repeatable); default rollout_steps=16")  # fmt: skip
    parser.add_argument("--json", default=None)
    parser.add_argument("--render", default=None, metavar="JSON", help="print the markdown table of an earlier --json file")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.render:
        print(render(json.loads(Path(args.render).read_text())))
        return
    overrides = args.overrides if args.overrides is not None else ["rollout_steps=16"]
    if args.worker is not None:
        backend, env, n = args.worker.split("|")
        print(json.dumps(worker(backend, env, int(n), overrides, args.iterations, args.env_steps, args.device, args.train_steps)))
        return
    environ = {**os.environ, "RL_LOGGING_LEVEL": "WARNING", "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))}

    def run(backend: str, env: str, n: int, train_steps: int = 0) -> dict:
        command = [sys.executable, str(HERE / "torch_envs.py"), "--iterations", str(args.iterations), "--env-steps", str(args.env_steps),
                   "--device", args.device, "--train-steps", str(train_steps), *[f"--set={o}" for o in overrides],
                   "--worker", f"{backend}|{env}|{n}"]  # fmt: skip
        print(f"$ {' '.join(command[1:])}", file=sys.stderr, flush=True)
        out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, env=environ, cwd=HERE.parent).stdout
        return json.loads(out.strip().splitlines()[-1])

    rows, learning = [], []
    for backend in args.backends.split(","):
        for n in (int(x) for x in args.num_envs.split(",")):
            if not args.learning_only:
                torch_row = run(backend, TORCH_ENV, n)
                gym_n = min(n, args.gym_max_envs) if args.gym_max_envs else n
                gym_row = run(backend, GYM_ENV, gym_n)
                rows.append({"backend": backend, "num_envs": n, "torch": torch_row, "gymnasium": gym_row,
                             "train_speedup": round(torch_row["steps_per_s"] / gym_row["steps_per_s"], 2),
                             "env_only_speedup": round(torch_row["env_only_steps_per_s"] / gym_row["env_only_steps_per_s"], 2)})  # fmt: skip
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
            if args.train_steps:
                learning.append(run(backend, TORCH_ENV, n, args.train_steps))
                print(json.dumps(learning[-1]), file=sys.stderr, flush=True)
    import platform

    import torch

    result = {"benchmark": "torch_envs", "recipe": "ppo-cartpole", "overrides": overrides, "device": args.device,
              "iterations": args.iterations, "torch_threads": 1, "machine": f"{platform.machine()} {os.cpu_count()} CPUs",
              "torch": torch.__version__, "rows": rows, "learning": learning}  # fmt: skip
    text = json.dumps(result, indent=2)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
