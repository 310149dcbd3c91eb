"""MAPPO with action masks against MAPPO ignoring them (issue 33 point 4), one measurement on the tests' tiny
masked env ``pz:masked_ma_envs:make_pick`` (2 agents, 4 actions, 2 valid per step, an invalid pick ends the
episode; 16 steps, at most 16 per agent). Both runs observe the same features (cue and valid actions); the
masked run also gets the mask as ``action_mask``, the other (``mask_in = "none"``) must learn validity.

    python benchmarks/mappo_masks.py [--backend skrl] [--steps 6000] [--seed 0]

Prints one JSON object: per variant, the mean training episode return over each quarter of the run, the
share of invalid picks during training, and the deterministic evaluation return (10 episodes).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # masked_ma_envs lives with the tests

RECIPE = """
[recipes.masked-pick]
algorithm = "mappo"
env = "pz:masked_ma_envs:make_pick"
env_kwargs = {{ mask_in = "{mask_in}" }}
backend = "{backend}"
steps = {steps}
num_envs = 4
seed = {seed}
target = 15.0

[recipes.masked-pick.hyperparameters]
rollout_steps = 64
epochs = 4
minibatches = 2
hidden_sizes = [64, 64]
learning_rate = 3e-4
"""


def run(backend: str, mask_in: str, steps: int, seed: int) -> dict:
    import masked_ma_envs
    from rlplug.pipeline.session import Session

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recipes.toml"
        path.write_text(RECIPE.format(mask_in=mask_in, backend=backend, steps=steps, seed=seed))
        session = Session(recipe_files=[str(path)])
        build = session.build(session.resolve("masked-pick"), backend)
    env = masked_ma_envs.MaskedPickEnv
    env.invalid_actions = env.valid_actions = 0
    returns: list[float] = []
    try:
        build.trainer.train(steps, callbacks=[lambda _, m: returns.append(m["train/episode_return"]) if "train/episode_return" in m else None])
        invalid = env.invalid_actions / max(1, env.invalid_actions + env.valid_actions)
        evaluation = build.trainer.evaluate(10)
    finally:
        build.trainer.close()
    quarters = [round(float(np.mean(q)), 2) if len(q) else None for q in np.array_split(np.asarray(returns), 4)]
    return {"mask_in": mask_in, "train_return_by_quarter": quarters, "invalid_pick_share": round(invalid, 3),
            "eval_mean": round(float(np.mean(evaluation)), 2)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="skrl", choices=["skrl", "torchrl"])
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    variants = [run(args.backend, mask_in, args.steps, args.seed) for mask_in in ("observation", "none")]
    print(json.dumps({"backend": args.backend, "steps": args.steps, "seed": args.seed, "runs": variants}, indent=1))


if __name__ == "__main__":
    main()
