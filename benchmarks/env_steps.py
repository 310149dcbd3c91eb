"""Environment steps/s of the vector modes alone (uniform random actions, no learner): gymnasium's sync and async
vector envs as rlplug builds them (``make_gym_vector_env``, its wrapper chain around each copy) against EnvPool, at
8 and 64 copies, on MuJoCo (HalfCheetah-v5) and Atari (Pong, Atari-preprocessed: 84x84 grey, frame skip 4, 4 frames
stacked, 30 no-op resets).

MuJoCo's EnvPool row is rlplug's ``vector_mode = "envpool"`` (``rlplug.envs.envpool_vector``). Atari's is EnvPool's
own ``Pong-v5`` with the same preprocessing, measured for comparison: rlplug refuses ``atari = true`` with EnvPool
(its ALE copies are not gymnasium's ``ALE/Pong-v5``: no sticky actions by default, another id). Construction (the
async workers' start) is outside the timing; each figure is the best of ``--repeats`` timed runs.

    python benchmarks/env_steps.py [--num-envs 8,64] [--repeats 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

TASKS = {
    "HalfCheetah-v5": {"vector_steps": {8: 1500, 64: 300}},
    "ALE/Pong-v5": {"vector_steps": {8: 300, 64: 60}, "atari": True},
}


def make(task: str, mode: str, num_envs: int):
    from rlplug.envs.factory import make_gym_vector_env
    from rlplug.envs.spec import EnvSpec

    atari = TASKS[task].get("atari", False)
    if mode == "envpool" and atari:
        import envpool

        return envpool.make_gymnasium("Pong-v5", num_envs=num_envs, seed=0, stack_num=4, noop_max=30, frame_skip=4,
                                      episodic_life=False, reward_clip=True, img_height=84, img_width=84)  # fmt: skip
    spec = EnvSpec(id=task, atari=atari, frame_stack=4 if atari else 0, vector_mode=mode)
    return make_gym_vector_env(spec, None, num_envs)


def measure(task: str, mode: str, num_envs: int, repeats: int) -> dict:
    built = time.perf_counter()
    env = make(task, mode, num_envs)
    env.reset(seed=0)
    built = time.perf_counter() - built
    rng = np.random.default_rng(0)
    space = env.action_space
    steps = TASKS[task]["vector_steps"][num_envs]
    if hasattr(space, "nvec") or space.__class__.__name__ == "Discrete":
        n = int(space.nvec[0]) if hasattr(space, "nvec") else int(space.n)
        actions = rng.integers(0, n, size=(steps, num_envs))
    else:
        low = np.broadcast_to(space.low, space.shape)[0] if space.shape[0] == num_envs else space.low
        shape = space.shape if space.shape[0] == num_envs else (num_envs, *space.shape)
        actions = rng.uniform(-1.0, 1.0, size=(steps, *shape)).astype(np.float32) * np.abs(low).max()
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        for action in actions:
            env.step(action)
        best = max(best, steps * num_envs / (time.perf_counter() - start))
    env.close()
    return {"task": task, "mode": mode, "num_envs": num_envs, "env_steps": steps * num_envs, "steps_per_s": round(best, 1),
            "build_s": round(built, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", default="8,64")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--modes", default="sync,async,envpool")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    for task in args.tasks.split(","):
        for num_envs in (int(n) for n in args.num_envs.split(",")):
            for mode in args.modes.split(","):
                rows.append(measure(task, mode, num_envs, args.repeats))
                print(json.dumps(rows[-1]), file=sys.stderr)
    command = "python benchmarks/env_steps.py" + "".join(
        f" --{name.replace('_', '-')} {value}" for name, value in vars(args).items()
        if name != "json" and value != parser.get_default(name))  # fmt: skip
    out = {"section": "env_steps", "command": command, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "data": {"cpu_count": os.cpu_count(), "machine": platform.machine(), "rows": rows}}
    text = json.dumps(out, indent=2)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
