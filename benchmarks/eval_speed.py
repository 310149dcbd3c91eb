"""Evaluation speed (issue 53): where the seconds of `rlplug eval RUN_DIR` go, and its evaluation loop beside a
plain loop of the same policy over the same episodes.

For each run directory (train them first, e.g. `rlplug train ppo-cartpole --backend skrl --steps 5000 --run-dir
DIR`), in fresh interpreters:

* ``command``: the wall seconds of `rlplug eval RUN_DIR --episodes N --json` as a user runs it: a run trained since
  2026-12-06 has its final policy beside its checkpoint (``checkpoints/latest.policy.pt``), which `eval` plays with
  torch alone; ``command_checkpoint``: the same command on a copy of the run without that file (the checkpoint opened,
  the trainer built; the same returns, checked); and `rlplug export RUN_DIR`, which opens the run that way, traces the
  policy and checks the file's actions;
* ``phases``: the same work step by step in one child: importing rlplug, reading the checkpoint (``saved_run``,
  which imports torch), importing the backend's libraries (the cell's backend module: skrl, or TorchRL and
  tensordict), building the trainer (models, memory, loss, training environments), loading its state, and
  ``Trainer.evaluate(N)`` (its evaluation environment and the N episodes);
* ``plain``: a plain loop in that same child, after the phases: the run's policy exported with `rlplug export`'s
  module (``trainer.export_policy()``, traced to TorchScript as `rlplug export` writes it, then loaded back with
  ``torch.jit.load``), acting on ``gymnasium.make(env)`` with the evaluation's reset seeds, no rlplug code in the
  loop; and ``plain_script``: the same loop as a whole script (`python -c`: import torch and gymnasium, load the
  file, run the episodes).

The goal (issue 53): the whole `rlplug eval` command within 1.5x of the plain script, and ``evaluate`` within 1.5x of
``plain`` (same episodes, same returns, checked), in wall seconds; the CPU
seconds of both (``process_time``, one thread) are given too, steadier on a busy machine. Beside it, the same
episodes acting through ``act_deterministic``, as evaluation did before (same returns, checked). Each figure is the median
of ``--repeats`` children (one warm-up first), one torch thread.

    python benchmarks/eval_speed.py RUN_DIR [RUN_DIR ...] [--episodes 10] [--repeats 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD_ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "OMP_NUM_THREADS": "1"}

PHASES = r"""
import json, sys, time
t = [time.perf_counter()]
run_dir, episodes, policy_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
from pathlib import Path
from rlplug.pipeline.session import Session
from rlplug.runs.plugins import session_for_run
t.append(time.perf_counter())
from rlplug.runs.saved import saved_run
from rlplug.runs.checkpoints import check_header, load_trainer_state
saved = saved_run(Path(run_dir), True, "latest")
t.append(time.perf_counter())
session = session_for_run(Session(), Path(run_dir))
build = session.prepare(saved.recipe, saved.backend)
import importlib
importlib.import_module("rlplug.backends." + saved.backend)  # the core's backend package: the library's imports
t.append(time.perf_counter())
session.construct(build)
t.append(time.perf_counter())
check_header(saved.payload.get("rlplug", {}), build, saved.checkpoint)
load_trainer_state(build, saved.payload["trainer"], saved.checkpoint)
t.append(time.perf_counter())
cpu = time.process_time()
returns = build.trainer.evaluate(episodes)
t.append(time.perf_counter())
evaluate_cpu = time.process_time() - cpu
# the same episodes acting through act_deterministic, as evaluation did before issue 53 (TorchRL: a TensorDict and
# the probabilistic actor per step; skrl: the running scaler recomputing its denominator per step)
build.trainer.evaluation_act = lambda: build.trainer.act_deterministic
started, cpu = time.perf_counter(), time.process_time()
reference_returns = build.trainer.evaluate(episodes)
reference_seconds, reference_cpu = time.perf_counter() - started, time.process_time() - cpu
import torch
from rlplug.results.export import export_policy
export_policy(build, policy_file, "torchscript", check=False)  # what `rlplug export` writes (a traced module)
build.trainer.close()

