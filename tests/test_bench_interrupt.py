"""An interrupted ``rlplug bench`` (Ctrl-C reaches the bench and its training processes): one line per stopped run
with its directory and its last checkpoint's step, the command that goes on, exit 130; ``--continue`` counts the
finished runs (issue 51; that it resumes the stopped ones was checked by hand: 2 x 20k-step runs interrupted at
3072 and continued to 500.0 each)."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time

import pytest


def test_ctrl_c_on_bench_jobs_2_names_each_run_and_the_command_that_continues(tmp_path):
    import torch

    argv = ["bench", "ppo-cartpole", "--backend", "skrl", "--seeds", "2", "--jobs", "2", "--steps", "100000",
            "--set", "hyperparameters.hidden_sizes=[16]", "--set", "eval_episodes=2", "--runs-dir", "runs"]  # fmt: skip
    bench = subprocess.Popen([sys.executable, "-m", "rlplug.cli", *argv], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 240
    runs = [tmp_path / "runs" / f"ppo-cartpole-skrl-seed{seed}" for seed in (0, 1)]
    while not all((run / "metrics.csv").is_file() for run in runs):  # each has trained an iteration
        assert bench.poll() is None and time.monotonic() < deadline, bench.communicate()
        time.sleep(0.1)
    os.killpg(bench.pid, signal.SIGINT)  # as Ctrl-C does: the whole process group
    _, err = bench.communicate(timeout=120)
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("rlplug:")]
    assert bench.returncode == 130, err
    steps = [torch.load(run / "checkpoints" / "latest.pt", weights_only=True)["rlplug"]["env_steps"] for run in runs]
    assert lines == [
        *(f"rlplug: interrupted: ppo-cartpole@1 on skrl, seed {seed}: {os.path.join('runs', run.name)}, last checkpoint at "
          f"env step {step}" for seed, run, step in zip((0, 1), runs, steps)),
        f"rlplug: bench interrupted; continue with: {shlex.join(['rlplug', *argv, '--continue'])}",
    ], err
    assert all(0 < step < 100000 for step in steps)


def test_continue_counts_finished_runs_and_needs_a_runs_dir(capsys, tmp_path):
    from conftest import cli_in_process as _cli, refused_in_process as _refused

    argv = ["bench", "ppo-cartpole", "--backend", "skrl", "--steps", "64", "--set", "eval_episodes=1", "--runs-dir", tmp_path / "runs"]
    code, _, err = _cli(capsys, *argv)
    assert code in (0, 1), err
    summary = (tmp_path / "runs" / "ppo-cartpole-skrl-seed42" / "summary.json").read_text()
    _refused(capsys, "already exists; choose another --runs-dir, or add --continue", *argv)
    code, _, err = _cli(capsys, *argv, "--continue")
    assert code in (0, 1) and "[1/1] counting the finished ppo-cartpole@1 on skrl, seed 42" in err, err
    assert (tmp_path / "runs" / "ppo-cartpole-skrl-seed42" / "summary.json").read_text() == summary  # not trained again
    _refused(capsys, "bench --continue goes on with the runs under --runs-dir", *argv[:-2], "--continue")
