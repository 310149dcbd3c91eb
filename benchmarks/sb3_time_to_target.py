"""Time to target: rlplug's skrl backend vs Stable-Baselines3 (RL Zoo hyperparameters), side by side.

For ppo-cartpole (target 475) and sac-pendulum (target -200), each repeat (one per ``--seeds`` seed, the
same seed on both sides) trains SB3 and rlplug one after the other in this process (the order alternates between repeats, so load drift hits both) and
evaluates each every ``--eval-every`` env steps with the same protocol: the deterministic policy for
10 episodes on a separate gymnasium env seeded 10000+i. The clock counts training only: it pauses
while evaluating. Recorded per run: training wall seconds (and CPU seconds) until the evaluation
return first reaches the target, and the env steps by then; training stops there. Reported: the
ratio rlplug ÷ SB3 of those seconds per repeat, with mean, min and max, and the ratio of the mean times
over seeds (goal <= 0.7). ``--set KEY=VALUE`` overrides rlplug's recipe (to time a variant).

SB3 is an optional benchmark dependency: ``pip install -e '.[bench]' -c constraints.txt``.
RL Zoo (rl-baselines3-zoo hyperparams/ppo.yml CartPole-v1, sac.yml Pendulum-v1):
  PPO CartPole-v1: n_envs 8, n_steps 32, batch_size 256, gae_lambda 0.8, gamma 0.98, n_epochs 20,
                   ent_coef 0.0, learning_rate lin_0.001, clip_range lin_0.2, 1e5 steps.
  SAC Pendulum-v1: learning_rate 1e-3, 20,000 steps, everything else SB3's defaults (buffer 1e6,
                   batch 256, learning_starts 100, tau 0.005, gamma 0.99, ent_coef auto, 256-256).

    nice -n 5 python benchmarks/sb3_time_to_target.py --recipe ppo-cartpole --seeds 42,0,1
    nice -n 5 python benchmarks/sb3_time_to_target.py --recipe sac-pendulum --seeds 42 --set hidden_sizes=[256,256] --json OUT
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GOAL = 0.7
EVAL_EPISODES = 10


@dataclass(frozen=True)
class Setup:
    env_id: str
    target: float
    max_steps: int  # the recipe's budget: a run that has not reached the target by then failed
    eval_every: int  # env steps between evaluations (a multiple of both sides' iteration sizes)


SETUPS = {
    "ppo-cartpole": Setup("CartPole-v1", 475.0, 100_000, 4_096),  # rlplug: 512 steps per iteration; SB3: 8 per step
    "sac-pendulum": Setup("Pendulum-v1", -200.0, 20_000, 1_000),  # rlplug: log_every 1,000 steps per iteration
}


def evaluate(env_id: str, act: Callable[[np.ndarray], np.ndarray], episodes: int = EVAL_EPISODES) -> float:
    """Mean return of ``episodes`` deterministic episodes on a fresh env seeded 10000+i (same for both):
    rlplug's own evaluation loop, seed 0, so both sides are scored by the same code."""
    from rlplug.envs.evaluation import evaluate_policy

    return float(np.mean(evaluate_policy(env_id, {}, act, episodes, seed=0)))


class TargetClock:
    """Training time excluding evaluations: ``due(steps)`` says whether an evaluation is owed,
    ``check(steps, act)`` evaluates with the clock paused and remembers when the target was first met."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.next_eval = setup.eval_every
        self.paused_wall = self.paused_cpu = 0.0
        self.start_wall, self.start_cpu = time.perf_counter(), time.process_time()
        self.curve: list[tuple[int, float, float]] = []  # (env steps, train wall s, eval return)
        self.reached: dict | None = None

    def elapsed(self) -> tuple[float, float]:
        return (time.perf_counter() - self.start_wall - self.paused_wall, time.process_time() - self.start_cpu - self.paused_cpu)

    def due(self, steps: int) -> bool:
        return steps >= self.next_eval and self.reached is None

    def check(self, steps: int, act: Callable[[np.ndarray], np.ndarray]) -> bool:
        """Evaluate (clock paused); True once the target is reached (the caller stops training)."""
        wall, cpu = self.elapsed()
        pause_wall, pause_cpu = time.perf_counter(), time.process_time()
        score = evaluate(self.setup.env_id, act)
        self.paused_wall += time.perf_counter() - pause_wall
        self.paused_cpu += time.process_time() - pause_cpu
        self.curve.append((steps, round(wall, 2), round(score, 1)))
        while self.next_eval <= steps:
            self.next_eval += self.setup.eval_every
        if score >= self.setup.target:
            self.reached = {"steps": steps, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "eval_return": round(score, 1)}
        return self.reached is not None

    def result(self, side: str) -> dict:
        return {"side": side, "reached": self.reached is not None, **(self.reached or {}), "curve": self.curve}


# ---- Stable-Baselines3 --------------------------------------------------------------------------


def linear(initial: float) -> Callable[[float], float]:
    """RL Zoo's ``lin_X``: X times the remaining fraction of training."""
    return lambda progress_remaining: progress_remaining * initial


