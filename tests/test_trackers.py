"""``--logger``: MLflow (its real local store) and W&B (offline) hold the scalars of ``metrics.csv``, the recipe
and the run's files; a run killed after a checkpoint and resumed holds each step once in ``metrics.csv``,
TensorBoard and both trackers."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_cli

mlflow = pytest.importorskip("mlflow")
pytest.importorskip("wandb")
import wandb_offline  # noqa: E402  (tests/ is on the path)

SMALL_PPO = ["num_envs=2", "rollout_steps=64", "epochs=1", "minibatches=1", "hidden_sizes=[16, 16]", "eval_episodes=1"]


@pytest.fixture
def stores(tmp_path, monkeypatch):
    """MLflow's local SQLite store and W&B's offline files under ``tmp_path`` (the commands run there)."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    for name in ("WANDB_MODE", "WANDB_API_KEY", "MLFLOW_EXPERIMENT_NAME"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def metrics_csv(run_dir: Path) -> dict[str, dict[int, float]]:
    """``{metric: {step: value}}`` from ``metrics.csv``; fails on a step written twice."""
    with (run_dir / "metrics.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    steps = [int(row["env_steps"]) for row in rows]
    assert steps == sorted(set(steps)), f"steps not once each, in order: {steps}"
    table: dict[str, dict[int, float]] = {}
    for row in rows:
        for key, value in row.items():
            if key not in ("env_steps", "wall_s") and value != "":
                table.setdefault(key, {})[int(row["env_steps"])] = float(value)
    return table


def mlflow_metrics(run_dir: Path, keys) -> dict[str, dict[int, float]]:
    state = json.loads((run_dir / "trackers.json").read_text())["mlflow"]
    client = mlflow.tracking.MlflowClient(state["tracking_uri"])
    table = {}
    for key in keys:
        history = client.get_metric_history(state["run_id"], key)
        steps = [m.step for m in history]
        assert len(steps) == len(set(steps)), f"MLflow {key}: a step twice: {sorted(steps)}"
        table[key] = {m.step: m.value for m in history}
    return table


def wandb_metrics(run_dir: Path, root: Path) -> dict[str, dict[int, float]]:
    run_id = json.loads((run_dir / "trackers.json").read_text())["wandb"]["id"]
    table: dict[str, dict[int, float]] = {}
    for _, row in wandb_offline.history(root / "wandb", run_id):
        step = row["env_steps"]  # W&B's own step is 2 * env_steps (+ 1 for the final evaluation's row)
        for key, value in row.items():
            if key != "env_steps":
                assert step not in table.get(key, {}), f"W&B {key}: step {step} twice"
                table.setdefault(key, {})[step] = value
    return table


def assert_same(expected: dict[str, dict[int, float]], got: dict[str, dict[int, float]], where: str) -> None:
    assert set(got) >= set(expected), f"{where} lacks {sorted(set(expected) - set(got))}"
    for key, values in expected.items():
        assert sorted(got[key]) == sorted(values), f"{where} {key}: steps {sorted(got[key])} != {sorted(values)}"
        for step, value in values.items():
            assert got[key][step] == pytest.approx(value, rel=1e-5, abs=1e-8), (where, key, step)  # the CSV rounds to 6 digits


def test_mlflow_and_wandb_hold_what_metrics_csv_holds(stores):
    run_dir = stores / "run"
    sets = [a for s in SMALL_PPO for a in ("--set", s)]
    result = run_cli("train", "ppo-cartpole", *sets, "--steps", "512", "--run-dir", str(run_dir), "--logger",
                     "tensorboard,mlflow,wandb", "--json", cwd=stores)
    assert result.returncode == 0, result.stderr
    json.loads(result.stdout)  # the trackers printed nothing into the one JSON document
    expected = metrics_csv(run_dir)
    assert "loss/loss_policy" in expected and "eval/return" in expected
    assert_same(expected, mlflow_metrics(run_dir, expected), "MLflow")
    assert_same(expected, wandb_metrics(run_dir, stores), "W&B")

    state = json.loads((run_dir / "trackers.json").read_text())
    client = mlflow.tracking.MlflowClient(state["mlflow"]["tracking_uri"])
    run = client.get_run(state["mlflow"]["run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.params["hyperparameters.rollout_steps"] == "64" and run.data.params["backend"] == "skrl"
    assert run.data.tags["rlplug.recipe"] == "ppo-cartpole@1"
    files = {a.path for a in client.list_artifacts(run.info.run_id)} | {
        a.path for a in client.list_artifacts(run.info.run_id, "checkpoints")}
    assert {"curve.png", "summary.json", "checkpoints/latest.pt"} <= files

    wandb_id = state["wandb"]["id"]
    assert state["wandb"]["mode"] == "offline"
    config = wandb_offline.config(stores / "wandb", wandb_id)
    assert config["hyperparameters.rollout_steps"] == 64 and config["backend"] == "skrl"
    assert set(wandb_offline.artifact_files(stores / "wandb", wandb_id)) == {"curve.png", "summary.json", "checkpoints/latest.pt"}


KILLED_PAST_ITS_CHECKPOINT = """
import os, signal, sys
from pathlib import Path
import rlplug
from rlplug.runs import RunWriter, train

real_log, rows = RunWriter.log, []

def log_then_die(self, progress, *args, **kwargs):
    real_log(self, progress, *args, **kwargs)
    rows.append(progress)
    if progress == 768:  # checkpoints at 256 and 512: two rows past the last one
        self.metrics._tb.flush()  # so TensorBoard holds them too
        __import__("time").sleep(1.0)  # and W&B's writer has put what it was sent at 512 on disk (every 0.1 s here)
        os.kill(os.getpid(), signal.SIGKILL)

RunWriter.log = log_then_die
build = rlplug.build("ppo-cartpole", overrides={overrides!r})
train(build, run_dir=Path(sys.argv[1]), progress=False, checkpoint_every=256, loggers=("tensorboard", "csv", "mlflow", "wandb"))
"""


def test_a_killed_and_resumed_run_holds_each_step_once_in_every_log(stores):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = stores / "run"
    script = KILLED_PAST_ITS_CHECKPOINT.format(overrides=[*SMALL_PPO, "steps=100000"])
    env = {**os.environ, "WANDB__TRANSACTION_LOG_FLUSH_INTERVAL": "0.1"}  # W&B's own default: every 15 s
    killed = subprocess.run([sys.executable, "-c", script, str(run_dir)], capture_output=True, text=True, timeout=300,
                            cwd=stores, env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    before = metrics_csv(run_dir)
    assert max(before["loss/loss_policy"]) == 768  # rows past the checkpoint at 512 were written

    resumed = run_cli("resume", str(run_dir), "--steps", "1024", "--json", cwd=stores)
    assert resumed.returncode == 0, resumed.stderr
    after = metrics_csv(run_dir)  # each step once
    for key, values in before.items():  # what the checkpoint covers is kept as it was
        assert {s: v for s, v in after[key].items() if s <= 512} == {s: v for s, v in values.items() if s <= 512}
    assert sorted(after["loss/loss_policy"]) == [128, 256, 384, 512, 640, 768, 896, 1024]

    events = EventAccumulator(str(run_dir / "tb"))
    events.Reload()
    for tag in events.Tags()["scalars"]:
        steps = [event.step for event in events.Scalars(tag)]
        assert steps == sorted(set(steps)) and steps == sorted(after[tag]), (tag, steps)
    assert_same(after, mlflow_metrics(run_dir, after), "MLflow")
    assert_same(after, wandb_metrics(run_dir, stores), "W&B")


def test_logger_names_are_checked_before_anything_is_written(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    assert_one_line_error(run_cli("train", "ppo-cartpole", "--run-dir", str(run_dir), "--logger", "tensorboard,mlfow"),
                          "--logger tensorboard,mlfow: unknown logger 'mlfow' (did you mean 'mlflow'?)")
    assert not run_dir.exists()

    import importlib.util

    from rlplug.errors import TrackerMissingError
    from rlplug.runs.trackers import parse_loggers

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real_find_spec(name, *a))
    with pytest.raises(TrackerMissingError, match=r"--logger wandb logs to Weights & Biases, which is not installed: "
                                                  r"pip install 'rlplug\[wandb\]'"):
        parse_loggers("tensorboard,wandb")
    assert parse_loggers(None) == ("tensorboard", "csv") and parse_loggers(["mlflow"]) == ("mlflow", "csv")


REFUSING = "http://127.0.0.1:9"  # loopback's discard port: nothing listens, the connection is refused at once


@pytest.mark.parametrize("name", ["mlflow", "wandb"])
def test_an_unreachable_tracking_server_is_one_line_naming_it_within_seconds(tmp_path, monkeypatch, capsys, name):
    import time

    import rlplug
    from rlplug.cli import main
    from rlplug.errors import TrackerError
    from rlplug.runs.trackers import MlflowTracker, WandbTracker

    monkeypatch.setenv("MLFLOW_TRACKING_URI", REFUSING)
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.setenv("WANDB_BASE_URL", REFUSING)
    monkeypatch.setenv("WANDB_API_KEY", "0" * 40)
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    build = rlplug.pipeline.session.Session().prepare("ppo-cartpole", "skrl")  # nothing built: a tracker reads the recipe only

    def too_slow(*_):
        raise AssertionError("still waiting for the tracker after 20 s")

    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(20)  # the old code waited 96 s and more: fail here instead of hanging the suite
    start = time.monotonic()
    try:
        with pytest.raises(TrackerError) as refused:  # a resumed run or a Python caller opens the tracker itself
            (MlflowTracker if name == "mlflow" else WandbTracker)(tmp_path, build, None)
        capsys.readouterr()
        code = main(["train", "ppo-cartpole", "--logger", name, "--run-dir", str(tmp_path / "run"), "--steps", "64"])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - start < 10
    hint = "is the tracking server running? (MLFLOW_TRACKING_URI names it)" if name == "mlflow" else \
        "is the W&B server up? (WANDB_BASE_URL names it; WANDB_MODE=offline logs to files)"
    line = f"{name}: cannot reach the server at {REFUSING} (connection refused); {hint}"
    assert str(refused.value) == line
    assert code == 2 and capsys.readouterr().err == f"rlplug: error: {line}\n"
    assert not (tmp_path / "run").exists()  # refused before the run directory is made
