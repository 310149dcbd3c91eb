"""Environments from recipes: a user's ``module:Env-v0`` ids and env modules (recorded in run directories,
imported again by eval and resume), the wrapper fields on both backends and in evaluation, the suites'
extras and their refusals, and complete MuJoCo resume (``rlplug.envs.factory``, ``rlplug.envs.state``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_one_line_error, run_cli

from rlplug.envs.factory import make_gym_env
from rlplug.envs.spec import EnvSpec
from rlplug.envs.suites import resume_restart_note
from rlplug.envs.state import _chain, load_native_state, native_state, restore, snapshot
from rlplug.errors import RlplugError, SuiteMissingError
from rlplug.pipeline.session import Session

TESTS = Path(__file__).parent  # tiny_envs.py: the user's own module, registering Tiny-v0 and friends
OFF_POLICY = ["learning_starts=64", "hidden_sizes=[16, 16]", "batch_size=16", "log_every=64"]
ON_POLICY = ["num_envs=2", "rollout_steps=32", "minibatches=2", "epochs=1", "hidden_sizes=[16, 16]"]


def names(env) -> list[str]:
    return [type(layer).__name__ for layer in _chain(env)]


# ---- a user's own environment -------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
@pytest.mark.parametrize("recipe,env,overrides", [
    ("ppo-cartpole", "tiny_envs:Tiny-v0", ON_POLICY),
    ("dqn-cartpole", "tiny_envs:Tiny-v0", OFF_POLICY),
    ("sac-pendulum", "tiny_envs:TinyContinuous-v0", OFF_POLICY),
])
def test_a_module_env_id_trains_ppo_dqn_and_sac(recipe, env, overrides, backend):
    build = Session().build(recipe, backend, [f"env={env}", *overrides])
    try:
        build.trainer.train(256)
        assert build.trainer.progress >= 256
        assert np.isfinite(build.trainer.evaluate(1)).all()
    finally:
        build.trainer.close()


def test_env_module_is_recorded_and_imported_again_by_eval_and_resume(tmp_path):
    run_dir = tmp_path / "run"
    trained = run_cli("train", "ppo-cartpole", "--env-module", "tiny_envs", "--set", "env=Tiny-v0", "--steps", "64",
                      "--run-dir", str(run_dir), "--no-progress", *(f"--set={o}" for o in [*ON_POLICY, "eval_episodes=1"]),
                      paths=(TESTS,))
    assert trained.returncode == 0, trained.stderr
    recorded = json.loads((run_dir / "recipe.json").read_text())
    assert recorded["env_modules"] == ["tiny_envs"] and recorded["recipe"]["env_module"] == "tiny_envs"

    resumed = run_cli("resume", str(run_dir), "--steps", "128", "--json", "--no-progress", paths=(TESTS,))
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["steps"] == 128
    assert "note" not in resumed.stderr  # a pure-Python env resumes mid-episode
    assert_one_line_error(
        run_cli("eval", str(run_dir)),  # the module's folder is no longer on the path
        f"run {run_dir} was trained with environment module 'tiny_envs', which cannot be imported here "
        "(ModuleNotFoundError: No module named 'tiny_envs'); install it, run rlplug in the directory that holds it, or put that directory on PYTHONPATH",
    )


# ---- refusals, one line each ----------------------------------------------------------------------

REFUSALS = [
    (["env=no_such_envs:Tiny-v0"], "environment 'no_such_envs:Tiny-v0': module 'no_such_envs' cannot be imported "
     "(ModuleNotFoundError: No module named 'no_such_envs'); install it, run rlplug in the directory that holds it, or put that directory on PYTHONPATH"),
    (["env=Tiny-v0", "env_module=no_such_envs"], "environment 'Tiny-v0': module 'no_such_envs' cannot be imported "
     "(ModuleNotFoundError: No module named 'no_such_envs'); install it, run rlplug in the directory that holds it, or put that directory on PYTHONPATH"),
    (["env=tiny_envs:Nope-v0"], "unknown environment 'tiny_envs:Nope-v0': module 'tiny_envs' does not register 'Nope-v0' "
     "(choose from: Tiny-v0, TinyBroken-v0, TinyContinuous-v0, TinyMasked-v0, TinyMaskedInfo-v0)"),
    (["env=Tiny-v1", "env_module=tiny_envs"], "unknown environment 'Tiny-v1' (after importing env_module 'tiny_envs') "
     "(did you mean 'Tiny-v0'?)"),
    (["env=tiny_envs:TinyBroken-v0"], "recipe 'ppo-cartpole': environment 'tiny_envs:TinyBroken-v0' failed to start: "
     "ValueError: tiny env refuses to start (fail=True)"),
    (["terminal_on_life_loss=true"], "recipe 'ppo-cartpole': terminal_on_life_loss is an option of atari preprocessing; "
     "set atari = true too"),
    (["atari=true"], "atari = true preprocesses Arcade Learning Environment games (ALE/...); 'CartPole-v1' is not one"),
    (['env_module="my envs"'], "recipe 'ppo-cartpole': 'env_module' = 'my envs' is not a module name"),
]


def test_wrapper_fields_are_refused_on_multi_agent_envs():
    pytest.importorskip("mpe2")
    with pytest.raises(RlplugError, match="^recipe 'mappo-simple-spread': frame_stack wraps single-agent Gymnasium "
                       "environments, not 'mpe:simple_spread'$"):
        Session().prepare("mappo-simple-spread", overrides=["frame_stack=4"])


@pytest.mark.parametrize("overrides,line", REFUSALS, ids=[r[1][:40] for r in REFUSALS])
def test_environment_refusals_are_one_line(overrides, line):
    with pytest.raises(RlplugError) as caught:
        Session().prepare("ppo-cartpole", overrides=overrides)
    text = str(caught.value)
    assert "\n" not in text and caught.value.exit_code == 2
    assert text.startswith(line), text


def _without(monkeypatch, *modules):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None if name in modules else real(name, *a, **k))


@pytest.mark.parametrize("env,module,line", [
    ("HalfCheetah-v5", "mujoco", "environment 'HalfCheetah-v5' needs MuJoCo: pip install 'rlplug[mujoco]'"),
    ("LunarLanderContinuous-v3", "Box2D", "environment 'LunarLanderContinuous-v3' needs Box2D: pip install 'rlplug[box2d]'"),
    ("ALE/Pong-v5", "ale_py", "environment 'ALE/Pong-v5' needs the Arcade Learning Environment: pip install 'rlplug[atari]'"),
    ("MinAtar/Breakout-v1", "minatar", "environment 'MinAtar/Breakout-v1' needs MinAtar: pip install 'rlplug[minatar]'"),
])
def test_a_missing_extra_is_refused_naming_it(monkeypatch, env, module, line):
    _without(monkeypatch, module)
    recipe = "sac-pendulum" if env.startswith(("HalfCheetah", "LunarLander")) else "dqn-cartpole"
    with pytest.raises(SuiteMissingError) as caught:
        Session().prepare(recipe, overrides=[f"env={env}"])
    assert str(caught.value) == line


def test_atari_preprocessing_without_opencv_is_refused_naming_the_extra(monkeypatch):
    pytest.importorskip("ale_py")
    _without(monkeypatch, "cv2")
    with pytest.raises(SuiteMissingError) as caught:
        Session().prepare("ppo-cartpole", overrides=["env=ALE/Pong-v5", "atari=true"])
    assert str(caught.value) == "environment 'ALE/Pong-v5' with atari = true needs OpenCV: pip install 'rlplug[atari]'"


def test_cli_refusal_and_doctor(monkeypatch):
    assert_one_line_error(run_cli("train", "ppo-cartpole", "--set", "env=no_such_envs:Tiny-v0", "--no-write"),
                          "module 'no_such_envs' cannot be imported")
    doctor = run_cli("doctor")
    assert doctor.returncode == 0 and "environment suites:" in doctor.stdout
    from rlplug.cli.catalog import suite_lines

    _without(monkeypatch, "minatar")
    from rlplug.cli.pins import install_command

    assert f"minatar     not installed: {install_command('minatar')}" in suite_lines()


# ---- wrappers ---------------------------------------------------------------------------------------


def _chains(spec, action_space):
    """The sub-env chains of both backends' training envs and of the evaluation env made from one spec."""
    import rlplug.envs.factory
    from rlplug.backends.skrl.env import make_vector_env
    from rlplug.backends.torchrl.env import make_env
    from rlplug.envs.evaluation import evaluate_policy

    made, real = [], rlplug.envs.factory.make_gym_env

    def recording(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    skrl_env, torchrl_env = make_vector_env(spec, None, 1, 0, "cpu"), make_env(spec, None, 1, 0)
    try:
        chains = {"skrl": skrl_env._env.envs[0], "torchrl": torchrl_env.base_env._env.envs[0]}
        rlplug.envs.factory.make_gym_env = recording
        try:
            evaluate_policy(spec, None, lambda obs: np.asarray([action_space.sample()]), 1, 0, max_steps=3)
        finally:
            rlplug.envs.factory.make_gym_env = real
        chains["evaluation"] = made[0]
        return {key: (names(env), list(_chain(env))) for key, env in chains.items()}
    finally:
        skrl_env.close()
        torchrl_env.close()


def test_wrapper_fields_build_the_same_chain_on_both_backends_and_evaluation_keeps_raw_rewards():
    recipe = Session().resolve("ppo-pendulum", ["frame_stack=3", "normalize_reward=true", "time_limit=20"])
    spec = EnvSpec.from_recipe(recipe)
    assert recipe.to_table()["frame_stack"] == 3  # a recipe field: `rlplug show` prints it
    assert spec.gamma == recipe.hyperparameters["gamma"]  # NormalizeReward discounts as the algorithm does
    env = make_gym_env(spec)
    assert env.observation_space.shape == (3, 3)
    chains = _chains(spec, env.action_space)
    training = ["TransformAction", "NormalizeReward", "RecordEpisodeStatistics", "FrameStackObservation", "TimeLimit",
                "OrderEnforcing", "EnvContractChecker", "PendulumEnv"]  # the recorder: the raw return, reported
    assert chains["skrl"][0] == chains["torchrl"][0] == training
    raw = [n for n in training if n not in ("NormalizeReward", "RecordEpisodeStatistics")]
    assert chains["evaluation"][0] == raw  # raw rewards in evaluation
    limits = [layer._max_episode_steps for _, layers in chains.values() for layer in layers if type(layer).__name__ == "TimeLimit"]
    assert limits == [20, 20, 20]

    clipped = Session().prepare("ppo-pendulum")
    assert make_gym_env(clipped.env_spec).action_space == clipped.action_space  # clipping keeps the bounds
    unclipped = Session().prepare("ppo-pendulum", overrides=["clip_actions=false"])
    assert "TransformAction" not in names(make_gym_env(unclipped.env_spec))


def test_atari_preprocessing_on_both_backends_clips_rewards_in_training_only():
    pytest.importorskip("ale_py")
    pytest.importorskip("cv2")
    build = Session().prepare("ppo-cartpole", overrides=["env=ALE/Pong-v5", "atari=true", "frame_stack=4",
                                                         "terminal_on_life_loss=true", "time_limit=1000"])
    assert build.observation_space.shape == (4, 84, 84) and build.observation_space.dtype == np.uint8
    chains = _chains(build.env_spec, build.action_space)
    training = ["FrameStackObservation", "ClipReward", "TimeLimit", "AtariPreprocessing", "OrderEnforcing",
                "EnvContractChecker", "AtariEnv"]
    assert chains["skrl"][0] == chains["torchrl"][0] == training
    assert chains["evaluation"][0] == [n for n in training if n != "ClipReward"]
    for key, (_, layers) in chains.items():
        preprocessing = next(layer for layer in layers if type(layer).__name__ == "AtariPreprocessing")
        assert preprocessing.terminal_on_life_loss == (key != "evaluation")  # evaluation plays whole games
        assert layers[-1]._frameskip == 1  # AtariPreprocessing skips the frames


# ---- environment state ------------------------------------------------------------------------------


def _continues_identically(make, steps: int = 60) -> None:
    """Step an env, snapshot it mid-episode, restore into a fresh one seeded otherwise: both go on alike."""
    first, second = make(), make()
    first.reset(seed=1)
    second.reset(seed=2)
    first.action_space.seed(0)
    actions = [first.action_space.sample() for _ in range(2 * steps)]
    for action in actions[:steps]:
        if any(first.step(action)[2:4]):
            first.reset()
    for layer, state in zip(_chain(second), [snapshot(layer) for layer in _chain(first)]):
        restore(layer, state)
    native = native_state(first.unwrapped)
    if native is not None:
        load_native_state(second.unwrapped, native)
    for action in actions[steps:]:
        a, b = first.step(action), second.step(action)
        assert np.array_equal(a[0], b[0]) and a[1:4] == b[1:4]
        if "episode" in a[4]:  # normalize_reward's recorder: the episode's raw return, counted across the resume
            assert a[4]["episode"]["r"] == b[4]["episode"]["r"] and a[4]["episode"]["l"] == b[4]["episode"]["l"]
        if any(a[2:4]):
            assert np.array_equal(first.reset()[0], second.reset()[0])


def test_frame_stacks_and_reward_statistics_resume_mid_episode():
    spec = EnvSpec("CartPole-v1", frame_stack=3, normalize_reward=True)
    _continues_identically(lambda: make_gym_env(spec))


@pytest.mark.parametrize("env_id", ["Ant-v5", "Hopper-v5"])
def test_mujoco_physics_resume_bit_for_bit(env_id):
    pytest.importorskip("mujoco")
    _continues_identically(lambda: make_gym_env(env_id))  # Ant reads body positions before it steps


def test_minatar_games_resume_mid_episode():
    pytest.importorskip("minatar")
    _continues_identically(lambda: make_gym_env("MinAtar/Breakout-v1"))


def test_mujoco_warnings_are_python_warnings_not_terminal_prints(capfd):
    pytest.importorskip("mujoco")
    import warnings

    import mujoco

    # A handler installed before is kept (importing dm_control installs its own, as an earlier test may have):
    # start from none, as a process that never imported dm_control does, and put it back after.
    installed = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            make_gym_env("HalfCheetah-v5")  # its XML uses the deprecated 'settotalmass': gymnasium's file, dropped
            mujoco.get_mju_user_warning()(b"a message of MuJoCo's own")  # the handler make_gym_env installed
    finally:
        mujoco.set_mju_user_warning(installed)
    assert [str(w.message) for w in caught if str(w.message).startswith("MuJoCo:")] == ["MuJoCo: a message of MuJoCo's own"]
    assert "settotalmass" not in capfd.readouterr().out + capfd.readouterr().err


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_mujoco_resume_equivalence(backend):
    pytest.importorskip("mujoco")
    from rlplug.testing import check_cell

    passed = check_cell("ppo-pendulum", backend, ["env=InvertedPendulum-v5", "time_limit=100", *ON_POLICY], steps=128,
                        eval_episodes=1)
    assert passed[-1] == "resume equivalence"


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_box2d_resume_starts_new_episodes(backend):
    pytest.importorskip("Box2D")
    import io

    import torch

    session, overrides = Session(), ["env=LunarLander-v3", *ON_POLICY]
    build = session.build("ppo-cartpole", backend, overrides)
    try:
        build.trainer.train(64)
        buffer = io.BytesIO()
        torch.save(build.trainer.state_dict(), buffer)
    finally:
        build.trainer.close()
    buffer.seek(0)
    resumed = session.build("ppo-cartpole", backend, overrides)
    try:
        resumed.trainer.load_state_dict(torch.load(buffer, weights_only=True))
        if backend == "skrl":
            envs, observations = resumed.trainer.env._env.envs, resumed.trainer._observations
        else:
            envs, observations = resumed.trainer.env.base_env._env.envs, resumed.trainer.collection.carrier["observation"]
        assert [_chain(env)[0]._elapsed_steps for env in envs] == [0, 0]  # new episodes ...
        assert torch.allclose(observations[:, 1], torch.full((2,), 1.41), atol=0.02)  # ... from the lander's start
        resumed.trainer.train(128)
    finally:
        resumed.trainer.close()
    assert resume_restart_note("LunarLander-v3") == (
        "environment 'LunarLander-v3' keeps its state in Box2D's C objects, which a checkpoint cannot hold: "
        "the resumed run starts new episodes (networks, optimisers, memory and counters carry on)"
    )
    assert resume_restart_note("Hopper-v5") is None and resume_restart_note("CartPole-v1") is None


def test_multiagent_ids_name_a_family_not_a_module():
    from rlplug.envs.suites import split_env_id

    assert split_env_id("mpe:simple_spread") == ("", "mpe:simple_spread")
    assert split_env_id("vmas:navigation") == ("", "vmas:navigation")
    assert split_env_id("tiny_envs:Tiny-v0") == ("tiny_envs", "Tiny-v0")