import gymnasium as gym
import numpy as np
policy = torch.jit.load(policy_file)
started, cpu = time.perf_counter(), time.process_time()
env = gym.make(build.env_id)
plain = []
with torch.no_grad():
    for episode in range(episodes):
        obs, _ = env.reset(seed=build.seed + 10_000 + episode)
        total, done = 0.0, False
        while not done:
            action = policy(torch.as_tensor(obs, dtype=torch.float32)[None])[0].numpy()
            obs, reward, terminated, truncated, _ = env.step(int(action) if isinstance(env.action_space, gym.spaces.Discrete) else action)
            total += float(reward)
            done = terminated or truncated
        plain.append(total)
plain_seconds, plain_cpu = time.perf_counter() - started, time.process_time() - cpu
names = ["import_rlplug", "read_checkpoint", "import_backend", "build_trainer", "load_state", "evaluate"]
print("RESULT " + json.dumps({"phases": dict(zip(names, (b - a for a, b in zip(t, t[1:])))), "plain": plain_seconds,
                              "returns": returns, "plain_returns": plain, "reference": reference_seconds,
                              "reference_returns": reference_returns, "cpu": {"evaluate": evaluate_cpu, "plain": plain_cpu,
                              "reference": reference_cpu}}))
"""

PLAIN_SCRIPT = r"""
import sys, torch, gymnasium as gym
policy_file, env_id, seed, episodes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
policy = torch.jit.load(policy_file)
env = gym.make(env_id)
with torch.no_grad():
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + 10_000 + episode)
        done = False
        while not done:
            action = policy(torch.as_tensor(obs, dtype=torch.float32)[None])[0].numpy()
            obs, reward, terminated, truncated, _ = env.step(int(action) if isinstance(env.action_space, gym.spaces.Discrete) else action)
            done = terminated or truncated
