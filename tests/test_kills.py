"""Kill and resume across cells (issue 20, point 5). The PPO/skrl cell's ten SIGKILLs are in
``test_checkpoints.py``; here an off-policy (SAC on TorchRL), an offline (IQL on skrl, from a small random
dataset) and a multi-agent cell (MAPPO on skrl, MPE simple_spread with two agents) are SIGKILLed at random
moments, ``KILLS`` times each: every resumed process trains on (it writes a checkpoint of its own and is
still running when it is killed), the checkpoint's counters only grow, every metrics row written before a
kill is still there afterwards, and a resume keeps the run's checkpoint period without being told it.

Each kill costs one process start (~3.5-5 s here: torch and the backend are imported, the run is rebuilt
and its checkpoint loaded), so ``KILLS`` is a constant: 3 per cell keeps the three cells near a minute on an
idle 2-core machine; ``RLPLUG_TEST_KILLS=10`` runs the issue's ten per cell (about three minutes).

Also here: SIGINT and SIGTERM write a checkpoint at the interrupt and exit 130 / 143; a run killed before
its first checkpoint resumes from step 0 with its recorded recipe.
"""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import one_timeline, run_cli
from rlplug.runs.checkpoint_io import load_checkpoint
from rlplug.runs import CHECKPOINT

KILLS = int(os.environ.get("RLPLUG_TEST_KILLS", "3"))
BASE = [sys.executable, "-m", "rlplug.cli"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
SMALL_PPO = ["--set", "num_envs=2", "--set", "rollout_steps=64", "--set", "epochs=2", "--set", "minibatches=2",
             "--set", "hidden_sizes=[16, 16]", "--set", "eval_episodes=1"]


def _rows(path: Path) -> list[list[str]]:
    with path.open(newline="") as handle:
        return list(csv.reader(handle))


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_mtime_ns


def _counters(run_dir: Path) -> tuple[int, int]:
    header = load_checkpoint(run_dir / CHECKPOINT)["rlplug"]  # complete, whatever moment the kill hit
    return header.get("updates", header["env_steps"]), header["env_steps"]


def kill_and_resume(run_dir: Path, train_args: list[str], seed: int, extra: int) -> list[tuple[int, int]]:
    """Train, SIGKILL at a random moment after the process wrote a checkpoint of its own, resume (with no
    options: the checkpoint period is the run's), ``KILLS`` times; then resume to a little beyond."""
    rng = random.Random(seed)
    command = [*BASE, "train", *train_args, "--steps", "100000000", "--run-dir", str(run_dir), "--no-progress"]
    seen: list[tuple[int, int]] = []
    rows: list[list[str]] = []
    for kill in range(KILLS):
        before = _stamp(run_dir / CHECKPOINT)
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, text=True)
        try:
            deadline = time.monotonic() + 120
            while _stamp(run_dir / CHECKPOINT) in (None, before):  # until this process wrote one of its own
                assert process.poll() is None, f"kill {kill}: the process ended: {process.stderr.read()}"
                assert time.monotonic() < deadline, f"kill {kill}: no new checkpoint in 120 s"
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.3))  # mid-iteration, mid-metrics-row or mid-checkpoint-write
            assert process.poll() is None, f"kill {kill}: the process ended: {process.stderr.read()}"
        finally:
            process.kill()
            process.wait()
        counters = _counters(run_dir)
        if seen:
            assert counters[0] > seen[-1][0] and counters[1] >= seen[-1][1], (seen, counters)  # only growing
        seen.append(counters)
        now = _rows(run_dir / "metrics.csv")
        resumed_from = seen[-2][0] if len(seen) > 1 else 0
        assert one_timeline(rows, now, resumed_from), f"kill {kill}: rows up to the checkpoint resumed from are gone, or a step is twice"
        rows = now
        command = [*BASE, "resume", str(run_dir), "--no-progress"]
    final = subprocess.run([*BASE, "resume", str(run_dir), "--steps", str(seen[-1][0] + extra), "--json"],
                           capture_output=True, text=True, env=ENV, timeout=300)
    assert final.returncode == 0, final.stderr
    assert json.loads(final.stdout)["steps"] >= seen[-1][0] + extra
    assert one_timeline(rows, _rows(run_dir / "metrics.csv"), seen[-1][0])
    assert not list((run_dir / "checkpoints").glob(".*.tmp"))  # resume cleared what interrupted writes left
    return seen


def test_sac_on_torchrl_killed_at_random_moments_resumes(tmp_path):
    pytest.importorskip("torchrl")
    args = ["sac-pendulum", "--backend", "torchrl", "--set", "hidden_sizes=[16, 16]", "--set", "batch_size=32",
            "--set", "learning_starts=32", "--set", "buffer_size=4000", "--set", "log_every=25", "--set", "eval_episodes=1",
            "--checkpoint-every", "50"]
    kill_and_resume(tmp_path / "run", args, seed=11, extra=50)


