"""A recipe's cell on skrl and on TorchRL fed the same random numbers: is it one algorithm on both backends?

A seed gives each backend a different random stream (skrl draws the DQN warm-up from numpy, TorchRL from torch;
they build, probe and reset their envs differently), so two backends' runs of one seed are two samples, and a
row over three seeds can pass on one backend and miss on the other by chance. Here the streams are aligned so
that the same algorithm must give the same run: both vector envs reset with one seed, torch's generator seeded
once the cells are built, and where the libraries draw different amounts a shim draws what the other does:

* ``dqn-cartpole``: no uniform warm-up (``learning_starts = 0``), and TorchRL's extra reset of a one-env vector
  env after each episode end left out (it draws the next start state a second time).
* ``ppo-cartpole``: TorchRL's rollout stored in skrl's row order (step-major) and cut into minibatches with skrl's
  draws (one ``randperm`` per epoch; one categorical sample per minibatch row, which skrl's ``policy.act`` draws
  and discards).

Prints the first iteration whose training return differs (``None``: none did) and both final evaluations.
Measured 2026-12-02 (issue 29, the recipes' seed 42): dqn-cartpole the same in all 20 iterations (every training
return; the final evaluation 500 x 10 on both), as ``tests/test_dqn_backend_parity.py`` checks action by action on
a short run; ppo-cartpole the same for the first 7 rollouts (3,584 steps, 56 minibatch updates; parameters within
1e-5), then apart through float rounding (the first update's parameters already differ by 1e-6: float32 vs
float64 statistics, summation order), both 500 x 10 at the end.

    python benchmarks/aligned_runs.py dqn-cartpole
    python benchmarks/aligned_runs.py ppo-cartpole --steps 4096
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch

import rlplug

ENV_SEED, TORCH_SEED = 123, 7


class SkrlMinibatches:
    """The rollout buffer of a TorchRL on-policy trainer with skrl's draws: a ``randperm`` per epoch cut into
    ``minibatches`` consecutive parts (without replacement, as TorchRL's sampler), and after each minibatch the
    categorical sample per row that skrl's ``policy.act`` makes inside its loss."""

    def __init__(self, minibatches: int) -> None:
        self.minibatches, self.rows = minibatches, None

    def __len__(self) -> int:
        return 0 if self.rows is None else len(self.rows)

    def extend(self, rows) -> None:
        self.rows = rows

    def __iter__(self):
        for part in np.array_split(torch.randperm(len(self.rows)).numpy(), self.minibatches):
            yield self.rows[torch.as_tensor(part)]
            torch.multinomial(torch.ones(len(part), 2), 1, True)


def align(built: rlplug.Build) -> None:
    """Reset the cell's vector env with ``ENV_SEED`` and put the shims of the module docstring in place."""
    trainer = built.trainer
    if built.backend == "skrl":
        observations, _ = trainer.env._env.reset(seed=ENV_SEED)
        trainer._observations = torch.as_tensor(observations, dtype=torch.float32)
        return
    collection = trainer.collection
    vector_env = collection.vector_env
    observations, _ = vector_env.reset(seed=ENV_SEED)
    for own in collection._observations:
        own.copy_(torch.as_tensor(observations))
    if built.algorithm.kind == "on-policy":
        trainer.memory_rows = lambda batch: batch.transpose(0, 1).reshape(-1)  # row = step * envs + env
        trainer.memory = SkrlMinibatches(built.hp["minibatches"])
    else:
        step, last = vector_env.step, {}

        def recorded_step(action):
            last["step"] = step(action)
            return last["step"]

        vector_env.step = recorded_step
        vector_env.reset = lambda **kwargs: (last["step"][0], {})  # on from the autoreset observation, as skrl


def run(recipe: str, backend: str, steps: int | None, overrides: list[str]) -> tuple[list[float], list[float]]:
    """Training returns per iteration and the final evaluation of one aligned run of ``steps`` (the budget)."""
    built = rlplug.build(recipe, backend, overrides)
    try:
        align(built)
        returns: list[float] = []
        torch.manual_seed(TORCH_SEED)
        record = lambda _, metrics: returns.append(metrics.get("train/episode_return", math.nan))  # noqa: E731
        built.trainer.train(steps or built.recipe.steps, [record])
        return returns, list(built.trainer.evaluate(built.recipe.eval_episodes))
    finally:
        built.trainer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", choices=("dqn-cartpole", "ppo-cartpole"))
    parser.add_argument("--steps", type=int, help="environment steps to train (default: the recipe's budget)")
    args = parser.parse_args()
    overrides = ["learning_starts=0"] if args.recipe.startswith("dqn") else []
    (skrl_returns, skrl_eval), (torchrl_returns, torchrl_eval) = (
        run(args.recipe, backend, args.steps, overrides) for backend in ("skrl", "torchrl")
    )
    same = [a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(skrl_returns, torchrl_returns)]
    print(f"{args.recipe}: {len(same)} iterations, first with a different training return: "
          f"{same.index(False) if False in same else None}")  # fmt: skip
    print(f"final evaluation  skrl {skrl_eval}\n                  torchrl {torchrl_eval}")


if __name__ == "__main__":
    main()
