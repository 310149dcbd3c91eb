"""An environment that breaks the Gymnasium API is blamed by name (``rlplug.envs.check``): one line naming the
env id, the check, what was declared and what came back, exit code 2. The broken envs are a user's module,
``broken_envs`` (this folder), each breaking the API one way."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import assert_one_line_error, run_cli

from rlplug.envs.factory import make_gym_env
from rlplug.errors import EnvContractError, EnvStepError, SpaceError
from rlplug.pipeline.session import Session

TESTS = Path(__file__).parent
ON_POLICY = ["num_envs=2", "rollout_steps=8", "minibatches=2", "epochs=1", "hidden_sizes=[16, 16]", "eval_episodes=1"]


def steps(env_id: str, count: int) -> None:
    """Reset the env as rlplug makes it, then step it ``count`` times with action 0 (one episode is 20 steps)."""
    env = make_gym_env(env_id)
    try:
        env.reset(seed=0)
        for _ in range(count):
            _, _, terminated, truncated, _ = env.step(0)
            if terminated or truncated:
                env.reset()
    finally:
        env.close()


API = "breaks the Gymnasium API: "
BOX = "(Box(-10.0, 10.0, (2,), float32))"
BROKEN = [
    ("WrongShape-v0", 0, f"{API}reset returned an observation of shape (3,) where its observation_space declares shape (2,) {BOX}"),
    ("WrongDtype-v0", 0, f"{API}reset returned an observation of dtype float64 where its observation_space declares float32 {BOX}"),
    ("OldStep-v0", 1, f"{API}step returned 4 values (obs, reward, done, info: the gym < 0.26 API), not the five "
     "(observation, reward, terminated, truncated, info)"),
    ("ResetWithoutInfo-v0", 0, f"{API}reset returned an array of shape (2,), not the pair (observation, info)"),
    ("NaNObservation-v0", 30, "returned nan in its observation in step 5 of an episode (5 steps since it was made); "
     "observations must be finite"),
    ("InfReward-v0", 30, "returned reward inf in step 5 of an episode (5 steps since it was made); rewards must be finite"),
    ("StepRaises-v0", 40, "raised RuntimeError in step 11 of an episode (31 steps since it was made): the simulator lost its state"),
]


@pytest.mark.parametrize("env,count,line", BROKEN, ids=[b[0] for b in BROKEN])
def test_each_broken_env_is_one_line_naming_it(env, count, line):
    with pytest.raises((EnvContractError, EnvStepError)) as caught:
        steps(f"broken_envs:{env}", count)
    assert str(caught.value) == f"environment 'broken_envs:{env}' {line}"
    assert caught.value.exit_code == 2


@pytest.mark.parametrize("recipe", ["sac-pendulum", "ppo-pendulum"])
def test_unbounded_continuous_actions_are_refused_before_building(recipe):
    with pytest.raises(SpaceError) as caught:
        Session().prepare(recipe, overrides=["env=broken_envs:UnboundedActions-v0"])
    algorithm = recipe.partition("-")[0]
    assert str(caught.value) == (
        f"recipe '{recipe}': environment 'broken_envs:UnboundedActions-v0' declares an unbounded action space "
        f"(Box(-inf, 1.0, (1,), float32)); {algorithm} needs finite low and high bounds for continuous actions: "
        "declare them in its action_space"
    )
    Session().prepare(recipe, overrides=["env=broken_envs:LineContinuous-v0"])  # finite bounds are fine


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
@pytest.mark.parametrize("env,line", [
    ("NaNObservation-v0", "returned nan in its observation in step 5 of an episode"),
    ("WrongShape-v0", "reset returned an observation of shape (3,)"),
], ids=["nan-observation", "wrong-shape"])
def test_both_backends_training_stops_on_the_env_line(backend, env, line):
    builds = []
    with pytest.raises(EnvContractError) as caught:  # a first reset may come while the trainer is built
        builds.append(Session().build("ppo-cartpole", backend, [f"env=broken_envs:{env}", *ON_POLICY]))
        builds[0].trainer.train(64)
    for build in builds:
        build.trainer.close()
    assert str(caught.value).startswith(f"environment 'broken_envs:{env}' "), caught.value
    assert line in str(caught.value)


RAISED = "environment 'broken_envs:StepRaises-v0' raised RuntimeError in step {} of an episode (31 steps since it was made): " \
    "the simulator lost its state; training stopped at env step 48, the last checkpoint in {} is kept"


def test_an_exception_inside_step_mid_run_exits_2_naming_env_and_step_and_keeps_the_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli("train", "ppo-cartpole", "--set", "env=broken_envs:StepRaises-v0", "--steps", "256",
                     "--checkpoint-every", "16", "--run-dir", str(run_dir), "--no-progress",
                     *(f"--set={o}" for o in ON_POLICY), paths=(TESTS,))
    # each copy raises in its 31st step, after three rollouts of 2 x 8 steps were trained and checkpointed
    assert_one_line_error(result, RAISED.format(11, run_dir / "checkpoints"))
    assert (run_dir / "checkpoints" / "latest.pt").is_file()


def test_an_exception_inside_step_mid_run_on_torchrl_keeps_the_checkpoint(tmp_path):
    from rlplug.runs import train

    build = Session().build("ppo-cartpole", "torchrl", ["env=broken_envs:StepRaises-v0", *ON_POLICY])
    try:
        with pytest.raises(EnvStepError) as caught:
            train(build, 256, run_dir=tmp_path, progress=False, checkpoint_every=16)
    finally:
        build.trainer.close()
    # TorchRL's wrapper probes the env with a step and resets it while it is wrapped: the episode is younger
    assert str(caught.value) == RAISED.format(7, tmp_path / "checkpoints")
    assert (tmp_path / "checkpoints" / "latest.pt").is_file()


def test_float_arrays_of_nested_spaces_are_all_checked_and_well_behaved_envs_pass():
    import gymnasium as gym

    from rlplug.envs.check import float_paths, observation_problem

    steps("broken_envs:Line-v0", 45)  # episode ends and resets: nothing refused
    steps("CartPole-v1", 100)

    space = gym.spaces.Dict({"image": gym.spaces.Box(0, 255, (2, 2), np.uint8), "state": gym.spaces.Box(-1, 1, (3,)),
                             "pair": gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Box(-1, 1, (1,))))})
    assert sorted(float_paths(space)) == [("pair", 1), ("state",)]
    good = space.sample()
    assert observation_problem(good, space) == ""
    assert observation_problem({k: v for k, v in good.items() if k != "pair"}, space) == (
        "with keys ['image', 'state'] where its observation_space declares ['image', 'pair', 'state']"
    )
    assert observation_problem({**good, "state": np.zeros(4, np.float32)}, space).startswith(
        "['state'] of shape (4,) where its observation_space declares shape (3,)"
    )


@pytest.mark.parametrize("mode,env,line", [
    ("sync", "InfReward-v0", "returned reward inf in step 5 of an episode (5 steps since it was made); rewards must be finite"),
    ("async", "NaNObservation-v0", "returned nan in its observation in step 5 of an episode (5 steps since it was made); "
     "observations must be finite"),
], ids=["sync-inf-reward", "async-nan-observation"])
def test_training_copies_are_checked_a_batch_at_a_time_and_the_copy_names_itself(mode, env, line):
    import warnings

    from rlplug.envs.factory import make_gym_vector_env
    from rlplug.envs.spec import EnvSpec

    vector_env = make_gym_vector_env(EnvSpec(id=f"broken_envs:{env}", vector_mode=mode), None, 2)
    try:
        vector_env.reset(seed=0)
        with warnings.catch_warnings(record=True) as logged, pytest.raises(EnvContractError) as caught:
            warnings.simplefilter("always")
            for _ in range(5):
                vector_env.step(np.zeros(2, dtype=np.int64))
    finally:
        vector_env.close(**({"terminate": True} if mode == "async" else {}))
    assert str(caught.value) == f"environment 'broken_envs:{env}' {line}"
    assert not [w for w in logged if "Worker" in str(w.message) or "Raising" in str(w.message)]  # gymnasium's log


def test_dataset_collection_names_the_env_too():
    from rlplug.data.collect import rollout

    with pytest.raises(EnvContractError, match=r"^environment 'broken_envs:InfReward-v0' returned reward inf in step 5 of an episode"):
        rollout("broken_envs:InfReward-v0", {}, None, 30, 0.0, 0, False)