def test_offline_iql_killed_at_random_moments_resumes(tmp_path, random_dataset):
    args = ["iql-pendulum-medium", "--backend", "skrl", "--set", f"dataset={random_dataset('Pendulum-v1')}",
            "--set", "hidden_sizes=[16, 16]", "--set", "batch_size=32", "--set", "log_every=10", "--set", "eval_every=0",
            "--set", "eval_episodes=1", "--checkpoint-every", "20"]
    seen = kill_and_resume(tmp_path / "run", args, seed=12, extra=20)
    assert all(env_steps == seen[0][1] for _, env_steps in seen)  # offline: gradient updates grow, no env steps


def test_mappo_killed_at_random_moments_resumes(tmp_path):
    args = ["mappo-simple-spread", "--backend", "skrl", "--set", "num_envs=2", "--set", "rollout_steps=25",
            "--set", "epochs=1", "--set", "minibatches=1", "--set", "hidden_sizes=[16, 16]", "--set", "env_kwargs.N=2",
            "--set", "eval_episodes=1", "--checkpoint-every", "50"]
    kill_and_resume(tmp_path / "run", args, seed=13, extra=50)


# ---- interrupts, and a kill before the first checkpoint -------------------------------------------------


def _start_and_wait_for_rows(command: list[str], run_dir: Path, rows: int) -> subprocess.Popen:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, text=True)
    deadline = time.monotonic() + 120
    metrics = run_dir / "metrics.csv"
    while not metrics.is_file() or len(_rows(metrics)) < rows + 1:
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "no metrics in time"
        time.sleep(0.02)
    return process


def test_an_interrupt_writes_a_checkpoint_where_it_stopped(tmp_path):
    """Ctrl-C stops a ``train``, SIGTERM a ``resume``; each writes a checkpoint at the interrupt (the run's own
    period is far away) and exits 128 + signal with one line saying where it stopped and how to go on."""
    run_dir = tmp_path / "run"
    command = [*BASE, "train", "ppo-cartpole", *SMALL_PPO, "--steps", "100000000", "--checkpoint-every", "100000000",
               "--run-dir", str(run_dir), "--no-progress"]
    steps = 0
    for how, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        process = _start_and_wait_for_rows(command, run_dir, rows=len(_rows(run_dir / "metrics.csv")) + 3 if steps else 3)
        process.send_signal(how)
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == code, stderr
        assert _counters(run_dir)[1] > steps
        steps = _counters(run_dir)[1]
        assert stderr.strip().splitlines() == [f"rlplug: interrupted by {how.name} at env step {steps}; a checkpoint was "
                                               f"written there: continue with `rlplug resume {run_dir}`"], stderr
        assert int(_rows(run_dir / "metrics.csv")[-1][0]) == steps  # at the last row: nothing will be redone
        command = [*BASE, "resume", str(run_dir), "--no-progress"]
    resumed = run_cli("resume", str(run_dir), "--steps", str(steps + 128), "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["steps"] == steps + 128


def test_a_run_killed_before_its_first_checkpoint_resumes_from_step_0(tmp_path):
    run_dir = tmp_path / "run"
    command = [*BASE, "train", "ppo-cartpole", *SMALL_PPO, "--steps", "100000000", "--checkpoint-every", "100000000",
               "--run-dir", str(run_dir), "--no-progress"]
    process = _start_and_wait_for_rows(command, run_dir, rows=2)
    process.kill()
    process.wait()
    assert not (run_dir / CHECKPOINT).exists()
    rows = _rows(run_dir / "metrics.csv")
    resumed = run_cli("resume", str(run_dir), "--steps", "512", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.strip() == (f"rlplug: note: run {run_dir} stopped before its first checkpoint; training it from "
                                      "step 0 with its recorded recipe")
    summary = json.loads(resumed.stdout)
    assert summary["steps"] == 512 and summary["recipe"] == "ppo-cartpole@1"
    assert one_timeline(rows, _rows(run_dir / "metrics.csv"), 0)
    assert _counters(run_dir)[1] == 512


def test_a_resume_keeps_the_runs_checkpoint_period(tmp_path, monkeypatch):
    import rlplug
    from rlplug.runs import RunWriter, open_run, train

    saved_at: list[int] = []
    real = RunWriter.checkpoint

    def recording(self, rank_states=None):
        saved_at.append(self.build.trainer.progress)
        return real(self, rank_states)

    monkeypatch.setattr(RunWriter, "checkpoint", recording)
    run_dir = tmp_path / "run"
    small = [s for s in SMALL_PPO if s != "--set"]
    build = rlplug.build("ppo-cartpole", overrides=[*small, "steps=512"])
    try:
        train(build, run_dir=run_dir, progress=False, checkpoint_every=256)
    finally:
        build.trainer.close()
    assert saved_at == [256, 512]
    assert json.loads((run_dir / "recipe.json").read_text())["checkpoint_every"] == 256
    saved_at.clear()
    build = open_run(rlplug.session(), run_dir)
    try:
        train(build, steps=2048, run_dir=run_dir, progress=False, resume=True)  # not told the period: 2048 // 10 before
    finally:
        build.trainer.close()
    assert saved_at == [768, 1024, 1280, 1536, 1792, 2048]
