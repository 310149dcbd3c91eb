"""The recipe field ``wrappers``: any Gymnasium wrapper by ``module:Name``, on both backends and in evaluation, checked
before anything is built, recorded for eval/resume; MiniGrid through it; the Zoo's ``env_wrapper``; CNN hints that fit."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_one_line_error, run_cli
from test_envs import ON_POLICY, _chains

from rlplug.envs.factory import make_gym_env
from rlplug.envs.spec import EnvSpec
from rlplug.errors import RlplugError
from rlplug.pipeline.session import Session

TESTS = Path(__file__).parent  # tiny_wrappers.py: the user's own wrapper module
SCALED = 'wrappers=[{wrapper = "tiny_wrappers:ScaleObservation", kwargs = {factor = 10.0}}]'
FLAT = 'wrappers=[{wrapper = "minigrid.wrappers:FlatObsWrapper"}]'


def test_a_wrapper_sits_above_gym_make_on_both_backends_and_in_evaluation():
    recipe = Session().resolve("ppo-pendulum", [SCALED, "frame_stack=2"])
    assert recipe.to_table()["wrappers"] == [{"wrapper": "tiny_wrappers:ScaleObservation", "kwargs": {"factor": 10.0}}]
    spec = EnvSpec.from_recipe(recipe)
    env = make_gym_env(spec)
    observation, _ = env.reset(seed=0)
    assert observation.shape == (2, 3) and np.abs(observation).max() > 1.0  # scaled, under the frame stack
    chains = _chains(spec, env.action_space)
    expected = ["TransformAction", "FrameStackObservation", "ScaleObservation", "TimeLimit", "OrderEnforcing",
                "EnvContractChecker", "PendulumEnv"]
    assert chains["skrl"][0] == chains["torchrl"][0] == chains["evaluation"][0] == expected


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_minigrid_trains_through_its_own_wrapper_on_both_backends(backend):
    pytest.importorskip("minigrid")
    build = Session().build("ppo-cartpole", backend, ["env=MiniGrid-Empty-5x5-v0", FLAT, *ON_POLICY])
    try:
        assert build.observation_space.shape == (2835,)  # the flat grid, direction and mission: no text left
        build.trainer.train(128)
        assert build.trainer.progress >= 128
        assert np.isfinite(build.trainer.evaluate(1)).all()
    finally:
        build.trainer.close()


def test_minigrid_without_a_wrapper_names_the_wrapper_field():
    pytest.importorskip("minigrid")
    with pytest.raises(RlplugError) as caught:
        Session().prepare("ppo-cartpole", overrides=["env=MiniGrid-Empty-5x5-v0"])
    hint = re.search(r"--set '(wrappers = \[.*\])'", str(caught.value))  # pasted as it is, it trains
    assert "\n" not in str(caught.value) and hint, str(caught.value)
    assert Session().prepare("ppo-cartpole", overrides=["env=MiniGrid-Empty-5x5-v0", hint.group(1)]).observation_space.shape == (2835,)


REFUSALS = [
    ('wrappers=[{wrapper = "tiny_wrappers:ScaleObservation", kwarg = {}}]',
     "'wrappers' = [{'wrapper': 'tiny_wrappers:ScaleObservation', 'kwarg': {}}] entry [0] has key 'kwarg' "
     "(did you mean 'kwargs'?)"),
    ('wrappers=[{wrapper = "tiny_wrappers.ScaleObservation"}]',
     "entry [0] wrapper 'tiny_wrappers.ScaleObservation' is not \"module:Name\""),
    ('wrappers=["tiny_wrappers:ScaleObservation"]', "entry [0] must be a table like"),
    ('wrappers=[{wrapper = "no_such_wrappers:Thing"}]',
     "environment 'Pendulum-v1': wrappers[0] 'no_such_wrappers:Thing': module 'no_such_wrappers' cannot be imported "
     "(ModuleNotFoundError: No module named 'no_such_wrappers') (pip install no_such_wrappers)"),
    ('wrappers=[{wrapper = "tiny_wrappers:ScaleObservatoin"}]',
     "environment 'Pendulum-v1': wrappers[0] 'tiny_wrappers:ScaleObservatoin': module 'tiny_wrappers' has no "
     "'ScaleObservatoin' (did you mean 'ScaleObservation'?)"),
    ('wrappers=[{wrapper = "tiny_wrappers:NOT_CALLABLE"}]',
     "wrappers[0] 'tiny_wrappers:NOT_CALLABLE': 'NOT_CALLABLE' is a int, not a wrapper class or function"),
    ('wrappers=[{wrapper = "tiny_wrappers:refusing", kwargs = {reason = "testing"}}]',
     "wrappers[0] 'tiny_wrappers:refusing' failed with kwargs {'reason': 'testing'}: ValueError: this wrapper "
     "refuses (testing)"),
    ('wrappers=[{wrapper = "tiny_wrappers:not_an_env"}]',
     "wrappers[0] 'tiny_wrappers:not_an_env' returned object, not a gymnasium.Env"),
]


@pytest.mark.parametrize("override,line", REFUSALS, ids=[r[1][:40] for r in REFUSALS])
def test_a_bad_wrapper_entry_is_one_line_before_anything_is_built(override, line, monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    with pytest.raises(RlplugError) as caught:
        Session().prepare("ppo-pendulum", overrides=[override])
    assert "\n" not in str(caught.value) and caught.value.exit_code == 2
    assert line in str(caught.value), str(caught.value)


def test_wrappers_are_refused_on_multi_agent_envs():
    pytest.importorskip("mpe2")
    with pytest.raises(RlplugError, match="^recipe 'mappo-simple-spread': wrappers wraps single-agent Gymnasium"):
        Session().prepare("mappo-simple-spread", overrides=[SCALED])


def test_wrapper_modules_are_recorded_and_imported_again_by_eval(tmp_path):
    run_dir = tmp_path / "run"
    trained = run_cli("train", "ppo-pendulum", "--set", SCALED, "--steps", "64", "--run-dir", str(run_dir), "--no-progress",
                      *(f"--set={o}" for o in [*ON_POLICY, "eval_episodes=1"]), paths=(TESTS,))
    assert trained.returncode == 0, trained.stderr
    recorded = json.loads((run_dir / "recipe.json").read_text())
    assert recorded["env_modules"] == ["tiny_wrappers"] and recorded["recipe"]["wrappers"][0]["kwargs"] == {"factor": 10.0}
    evaluated = run_cli("eval", str(run_dir), "--episodes", "1", "--json", paths=(TESTS,))
    assert evaluated.returncode == 0, evaluated.stderr
    assert_one_line_error(run_cli("eval", str(run_dir)), "environment module 'tiny_wrappers', which cannot be imported here")


def test_the_zoos_env_wrapper_becomes_the_wrappers_field():
    if importlib.util.find_spec("rl_zoo3") is None:  # never imported: importing rl_zoo3 patches gymnasium's TimeLimit
        pytest.skip("the zoo extra is not installed")
    pytest.importorskip("minigrid")
    from rlplug.interop.zoo import env_status, translation

    done = translation("zoo:ppo/MiniGrid-DoorKey-5x5-v0")
    assert done.table["wrappers"] == [{"wrapper": "minigrid.wrappers:FlatObsWrapper"}]
    assert not [row for row in done.dropped if row.key.startswith("env_wrapper")]
    assert env_status("MiniGrid-DoorKey-5x5-v0") == "installed"
    recipe = Session().resolve("zoo:ppo/MiniGrid-DoorKey-5x5-v0")
    assert EnvSpec.from_recipe(recipe).modules == ["minigrid.wrappers"]


def test_the_cnn_hint_for_a_small_image_can_be_pasted_as_it_is():
    pytest.importorskip("minigrid")
    image = 'wrappers=[{wrapper = "minigrid.wrappers:ImgObsWrapper"}]'  # MiniGrid's 7x7x3 view
    with pytest.raises(RlplugError) as caught:
        Session().prepare("ppo-cartpole", overrides=["env=MiniGrid-Empty-5x5-v0", image])
    hint = re.search(r"--set '(encoder_kwargs = \{.*\})'$", str(caught.value))
    assert hint, str(caught.value)
    build = Session().build("ppo-cartpole", "skrl", ["env=MiniGrid-Empty-5x5-v0", image, hint.group(1), *ON_POLICY])
    try:
        build.trainer.train(64)
        assert build.trainer.progress >= 64
    finally:
        build.trainer.close()
