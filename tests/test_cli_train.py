"""End-to-end ``rlplug train`` / ``eval`` / ``resume`` / ``bench`` in a subprocess."""

from __future__ import annotations

import csv
import importlib.util
import json

import pytest

from conftest import assert_one_line_error, run_cli

BACKENDS = ["skrl", pytest.param("torchrl", marks=pytest.mark.skipif(importlib.util.find_spec("torchrl") is None, reason="torchrl missing"))]
FAST = ["--set", "num_envs=2", "--set", "rollout_steps=64", "--set", "epochs=2", "--set", "eval_episodes=2"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_train_writes_a_complete_run_directory_then_eval_and_resume(backend, tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli("train", "ppo-cartpole", "--backend", backend, "--steps", "512", "--run-dir", str(run_dir), *FAST)
    assert result.returncode == 0, result.stderr
    assert f"run directory: {run_dir}" in result.stdout
    assert "eval return" in result.stdout
    for name in ("recipe.json", "command.txt", "versions.json", "metrics.csv", "summary.json", "curve.png", "checkpoints/latest.pt"):
        assert (run_dir / name).is_file(), name
    assert any((run_dir / "tb").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 512 and summary["backend"] == backend and summary["eval_episodes"] == 2
    assert set(summary) >= {"recipe", "algorithm", "wall_seconds", "steps_per_second", "eval_return_mean", "eval_return_std", "target", "passed"}
    versions = json.loads((run_dir / "versions.json").read_text())
    assert {"python", "torch", "skrl", "torchrl", "tensordict", "gymnasium", "rlplug", "rlplug-ppo"} <= set(versions)
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    assert [int(r["env_steps"]) for r in rows] == [128, 256, 384, 512]  # the final evaluation joins its step's row
    assert float(rows[-1]["eval/return"]) == summary["eval_return_mean"] and float(rows[-1]["train/steps_per_second"]) > 0

    evaluated = run_cli("eval", str(run_dir), "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["steps"] == 512

    resumed = run_cli("resume", str(run_dir), "--steps", "768", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["steps"] == 768
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    assert [int(r["env_steps"]) for r in rows] == [128, 256, 384, 512, 640, 768]  # rows already written are kept


def test_no_write_writes_nothing(tmp_path):
    result = run_cli("train", "ppo-cartpole", "--steps", "256", "--no-write", "--json", *FAST, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["run_dir"] is None
    assert list(tmp_path.iterdir()) == []


def test_existing_run_directory_is_not_overwritten(tmp_path):
    (tmp_path / "keep.txt").write_text("precious")
    assert_one_line_error(run_cli("train", "ppo-cartpole", "--run-dir", str(tmp_path)), "already exists and is not empty")
    assert (tmp_path / "keep.txt").read_text() == "precious"


def test_corrupt_and_malicious_checkpoints_are_refused(tmp_path):
    run_dir = tmp_path / "run"
    assert run_cli("train", "ppo-cartpole", "--steps", "128", "--run-dir", str(run_dir), *FAST).returncode == 0
    checkpoint = run_dir / "checkpoints" / "latest.pt"
    checkpoint.write_bytes(checkpoint.read_bytes()[:100])
    (run_dir / "checkpoints" / "previous.pt").unlink(missing_ok=True)  # else it stands in, with a note (test_guards.py)
    assert_one_line_error(run_cli("eval", str(run_dir)), "is corrupt or truncated")

    marker = tmp_path / "pwned"
    code = (
        "import os, pickle, torch\n"
        "class Evil:\n"
        f"    def __reduce__(self): return (os.system, ('touch {marker}',))\n"
        f"torch.save({{'format': 1, 'trainer': Evil()}}, {str(checkpoint)!r})\n"
    )
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", code], check=True)
    assert_one_line_error(run_cli("eval", str(run_dir)), "refusing checkpoint")
    assert not marker.exists()


def test_bench_prints_a_table_and_writes_a_report(tmp_path):
    report = tmp_path / "BENCH.md"
    result = run_cli("bench", "ppo-cartpole", "--backend", "skrl", "--steps", "256", *FAST, "--json", "--report", str(report))
    assert result.returncode in (0, 1), result.stderr  # a 256-step run is not expected to reach the target
    rows = json.loads(result.stdout)
    assert rows[0]["recipe"] == "ppo-cartpole@1" and rows[0]["backend"] == "skrl" and rows[0]["steps"] == 256
    assert rows[0]["passed"] is (rows[0]["eval_return_mean"] >= 475)
    text = report.read_text()
    assert "| ppo-cartpole@1 | skrl | quick | 42 | 256 |" in text and "torch threads 1" in text and "skrl 2.1.1" in text
    saved = json.loads(report.with_suffix(".json").read_text())
    assert saved["rows"] == rows and saved["machine"]["cpu_count"] >= 1
    assert_one_line_error(run_cli("bench", "ppo-cartpole", "--all"), "give recipe names or --all, not both")


def test_eval_records_videos_or_says_what_it_needs(tmp_path, monkeypatch):
    import importlib.util

    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)  # as on a headless machine, where SDL complained
    monkeypatch.delenv("SDL_VIDEODRIVER", raising=False)
    run_dir = tmp_path / "run"
    assert run_cli("train", "ppo-cartpole", "--steps", "256", "--run-dir", str(run_dir), *FAST).returncode == 0
    result = run_cli("eval", str(run_dir), "--episodes", "1", "--video", "--json")
    if importlib.util.find_spec("moviepy") is None:
        assert_one_line_error(result, "needs moviepy: pip install 'rlplug[video]'")
        return
    assert result.returncode == 0, result.stderr
    assert "XDG_RUNTIME_DIR" not in result.stderr  # the off-screen renderer says nothing on success
    videos = json.loads(result.stdout)["videos"]
    assert len(videos) == 1 and videos[0].endswith(".mp4") and (run_dir / "videos").is_dir()
