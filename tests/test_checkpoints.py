"""Checkpoints you can trust: the previous one survives every write, a full disk loses nothing, a
checkpoint of another cell, hyperparameter set or major version is refused, a diverging run stops with
one line and keeps its last good checkpoint, and a run killed at random moments resumes."""

from __future__ import annotations

import csv
import errno
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch

import rlplug
from conftest import one_timeline, run_cli
from rlplug.runs.checkpoint_io import PREVIOUS, load_checkpoint, non_finite_tensors, save_checkpoint
from rlplug.errors import CheckpointMismatchError, RunDirError, TrainingDivergedError
from rlplug.runs import CHECKPOINT, check_header, checkpoint_header

SMALL_PPO = ["num_envs=2", "rollout_steps=64", "epochs=2", "minibatches=2", "hidden_sizes=[16, 16]"]


def test_each_write_keeps_the_previous_checkpoint(tmp_path):
    path = tmp_path / "latest.pt"
    save_checkpoint(path, {"n": 1})
    assert not (tmp_path / PREVIOUS).exists()
    save_checkpoint(path, {"n": 2})
    save_checkpoint(path, {"n": 3})
    assert load_checkpoint(path)["n"] == 3 and load_checkpoint(tmp_path / PREVIOUS)["n"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pt", PREVIOUS]


def test_a_full_disk_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    path = tmp_path / "latest.pt"
    save_checkpoint(path, {"n": 1})
    real_save = torch.save

    def full_disk(obj, handle, *args, **kwargs):
        handle.write(b"partial bytes")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(RunDirError, match=r"cannot write checkpoint .*: disk full \(no space left on device\); the previous checkpoint there is intact"):
        save_checkpoint(path, {"n": 2})
    monkeypatch.setattr(torch, "save", real_save)
    assert load_checkpoint(path)["n"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pt"]  # no temporary file left behind


def test_non_finite_tensors_are_named_and_replay_memory_is_ignored():
    state = {"modules": {"policy": {"w": torch.tensor([1.0, float("nan")])}, "ok": torch.ones(2)},
             "memory": {"tensors": {"obs": torch.full((2,), float("nan"))}}, "steps": 3}
    assert list(non_finite_tensors(state)) == ["modules.policy.w"]


def test_environment_snapshots_may_hold_infinite_space_bounds():
    """A VMAS world's observation space is unbounded: its snapshot is not a diverged parameter."""
    from rlplug.envs.state import snapshot
    import gymnasium as gym

    class World:
        def __init__(self):
            self.observation_space = gym.spaces.Box(-float("inf"), float("inf"), (2,))

    state = {"env": snapshot(World()), "modules": {"w": torch.ones(2)}}
    assert list(non_finite_tensors(state)) == []


def test_checkpoints_of_other_hyperparameters_cells_or_major_versions_are_refused(tmp_path):
    build = rlplug.build("ppo-cartpole", overrides=SMALL_PPO)
    try:
        header = checkpoint_header(build)
        check_header(header, build, "x.pt")  # its own header passes
        other_hp = {**header, "hyperparameters": {**header["hyperparameters"], "gamma": 0.5}}
        with pytest.raises(CheckpointMismatchError, match=r"other hyperparameters: gamma \(0.5 there, 0.99 here\)"):
            check_header(other_hp, build, "x.pt")
        # a hyperparameter added to the algorithm since the checkpoint was written: fine at its default, not otherwise
        def without(name):
            return {**header, "hyperparameters": {k: v for k, v in header["hyperparameters"].items() if k != name}}

        check_header(without("use_sde"), build, "x.pt")
        defaults = {p.name: p.default for p in build.algorithm.params}
        tuned = next(k for k, v in build.hp.items() if k in defaults and v != defaults[k])  # the recipe's own value
        with pytest.raises(CheckpointMismatchError, match=rf"{tuned} \(None there"):
            check_header(without(tuned), build, "x.pt")
        with pytest.raises(CheckpointMismatchError, match="holds a sac/skrl run, not ppo/skrl"):
            check_header({**header, "algorithm": "sac"}, build, "x.pt")
        with pytest.raises(CheckpointMismatchError, match="written by rlplug 7.0.0; this is rlplug .*, another major version"):
            check_header({**header, "rlplug": "7.0.0"}, build, "x.pt")
        rlplug.save(build, tmp_path / "ppo.pt")
        other = rlplug.build("ppo-cartpole", overrides=[*SMALL_PPO, "entropy_coef=0.5"])
        with pytest.raises(CheckpointMismatchError, match="entropy_coef"):
            rlplug.load(other, tmp_path / "ppo.pt")
        other.trainer.close()
    finally:
        build.trainer.close()


def test_a_checkpoint_lacking_what_the_cell_needs_is_refused_with_its_name(tmp_path):
    build = rlplug.build("ppo-cartpole", overrides=SMALL_PPO)
    try:
        payload = {"rlplug": checkpoint_header(build), "trainer": {k: v for k, v in build.trainer.state_dict().items() if k != "rng"}}
        save_checkpoint(tmp_path / "cut.pt", payload)
        with pytest.raises(CheckpointMismatchError, match="lacks 'rng', which ppo/skrl needs to resume"):
            rlplug.load(build, tmp_path / "cut.pt")
    finally:
        build.trainer.close()


def _poisoned(build, after_iterations, how):
    step = build.trainer.step

    def poisoned_step():
        metrics = step()
        if build.trainer.iterations >= after_iterations:
            if how == "loss":
                metrics = {**metrics, "loss/policy": float("nan")}
            else:
                with torch.no_grad():
                    next(build.trainer.agent.models["policy"].parameters()).fill_(float("inf"))
        return metrics

    build.trainer.step = poisoned_step


@pytest.mark.parametrize("how", ["loss", "parameter"])
def test_divergence_stops_with_one_line_and_keeps_the_last_good_checkpoint(tmp_path, how):
    from rlplug.runs import train

    build = rlplug.build("ppo-cartpole", overrides=[*SMALL_PPO, "steps=2048"])
    _poisoned(build, after_iterations=5, how=how)
    run_dir = tmp_path / "run"
    try:
        with pytest.raises(TrainingDivergedError) as caught:
            train(build, run_dir=run_dir, progress=False, checkpoint_every=256)
    finally:
        build.trainer.close()
    message = str(caught.value)
    assert "\n" not in message and "became" in message and "training stopped" in message
    expected = "policy became nan by env steps 640" if how == "loss" else "policy.net.0.weight became NaN or infinite by env steps 640"
    assert expected in message, message
    saved = load_checkpoint(run_dir / CHECKPOINT)
    assert saved["rlplug"]["env_steps"] == 512  # the last checkpoint before the poison
    assert not list(non_finite_tensors(saved["trainer"]))


def _rows(path):
    with path.open() as handle:
        return list(csv.reader(handle))


def test_a_run_killed_at_random_moments_resumes_from_its_last_complete_checkpoint(tmp_path):
    """SIGKILL ten times, some of them while a checkpoint is being written; every resume continues
    from the last complete checkpoint and every metrics row written before a kill is still there."""
    run_dir = tmp_path / "run"
    sets = [a for s in SMALL_PPO for a in ("--set", s)]
    base = [sys.executable, "-m", "rlplug.cli"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    rng = random.Random(7)
    command = [*base, "train", "ppo-cartpole", *sets, "--steps", "10000000", "--run-dir", str(run_dir),
               "--checkpoint-every", "128", "--no-progress"]
    kills, checkpoint_steps, interrupted_writes = 0, [], 0
    while kills < 10:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 120
        while not (run_dir / CHECKPOINT).is_file() and time.monotonic() < deadline:
            time.sleep(0.05)
        before = (run_dir / CHECKPOINT).stat().st_mtime_ns
        while (run_dir / CHECKPOINT).stat().st_mtime_ns == before and time.monotonic() < deadline:
            time.sleep(0.01)  # this process has written a checkpoint of its own: it is training
        time.sleep(rng.uniform(0.0, 0.4))  # checkpoints come every ~30 ms: many kills land mid-write
        process.send_signal(signal.SIGKILL)
        process.wait()
        kills += 1
        rows_before = _rows(run_dir / "metrics.csv")
        payload = load_checkpoint(run_dir / CHECKPOINT)  # complete, whatever moment the kill hit
        checkpoint_steps.append(payload["rlplug"]["env_steps"])
        interrupted_writes += any((run_dir / "checkpoints").glob(".*.tmp"))
        command = [*base, "resume", str(run_dir), "--checkpoint-every", "128", "--no-progress"]
        after = None
        if kills == 10:
            final = subprocess.run([*base, "resume", str(run_dir), "--steps", str(checkpoint_steps[-1] + 256), "--json"],
                                   capture_output=True, text=True, env=env, timeout=300)
            assert final.returncode == 0, final.stderr
            after = _rows(run_dir / "metrics.csv")
            assert one_timeline(rows_before, after, checkpoint_steps[-1])
    assert checkpoint_steps == sorted(checkpoint_steps) and checkpoint_steps[-1] > checkpoint_steps[0]
    assert not list((run_dir / "checkpoints").glob(".*.tmp"))  # resume cleared what interrupted writes left
    print(f"{interrupted_writes} of 10 kills interrupted a checkpoint write")


KILL_MID_WRITE = """
import os, signal, sys
import torch
import rlplug
from rlplug.runs import train

build = rlplug.build("ppo-cartpole", overrides={overrides!r})
real_save = torch.save
writes = []

def save_then_die(obj, handle, *args, **kwargs):
    writes.append(1)
    if len(writes) < 3:
        return real_save(obj, handle, *args, **kwargs)
    handle.write(b"half a checkpoint")
    handle.flush()
    os.kill(os.getpid(), signal.SIGKILL)  # killed in the middle of the third checkpoint write

torch.save = save_then_die
train(build, run_dir=__import__("pathlib").Path(sys.argv[1]), progress=False, checkpoint_every=128)
"""


def test_a_kill_in_the_middle_of_a_checkpoint_write_keeps_the_last_complete_one(tmp_path):
    run_dir = tmp_path / "run"
    script = KILL_MID_WRITE.format(overrides=[*SMALL_PPO, "steps=4096"])
    killed = subprocess.run([sys.executable, "-c", script, str(run_dir)], capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert list((run_dir / "checkpoints").glob(".latest.pt.*.tmp"))  # the half-written file is there
    assert load_checkpoint(run_dir / CHECKPOINT)["rlplug"]["env_steps"] == 256  # the second, complete one
    rows = _rows(run_dir / "metrics.csv")
    resumed = run_cli("resume", str(run_dir), "--steps", "512", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert one_timeline(rows, _rows(run_dir / "metrics.csv"), 256)
    assert load_checkpoint(run_dir / CHECKPOINT)["rlplug"]["env_steps"] == 512


def test_cli_divergence_is_one_line_with_exit_code_3(tmp_path):
    plugin = tmp_path / "nan_loss.py"
    plugin.write_text(
        "import rlplug\n"
        "from rlplug_ppo.skrl_backend import make_clip_loss\n"
        "class NaNLoss:\n"
        "    def __init__(self, build): self.inner = make_clip_loss(build)\n"
        "    def __call__(self, *a, **k):\n"
        "        out = self.inner(*a, **k)\n"
        "        return {**out, 'loss_policy': out['loss_policy'] * float('nan')}\n"
        "@rlplug.hookimpl\n"
        "def rlplug_register_losses(losses):\n"
        "    losses.register('ppo', 'skrl', 'nan', NaNLoss, terms=('loss_policy', 'loss_value', 'loss_entropy'),\n"
        "                    reported=('approx_kl',))\n"
    )
    result = run_cli("train", "ppo-cartpole", "--plugin", "nan_loss", "--set", "loss=nan", *[a for s in SMALL_PPO for a in ("--set", s)],
                     "--steps", "1024", "--run-dir", str(tmp_path / "run"), "--no-progress", paths=(tmp_path,))
    assert result.returncode == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "became NaN or infinite by env steps" in lines[0] and "policy" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
