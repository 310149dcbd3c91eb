"""The Python API: resolve, build with overrides, step, train, evaluate, save and load."""

from __future__ import annotations

import importlib.util

import pytest

import rlplug

BACKENDS = ["skrl", pytest.param("torchrl", marks=pytest.mark.skipif(importlib.util.find_spec("torchrl") is None, reason="torchrl missing"))]
SHORT = ["num_envs=2", "rollout_steps=32", "epochs=1", "minibatches=2"]


def test_resolve_by_name_with_overrides():
    recipe = rlplug.resolve("ppo-cartpole", ["env=Acrobot-v1", "gamma=0.95"])
    assert recipe.env == "Acrobot-v1" and recipe.hyperparameters["gamma"] == 0.95
    assert recipe.ref == "ppo-cartpole@1"


@pytest.mark.parametrize("backend", BACKENDS)
def test_build_step_train_evaluate_save_load(backend, tmp_path):
    build = rlplug.build("ppo-cartpole", backend=backend, overrides=SHORT)
    try:
        assert isinstance(build.trainer, rlplug.Trainer)
        metrics = build.trainer.step()
        assert build.trainer.env_steps == 64 and build.trainer.iterations == 1
        assert all(isinstance(v, float) for v in metrics.values())
        build.trainer.train(256)
        assert build.trainer.env_steps == 256
        returns = build.trainer.evaluate(2)
        assert len(returns) == 2 and all(r >= 1 for r in returns)
        rlplug.save(build, tmp_path / "ckpt.pt")
    finally:
        build.trainer.close()
    fresh = rlplug.build("ppo-cartpole", backend=backend, overrides=SHORT)
    try:
        rlplug.load(fresh, tmp_path / "ckpt.pt")
        assert fresh.trainer.env_steps == 256
        assert fresh.trainer.evaluate(2) == returns  # deterministic policy, same evaluation seeds
    finally:
        fresh.trainer.close()


def test_load_refuses_another_cell(tmp_path):
    build = rlplug.build("ppo-cartpole", backend="skrl", overrides=SHORT)
    rlplug.save(build, tmp_path / "skrl.pt")
    build.trainer.close()
    if importlib.util.find_spec("torchrl") is None:
        pytest.skip("torchrl missing")
    other = rlplug.build("ppo-cartpole", backend="torchrl", overrides=SHORT)
    try:
        with pytest.raises(rlplug.errors.RunDirError, match="holds a ppo/skrl run, not ppo/torchrl"):
            rlplug.load(other, tmp_path / "skrl.pt")
    finally:
        other.trainer.close()
