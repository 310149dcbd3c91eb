"""One writer per run directory (issue 20, point 3): ``train``, ``resume`` and ``--nproc`` runs hold an OS
lock on ``RUN_DIR/.lock``; a second writer is refused in one line naming the holder's PID and changes
nothing; ``eval`` reads without a lock; a SIGKILL frees the lock (the OS drops it with the process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import assert_one_line_error, run_cli
from rlplug.runs.checkpoint_io import load_checkpoint
from rlplug.runs import CHECKPOINT

FAST = ["--set", "num_envs=2", "--set", "rollout_steps=64", "--set", "epochs=2", "--set", "eval_episodes=1", "--no-progress"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def start(*argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rlplug.cli", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=ENV, text=True)


def wait_for_checkpoint(process: subprocess.Popen, run_dir: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not (run_dir / CHECKPOINT).is_file():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "no checkpoint in time"
        time.sleep(0.05)


def busy(run_dir: Path, pid: int) -> str:
    return f"run directory {run_dir} is locked by process {pid}, which is training or resuming it"


def stop(process: subprocess.Popen, how: int = signal.SIGKILL) -> None:
    if process.poll() is None:
        process.send_signal(how)
    process.wait(timeout=120)


def test_a_second_train_or_resume_is_refused_while_a_run_is_written(tmp_path):
    run_dir = tmp_path / "run"
    first = start("train", "ppo-cartpole", "--steps", "10000000", "--checkpoint-every", "256", "--run-dir", str(run_dir), *FAST)
    try:
        wait_for_checkpoint(first, run_dir)
        assert (run_dir / ".lock").read_text().strip() == str(first.pid)
        lock_before = (run_dir / ".lock").stat().st_mtime_ns
        assert_one_line_error(run_cli("train", "ppo-cartpole", "--run-dir", str(run_dir), *FAST), busy(run_dir, first.pid))
        assert_one_line_error(run_cli("resume", str(run_dir), "--no-progress"), busy(run_dir, first.pid))
        assert (run_dir / ".lock").read_text().strip() == str(first.pid)
        assert (run_dir / ".lock").stat().st_mtime_ns == lock_before  # the refused processes wrote nothing
        evaluated = run_cli("eval", str(run_dir), "--episodes", "1")  # reading needs no lock
        assert evaluated.returncode == 0, evaluated.stderr
        assert first.poll() is None  # the writer carries on
    finally:
        stop(first)
    # the SIGKILL took the lock with it: the run resumes at once
    steps = load_checkpoint(run_dir / CHECKPOINT)["rlplug"]["env_steps"] + 256
    resumed = run_cli("resume", str(run_dir), "--steps", str(steps), "--json")
    assert resumed.returncode == 0, resumed.stderr


def test_two_resumes_of_one_run_cannot_both_write(tmp_path):
    run_dir = tmp_path / "run"
    trained = run_cli("train", "ppo-cartpole", "--steps", "256", "--run-dir", str(run_dir), *FAST)
    assert trained.returncode == 0, trained.stderr
    first = start("resume", str(run_dir), "--steps", "10000000", "--checkpoint-every", "256", "--no-progress")
    try:
        before = (run_dir / CHECKPOINT).stat().st_mtime_ns
        deadline = time.monotonic() + 120
        while (run_dir / CHECKPOINT).stat().st_mtime_ns == before:  # it holds the lock once it writes
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read()
            time.sleep(0.05)
        second = run_cli("resume", str(run_dir), "--steps", "20000000", "--no-progress")
        assert_one_line_error(second, busy(run_dir, first.pid))
    finally:
        stop(first, signal.SIGTERM)
    assert first.returncode == 143, first.stderr.read()


def test_two_trains_racing_for_one_new_directory(tmp_path):
    """Both pass the first check of an empty directory; only one gets the lock and the other is refused."""
    run_dir = tmp_path / "run"
    processes = [start("train", "ppo-cartpole", "--steps", "10000000", "--checkpoint-every", "256", "--run-dir", str(run_dir), *FAST)
                 for _ in range(2)]
    try:
        deadline = time.monotonic() + 120
        while all(p.poll() is None for p in processes):
            assert time.monotonic() < deadline, "neither was refused"
            time.sleep(0.05)
        refused = next(p for p in processes if p.poll() is not None)
        writer = next(p for p in processes if p is not refused)
        assert refused.returncode == 2
        line = refused.stderr.read().strip()
        assert line.count("\n") == 0 and "Traceback" not in line, line
        assert busy(run_dir, writer.pid) in line or "already holds a run" in line, line
        wait_for_checkpoint(writer, run_dir)
    finally:
        for process in processes:
            stop(process)


def test_a_kill_leaves_no_stale_lock_and_a_refusal_names_nobody_then(tmp_path):
    """The lock file outlives its process, the lock does not: the file's old PID is not taken for a holder."""
    from rlplug.runs.lock import holder

    run_dir = tmp_path / "run"
    process = start("train", "ppo-cartpole", "--steps", "10000000", "--checkpoint-every", "256", "--run-dir", str(run_dir), *FAST)
    wait_for_checkpoint(process, run_dir)
    assert holder(run_dir) == process.pid
    stop(process)
    assert (run_dir / ".lock").read_text().strip() == str(process.pid)  # still in the file ...
    assert holder(run_dir) is None  # ... but nobody holds the lock


def test_eval_and_export_take_no_lock(tmp_path):
    """While a process holds the lock (here: this test), reading a run works."""
    from rlplug.runs.lock import lock_run_dir, unlock_run_dir

    run_dir = tmp_path / "run"
    trained = run_cli("train", "ppo-cartpole", "--steps", "256", "--run-dir", str(run_dir), *FAST)
    assert trained.returncode == 0, trained.stderr
    assert lock_run_dir(run_dir)
    try:
        assert run_cli("eval", str(run_dir), "--episodes", "1").returncode == 0
        assert_one_line_error(run_cli("resume", str(run_dir), "--steps", "512"), busy(run_dir, os.getpid()))
    finally:
        unlock_run_dir(run_dir)


def test_a_multi_process_run_is_locked_by_its_launcher(tmp_path):
    """``--nproc``: the launcher holds the lock for its workers (rank 0 writes under it, told by RLPLUG_RUN_LOCK)."""
    from rlplug.runs.lock import holder

    run_dir = tmp_path / "run"
    launcher = start("train", "ppo-cartpole", "--steps", "10000000", "--checkpoint-every", "512", "--nproc", "2",
                     "--run-dir", str(run_dir), *FAST)
    try:
        wait_for_checkpoint(launcher, run_dir, timeout=300)
        assert (run_dir / ".lock").read_text().strip() == str(launcher.pid)
        assert_one_line_error(run_cli("resume", str(run_dir), "--no-progress"), busy(run_dir, launcher.pid))
    finally:
        stop(launcher, signal.SIGTERM)  # torchrun stops its workers
    assert holder(run_dir) is None