def run_sb3(recipe: str, seed: int) -> dict:
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger

    setup = SETUPS[recipe]
    if recipe == "ppo-cartpole":
        env = make_vec_env(setup.env_id, n_envs=8, seed=seed)
        model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0,
                    learning_rate=linear(0.001), clip_range=linear(0.2), seed=seed, device="cpu", verbose=0)
    else:
        env = make_vec_env(setup.env_id, n_envs=1, seed=seed)
        model = SAC("MlpPolicy", env, learning_rate=1e-3, seed=seed, device="cpu", verbose=0)

    def act(obs: np.ndarray) -> np.ndarray:
        return model.predict(obs, deterministic=True)[0]

    class Stopper(BaseCallback):
        def _on_step(self) -> bool:
            if clock.due(self.num_timesteps):
                return not clock.check(self.num_timesteps, act)
            return True

    clock = TargetClock(setup)
    model.set_logger(Logger(None, []))  # no output (learn's own configure would make a directory in /tmp per run)
    model.learn(total_timesteps=setup.max_steps, callback=Stopper())
    env.close()
    return clock.result("sb3")


# ---- rlplug (skrl backend, Python API) ----------------------------------------------------------


def run_rlplug(recipe: str, seed: int, backend: str = "skrl", overrides: tuple[str, ...] = ()) -> dict:
    import rlplug

    setup = SETUPS[recipe]
    resolved = rlplug.resolve(recipe, overrides)
    resolved.seed = seed
    build = rlplug.build(resolved, backend=backend)
    trainer = build.trainer

    def on_iteration(tr, metrics: dict) -> bool:
        if clock.due(tr.env_steps):
            return not clock.check(tr.env_steps, tr.act_deterministic)
        return True

    clock = TargetClock(setup)
    try:
        trainer.train(setup.max_steps, callbacks=[on_iteration])
    finally:
        trainer.close()
    return clock.result(f"rlplug-{backend}")


# ---- comparison ---------------------------------------------------------------------------------


def compare(recipe: str, seeds: list[int], overrides: tuple[str, ...] = ()) -> dict:
    runs: dict[str, list[dict]] = {"sb3": [], "rlplug": []}
    sides = {"sb3": run_sb3, "rlplug": lambda recipe, seed: run_rlplug(recipe, seed, overrides=overrides)}
    repeats = len(seeds)
    for repeat, seed in enumerate(seeds):
        order = ("sb3", "rlplug") if repeat % 2 == 0 else ("rlplug", "sb3")
        for side in order:
            result = sides[side](recipe, seed)
            result["seed"] = seed
            runs[side].append(result)
            print(f"{recipe} repeat {repeat + 1} {side}: reached {result['reached']} "
                  f"at {result.get('steps')} steps, {result.get('wall_s')} s train wall "
                  f"(evals {result['curve']})", file=sys.stderr, flush=True)
    summary: dict = {"target": SETUPS[recipe].target, "eval_every": SETUPS[recipe].eval_every, "repeats": repeats,
                     "seeds": seeds, "overrides": list(overrides),
                     "sb3": runs["sb3"], "rlplug": runs["rlplug"], "goal": GOAL}
    paired = [(r, s) for r, s in zip(runs["rlplug"], runs["sb3"]) if r["reached"] and s["reached"]]
    for clock in ("wall_s", "cpu_s"):
        ratios = [r[clock] / s[clock] for r, s in paired]
        # seeds differ in how soon each library learns: the ratio of the mean times pools them, and judges
        pooled = statistics.mean(r[clock] for r, _ in paired) / statistics.mean(s[clock] for _, s in paired) if paired else None
        summary[clock.replace("_s", "")] = {
            "rlplug_s": [r[clock] for r, _ in paired],
            "sb3_s": [s[clock] for _, s in paired],
            "ratios": [round(x, 3) for x in ratios],
            "ratio_mean": round(statistics.mean(ratios), 3) if ratios else None,
            "ratio_min": round(min(ratios), 3) if ratios else None,
            "ratio_max": round(max(ratios), 3) if ratios else None,
            **({"ratio_of_means": round(pooled, 3)} if paired else {}),
            "met": pooled is not None and pooled <= GOAL and len(paired) == repeats,
        }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="ppo-cartpole,sac-pendulum", help=f"comma-separated, of {', '.join(SETUPS)}")
    parser.add_argument("--seeds", default="42,0,1", help="one repeat per seed, the same seed on both sides (default 42,0,1)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a field of rlplug's recipe (repeatable), as `rlplug train --set`")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    results = {}
    for recipe in args.recipe.split(","):
        if recipe not in SETUPS:
            parser.error(f"unknown recipe '{recipe}' (choose from {', '.join(SETUPS)})")
        results[recipe] = compare(recipe, [int(x) for x in args.seeds.split(",") if x], tuple(args.overrides))
    text = json.dumps(results, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
