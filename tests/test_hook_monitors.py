"""Hooks that stop training say so (one line, ``summary.json``'s ``stopped_by``, the bar ends where training did),
and a hook's ``monitor`` is checked before training against the metric names the run logs, which each family
base derives from its loss terms and its loop (``Trainer.logged_metrics``) and which short real runs confirm."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

from conftest import cli_in_process
from rlplug.errors import RecipeError
from rlplug.pipeline.session import Session

sys.path.insert(0, str(Path(__file__).parent / "plugins"))

pytest.importorskip("torch")
pytest.importorskip("torchrl")

PPO = ["num_envs=2", "rollout_steps=32", "hidden_sizes=[16, 16]", "epochs=2"]  # 64 env steps an iteration
OFF = ["learning_starts=64", "hidden_sizes=[16, 16]", "batch_size=16", "log_every=64"]
STOP = 'hooks=[{hook = "log_scalar"}, {hook = "early_stopping", monitor = "batch/next.reward_mean", patience = 2}]'


@pytest.fixture(scope="module")
def session():
    return Session()


def logged_by_a_short_run(session, recipe, backend, overrides, steps):
    build = session.build(recipe, backend, list(overrides))
    try:
        declared = build.trainer.logged_metrics()
        rows = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            build.trainer.train(steps, callbacks=[lambda _, metrics: rows.append(metrics)])
    finally:
        build.trainer.close()
    return declared, set().union(*rows)


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
@pytest.mark.parametrize(
    ("recipe", "overrides", "steps"),
    [
        ("ppo-cartpole", [*PPO, "env_kwargs={max_episode_steps = 20}"], 256),
        ("ppo-pendulum", [*PPO, "env_kwargs={max_episode_steps = 20}"], 128),
        ("sac-pendulum", [*OFF, "env_kwargs={max_episode_steps = 50}"], 256),
        ("dqn-cartpole", [*OFF, "env_kwargs={max_episode_steps = 20}"], 256),
        ("td3-pendulum", [*OFF, "env_kwargs={max_episode_steps = 50}"], 256),
        ("mappo-simple-spread", ["num_envs=2", "rollout_steps=32", "hidden_sizes=[16, 16]", "epochs=1",
                                 "env_kwargs={max_cycles = 10}"], 256),
    ],
)
def test_declared_metrics_are_what_a_short_run_logs(session, recipe, backend, overrides, steps):
    if recipe.startswith("mappo"):
        pytest.importorskip("mpe2")
    declared, logged = logged_by_a_short_run(session, recipe, backend, overrides, steps)
    assert declared == logged, (sorted(declared - logged), sorted(logged - declared))


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_declared_metrics_of_an_offline_run(session, backend, random_dataset):
    overrides = [f"dataset={random_dataset()}", "hidden_sizes=[16, 16]", "batch_size=32", "log_every=50", "eval_every=100"]
    declared, logged = logged_by_a_short_run(session, "iql-pendulum-medium", backend, [*overrides, "eval_episodes=1"], 100)
    assert declared == logged, (sorted(declared - logged), sorted(logged - declared))


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_a_monitor_no_metric_matches_is_refused_before_training(session, backend):
    hooks = 'hooks=[{hook = "log_scalar"}, {hook = "early_stopping", monitor = "batch/next.reward_men"}]'
    with pytest.raises(RecipeError) as caught:
        session.build("ppo-cartpole", backend, [*PPO, hooks])
    message = str(caught.value)
    assert message.startswith(f"recipe 'ppo-cartpole': hook early_stopping monitors 'batch/next.reward_men', which ppo/{backend} never logs")
    assert "(did you mean 'batch/next.reward_mean'?)" in message and "loss/" in message and "\n" not in message


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_a_loss_term_monitor_is_checked_against_the_cells_terms(session, backend):
    term = {"skrl": "loss/loss_policy", "torchrl": "loss/loss_objective"}[backend]
    build = session.build("ppo-cartpole", backend, [*PPO, f'hooks=[{{hook = "early_stopping", monitor = "{term}"}}]'])
    build.trainer.close()  # the cell's own term is accepted
    with pytest.raises(RecipeError, match=f"did you mean '{term}'"):
        session.build("ppo-cartpole", backend, [*PPO, f'hooks=[{{hook = "early_stopping", monitor = "{term}s"}}]'])


def test_torchrl_early_stopping_monitor_is_checked(session):
    from torchrl.trainers import EarlyStopping

    build = session.build("ppo-cartpole", "torchrl", PPO)
    try:
        EarlyStopping(monitor="train/episode_retrun", patience=64).register(build.trainer)
        from rlplug.hooks.recipe import check_monitors

        with pytest.raises(RecipeError, match="did you mean 'train/episode_return'"):
            check_monitors(build)
    finally:
        build.trainer.close()


def test_a_misspelled_monitor_exits_2_in_one_line(capsys, tmp_path):
    code, _, err = cli_in_process(capsys, "train", "ppo-cartpole", "--backend", "torchrl", "--steps", "128", "--run-dir",
                                  tmp_path / "run", *[a for o in PPO for a in ("--set", o)], "--set",
                                  'hooks=[{hook = "early_stopping", monitor = "train/episode_retrun"}]')
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "did you mean 'train/episode_return'" in err
    assert not (tmp_path / "run").exists()  # refused before anything was kept


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_a_hook_that_stops_training_says_so(capsys, tmp_path, backend):
    run = tmp_path / "run"
    args = ["train", "ppo-cartpole", "--backend", backend, "--steps", "2048", "--run-dir", run, "--set", "eval_episodes=1",
            "--set", STOP, *[a for o in PPO for a in ("--set", o)]]
    code, out, err = cli_in_process(capsys, *args)
    assert code == 0, err
    # 1.0 first (the best), then twice no better: stopped after the third iteration of 64 steps
    line = ("rlplug: note: early_stopping stopped training at env step 192 ('batch/next.reward_mean' = 1): "
            "'batch/next.reward_mean' did not improve on 1 in 2 reports")
    assert line in err.splitlines()
    renders = [part for part in err.replace("\n", "\r").split("\r") if "step/s" in part]
    assert "192/192" in renders[-1] and "100%" in renders[-1], renders[-1]  # the bar ends at the step reached
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 192
    assert summary["stopped_by"] == {"hook": "early_stopping", "step": 192, "step_unit": "env_steps",
                                     "metric": "batch/next.reward_mean", "value": 1.0,
                                     "reason": "'batch/next.reward_mean' did not improve on 1 in 2 reports"}


def test_a_run_that_trains_its_budget_records_no_stop(capsys, tmp_path):
    run = tmp_path / "run"
    code, _, err = cli_in_process(capsys, "train", "ppo-cartpole", "--steps", "128", "--run-dir", run, "--no-progress",
                                  "--set", "eval_episodes=1", *[a for o in PPO for a in ("--set", o)])
    assert code == 0, err
    assert json.loads((run / "summary.json").read_text())["stopped_by"] is None and "stopped training" not in err
