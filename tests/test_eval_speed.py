"""Evaluation acts through a cheaper path than ``act_deterministic`` (TorchRL: the exported module, no TensorDict
per step; skrl: the running scaler's statistics read once), and it must be the same policy: the same actions on
the same observations, the same returns over the same episodes. Speed itself: benchmarks/eval_speed.py."""

from __future__ import annotations

import numpy as np
import pytest

from rlplug.pipeline.session import Session

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

PPO = ["num_envs=2", "rollout_steps=32", "hidden_sizes=[16, 16]", "epochs=2"]
OFF = ["learning_starts=64", "hidden_sizes=[16, 16]", "batch_size=16", "log_every=64"]


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
@pytest.mark.parametrize(("recipe", "overrides"), [("ppo-cartpole", PPO), ("ppo-pendulum", PPO), ("sac-pendulum", OFF),
                                                   ("dqn-cartpole", OFF), ("td3-pendulum", OFF)])
def test_evaluation_acts_as_act_deterministic(recipe, overrides, backend):
    build = Session().build(recipe, backend, overrides)
    trainer = build.trainer
    try:
        trainer.train(128)  # moved weights and normaliser statistics
        act = trainer.evaluation_act()
        scaled = backend == "skrl" and trainer.deterministic_policy().preprocessor is not None
        assert (act != trainer.act_deterministic) == (backend == "torchrl" or scaled)  # the cheaper path, where there is one
        observations = np.random.default_rng(0).normal(size=(64, *build.observation_space.shape)).astype(np.float32) * 3
        for row in observations:
            assert np.array_equal(act(row[None]), trainer.act_deterministic(row[None]))
        fast = trainer.evaluate(2)
        trainer.evaluation_act = lambda: trainer.act_deterministic  # the reference path
        assert fast == trainer.evaluate(2)
    finally:
        trainer.close()
