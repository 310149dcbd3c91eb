"""``vector_mode = "async"``: the training copies step in gymnasium ``AsyncVectorEnv`` worker processes on
both backends; a checkpoint cannot hold the workers' episodes, so a resume starts new ones."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("torch")

import rlplug  # noqa: E402

TINY = ["num_envs=2", "rollout_steps=16", "minibatches=2", "epochs=1", "hidden_sizes=[8]"]


def vector_env(trainer, backend: str):
    return trainer.env._env if backend == "skrl" else trainer.env.base_env._env


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_async_envs_train_and_resume_with_new_episodes(backend, tmp_path):
    build = rlplug.build("ppo-cartpole", backend=backend, overrides=[*TINY, "vector_mode=async"])
    try:
        assert isinstance(vector_env(build.trainer, backend), gym.vector.AsyncVectorEnv)
        build.trainer.train(64)
        assert build.trainer.env_steps == 64
        path = tmp_path / "ckpt.pt"
        rlplug.save(build, path)
    finally:
        build.trainer.close()
    resumed = rlplug.load(rlplug.build("ppo-cartpole", backend=backend, overrides=[*TINY, "vector_mode=async"]), path)
    try:
        resumed.trainer.train(128)
        assert resumed.trainer.env_steps == 128
    finally:
        resumed.trainer.close()


def test_vector_mode_is_a_recipe_field_sync_by_default():
    assert rlplug.resolve("ppo-cartpole").vector_mode == "sync"
    assert rlplug.resolve("ppo-cartpole", ["vector_mode=async"]).vector_mode == "async"
    with pytest.raises(rlplug.errors.RecipeError, match="vector_mode"):
        rlplug.resolve("ppo-cartpole", ["vector_mode=threads"])
