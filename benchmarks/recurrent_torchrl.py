"""Recurrent PPO on TorchRL (issue 33), one measurement: ppo-cartpole's settings on CartPole without its
velocities (observations 1 and 3 removed), feed-forward against ``recurrent = "lstm"``, and the steps per second
of both paths on the full CartPole (wall time of ``train`` on this machine, not comparable across boxes).

    python benchmarks/recurrent_torchrl.py [--steps 30000] [--seed 0] [--speed-steps 4096]

Prints one JSON object. Not part of ``all.py``: the recipes of issue 33 get their seeded rows from the bench.
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

NO_VELOCITY = "RlplugBenchCartPoleNoVel-v1"


def cartpole_without_velocities() -> gym.Env:
    env = gym.make("CartPole-v1")
    space = gym.spaces.Box(env.observation_space.low[[0, 2]], env.observation_space.high[[0, 2]], dtype=np.float32)
    return gym.wrappers.TransformObservation(env, lambda obs: obs[[0, 2]], space)


def run(env: str, recurrent: str, steps: int, seed: int, episodes: int) -> dict:
    import rlplug

    session = rlplug.pipeline.session.Session()
    overrides = [f"env={env}", f"steps={steps}", f"seed={seed}"] + ([f"recurrent={recurrent}"] if recurrent else [])
    build = session.build(session.resolve("ppo-cartpole", overrides), "torchrl")
    returns: list[float] = []
    try:
        started = time.perf_counter()
        build.trainer.train(steps, callbacks=[lambda _, m: returns.append(m["train/episode_return"]) if "train/episode_return" in m else None])
        wall = time.perf_counter() - started
        evaluation = build.trainer.evaluate(episodes) if episodes else []
    finally:
        build.trainer.close()
    result = {"env": env, "recurrent": recurrent or "feed-forward", "steps": steps, "seed": seed,
              "steps_per_s": round(steps / wall, 1), "train_return_last5": round(float(np.mean(returns[-5:])), 1)}  # fmt: skip
    if evaluation:
        result.update(eval_mean=round(float(np.mean(evaluation)), 1), eval_std=round(float(np.std(evaluation)), 1))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--speed-steps", type=int, default=4096)
    args = parser.parse_args()
    gym.register(NO_VELOCITY, entry_point=cartpole_without_velocities)
    learning = [run(NO_VELOCITY, kind, args.steps, args.seed, 10) for kind in ("", "lstm")]
    speed = [run("CartPole-v1", kind, args.speed_steps, args.seed, 0) for kind in ("", "lstm", "gru")]
    print(json.dumps({"learning": learning, "speed": speed}, indent=1))


if __name__ == "__main__":
    main()