"""


def timed(argv: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=CHILD_ENV, check=True)
    return time.perf_counter() - started, done.stdout


def measure(run_dir: str, episodes: int, repeats: int) -> dict:
    summary = json.loads((Path(run_dir) / "summary.json").read_text())
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        policy_file = str(Path(scratch) / "policy.pt")
        without_policy = Path(scratch) / "run"  # copy2 keeps the checkpoint's times: only the file beside it is missing
        shutil.copytree(run_dir, without_policy, ignore=shutil.ignore_patterns("latest.policy.pt", ".lock"))
        for attempt in range(repeats + 1):  # the first is a warm-up (file caches)
            command, out = timed([sys.executable, "-m", "rlplug.cli", "eval", run_dir, "--episodes", str(episodes), "--json"])
            command_checkpoint, out_checkpoint = timed([sys.executable, "-m", "rlplug.cli", "eval", str(without_policy),
                                                        "--episodes", str(episodes), "--json"])  # fmt: skip
            scored = [json.loads(text)["eval_return_mean"] for text in (out, out_checkpoint)]
            if scored[0] != scored[1]:
                raise SystemExit(f"{run_dir}: eval of the policy beside the checkpoint gave {scored[0]}, of the checkpoint {scored[1]}")
            export, _ = timed([sys.executable, "-m", "rlplug.cli", "export", run_dir, "--out", str(Path(scratch) / "exported.pt"), "--json"])
            _, out = timed([sys.executable, "-c", PHASES, run_dir, str(episodes), policy_file])
            result = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])
            script, _ = timed([sys.executable, "-c", PLAIN_SCRIPT, policy_file, summary["env"], str(summary["seed"]), str(episodes)])
            if not result["returns"] == result["plain_returns"] == result["reference_returns"]:
                raise SystemExit(f"{run_dir}: rlplug's returns {result['returns']} differ from the plain loop's {result['plain_returns']}")
            if attempt:
                rows.append({"command": command, "command_checkpoint": command_checkpoint, "export": export,
                             "plain_script": script, **result})  # fmt: skip
    median = lambda values: round(statistics.median(values), 3)  # noqa: E731
    phases = {name: median([r["phases"][name] for r in rows]) for name in rows[0]["phases"]}
    evaluate, plain = phases["evaluate"], median([r["plain"] for r in rows])
    return {
        "run_dir": run_dir, "recipe": summary["recipe"], "backend": summary["backend"], "env": summary["env"],
        "episodes": episodes, "env_steps": int(sum(rows[0]["returns"])) if summary["env"].startswith("CartPole") else None,
        "eval_return_mean": round(sum(rows[0]["returns"]) / episodes, 2),
        "trained_with": (Path(run_dir) / "command.txt").read_text().strip() if (Path(run_dir) / "command.txt").is_file() else None,
        "played_beside_checkpoint": (Path(run_dir) / "checkpoints" / "latest.policy.pt").is_file(),
        "command_seconds": median([r["command"] for r in rows]),
        "command_checkpoint_seconds": median([r["command_checkpoint"] for r in rows]),
        "export_command_seconds": median([r["export"] for r in rows]),
        "phases": phases,
        "plain_loop_seconds": plain, "evaluate_over_plain": round(evaluate / plain, 2),
        "evaluate_act_deterministic_seconds": median([r["reference"] for r in rows]),
        "act_deterministic_over_plain": round(median([r["reference"] for r in rows]) / plain, 2),
        "plain_script_seconds": median([r["plain_script"] for r in rows]),
        "command_over_plain_script": round(median([r["command"] for r in rows]) / median([r["plain_script"] for r in rows]), 2),
        "cpu_seconds": {name: median([r["cpu"][name] for r in rows]) for name in ("evaluate", "plain", "reference")},
        "evaluate_over_plain_cpu": round(median([r["cpu"]["evaluate"] for r in rows]) / median([r["cpu"]["plain"] for r in rows]), 2),
        "act_deterministic_over_plain_cpu": round(median([r["cpu"]["reference"] for r in rows]) / median([r["cpu"]["plain"] for r in rows]), 2),
        "command_checkpoint_over_plain_script": round(median([r["command_checkpoint"] for r in rows]) / median([r["plain_script"] for r in rows]), 2),
        "goal_met": evaluate / plain <= 1.5 and median([r["command"] for r in rows]) / median([r["plain_script"] for r in rows]) <= 1.5,
        "spread": {"command": [round(r["command"], 3) for r in rows], "plain_script": [round(r["plain_script"], 3) for r in rows],
                   "evaluate": [round(r["phases"]["evaluate"], 3) for r in rows],
                   "plain": [round(r["plain"], 3) for r in rows]},
    }


def table(results: list[dict]) -> str:
    lines = ["| run | episodes (steps) | `rlplug eval` | plain script | **eval ÷ script** | `rlplug eval` from the checkpoint (÷ script) | "
             "`rlplug export` | import rlplug | read checkpoint | import backend | build trainer | load state | evaluate | plain loop | "
             "evaluate ÷ plain (CPU s) | before: act_deterministic ÷ plain (CPU s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        p = r["phases"]
        lines.append(
            f"| {r['recipe']} {r['backend']} | {r['episodes']} ({r['env_steps']}) | {r['command_seconds']:.2f} s | "
            f"{r['plain_script_seconds']:.2f} s | **{r['command_over_plain_script']:.2f}** ({'met' if r['goal_met'] else 'not met'}) | "
            f"{r['command_checkpoint_seconds']:.2f} s ({r['command_checkpoint_over_plain_script']:.2f}) | "
            f"{r['export_command_seconds']:.2f} s | {p['import_rlplug']:.2f} | "
            f"{p['read_checkpoint']:.2f} | {p['import_backend']:.2f} | {p['build_trainer']:.2f} | {p['load_state']:.2f} | "
            f"**{p['evaluate']:.3f}** | {r['plain_loop_seconds']:.3f} | **{r['evaluate_over_plain']:.2f}** "
            f"({r['evaluate_over_plain_cpu']:.2f}) | {r['act_deterministic_over_plain']:.2f} "
            f"({r['act_deterministic_over_plain_cpu']:.2f}) |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    results = [measure(run_dir, args.episodes, args.repeats) for run_dir in args.run_dirs]
    print(table(results))
    if args.json:
        document = {"section": "eval_speed", "command": " ".join(["python", *sys.argv]),
                    "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                    "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version()}, "data": results,
                    "table": table(results)}
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
