"""Evaluations during online training (``eval_every``) and ``checkpoints/best.pt``; progress shown for the
final evaluation and for ``rlplug eval``."""

from __future__ import annotations

import csv
import json

import pytest

import rlplug
from rlplug.runs.checkpoint_io import load_checkpoint, save_checkpoint
from rlplug.cli import main
from rlplug.runs import open_run, train
from rlplug.runs.rundir import BEST_CHECKPOINT, CHECKPOINT

TINY = ["rollout_steps=16", "hidden_sizes=[8]", "eval_episodes=2"]  # 128 env steps per PPO iteration


def ppo(backend: str = "skrl", steps: int = 512):
    return rlplug.build("ppo-cartpole", backend=backend, overrides=[*TINY, f"steps={steps}"])


def rows(run_dir):
    with (run_dir / "metrics.csv").open() as handle:
        return list(csv.DictReader(handle))


def same_state(a, b, where="trainer") -> None:
    import torch

    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            same_state(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same_state(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and a != a:
        assert b != b, where
    else:
        assert a == b, where


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_eval_every_evaluates_keeps_the_best_state_and_trains_as_without(tmp_path, backend):
    states, summaries = [], []
    # built and trained one after the other (each seeds the global random streams), after a first short run:
    # a process's first TorchRL run draws from Python's `random` once more than the ones after it
    for name, every in (("warm-up", None), ("plain", None), ("evaluated", 128))[backend == "skrl":]:
        build = ppo(backend, steps=128 if name == "warm-up" else 384)
        try:
            summaries.append(train(build, run_dir=tmp_path / name, progress=False, eval_every=every, loggers=("csv",)))
            states.append(build.trainer.state_dict())
        finally:
            build.trainer.close()
    states, summaries = states[-2:], summaries[-2:]
    # the evaluations use their own environment: the training is the same step for step
    same_state(*states)
    without, summary = summaries
    assert summary["eval_return_mean"] == without["eval_return_mean"]
    plain_rows, eval_rows = rows(tmp_path / "plain"), rows(tmp_path / "evaluated")
    assert [{k: v for k, v in r.items() if k.startswith("loss/")} for r in plain_rows] == \
        [{k: v for k, v in r.items() if k.startswith("loss/")} for r in eval_rows]  # fmt: skip
    evals = {int(r["env_steps"]): float(r["eval/return"]) for r in eval_rows if r["eval/return"]}
    assert sorted(evals) == [128, 256, 384]  # every 128 steps, the last one the final evaluation
    assert [r["env_steps"] for r in plain_rows if r["eval/return"]] == ["384"]
    # best.pt holds the state of the first evaluation with the highest return, and says so
    best_step = min(s for s, v in evals.items() if v == max(evals.values()))
    header = load_checkpoint(tmp_path / "evaluated" / BEST_CHECKPOINT)["rlplug"]
    assert header["best_eval"] == {"return": max(evals.values()), "env_steps": best_step}
    assert header["env_steps"] == best_step
    assert summary["best_eval"] == {"return": max(evals.values()), "env_steps": best_step, "checkpoint": str(BEST_CHECKPOINT)}
    # latest.pt's header has the best up to it (the final evaluation comes after it; best.pt's header has that)
    before_end = max(v for s, v in evals.items() if s < 384)
    assert load_checkpoint(tmp_path / "evaluated" / CHECKPOINT)["rlplug"]["best_eval"]["return"] == before_end
    assert not (tmp_path / "plain" / BEST_CHECKPOINT).exists() and "best_eval" not in without
    assert json.loads((tmp_path / "evaluated" / "recipe.json").read_text())["eval_every"] == 128


def test_a_resume_keeps_a_better_best_and_its_evaluation_period(tmp_path, capsys):
    run_dir = tmp_path / "run"
    build = ppo(steps=256)
    try:
        train(build, run_dir=run_dir, progress=False, eval_every=128, loggers=("csv",))
    finally:
        build.trainer.close()
    # as if a killed run had written a better best.pt after its last checkpoint
    best = run_dir / BEST_CHECKPOINT
    payload = load_checkpoint(best)
    payload.pop("format")
    payload["rlplug"]["best_eval"] = {"return": 1e6, "env_steps": 200}
    save_checkpoint(best, payload, keep_previous=False)
    before = best.read_bytes()
    assert main(["resume", str(run_dir), "--steps", "512", "--json"]) == 0  # keeps eval_every = 128
    summary = json.loads(capsys.readouterr().out)
    assert best.read_bytes() == before and summary["best_eval"]["return"] == 1e6
    assert [r["env_steps"] for r in rows(run_dir) if r["eval/return"]] == ["128", "256", "384", "512"]
    assert load_checkpoint(run_dir / CHECKPOINT)["rlplug"]["best_eval"]["return"] == 1e6
    assert not (run_dir / "checkpoints" / ".previous.pt.tmp").exists()


def test_eval_checkpoint_best_and_the_evaluation_bars(tmp_path, capsys):
    run_dir = tmp_path / "run"
    build = ppo(steps=384)
    try:
        summary = train(build, run_dir=run_dir, progress=True, eval_every=128, loggers=("csv",))
    finally:
        build.trainer.close()
    err = capsys.readouterr().err
    assert "final evaluation" in err and "episode" in err and "best=" in err  # bars on stderr
    assert main(["eval", str(run_dir), "--checkpoint", "best", "--json"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["checkpoint"] == "best" and result["steps"] == summary["best_eval"]["env_steps"]
    assert result["eval_return_mean"] == round(summary["best_eval"]["return"], 2)
    assert "episode" not in captured.err  # --json: no bar
    assert main(["eval", str(run_dir), "--episodes", "1"]) == 0
    assert "evaluating" in capsys.readouterr().err


def test_eval_every_refusals_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def refused(*argv: str) -> str:
        assert main(list(argv)) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        return err

    assert "--eval-every = -1 is outside [0, " in refused("train", "ppo-cartpole", "--eval-every", "-1", "--no-write")
    assert refused("train", "iql-pendulum-medium", "--eval-every", "100", "--no-write") == (
        "rlplug: error: --eval-every: recipe 'iql-pendulum-medium' is offline, and offline trainers evaluate every "
        "`eval_every` gradient updates themselves (best.pt included): use --set eval_every=100")
    run_dir = tmp_path / "run"
    build = ppo(steps=128)
    try:
        train(build, run_dir=run_dir, progress=False, loggers=("csv",))
    finally:
        build.trainer.close()
    assert "holds no best checkpoint (checkpoints/best.pt is missing)" in refused("eval", str(run_dir), "--checkpoint", "best")
    assert "--checkpoint best chooses a checkpoint instead" in refused(
        "eval", str(run_dir), "--checkpoint", "best", "--exported", "policy.pt")
    assert not (run_dir / BEST_CHECKPOINT).exists()
    assert open_run(rlplug.pipeline.session.Session(), run_dir).trainer.progress == 128


def test_an_offline_run_keeps_best_pt_from_its_own_evaluations(tmp_path, random_dataset):
    # the trainer evaluates itself every eval_every updates (hyperparameters.eval_episodes each; the final
    # evaluation, the recipe's eval_episodes, is of the same state at update 60 and replaces its row)
    overrides = [f"dataset={random_dataset()}", "hidden_sizes=[16]", "batch_size=32", "log_every=10", "eval_every=20",
                 "hyperparameters.eval_episodes=1", "eval_episodes=1", "steps=60", "time_limit=20"]  # fmt: skip
    build = rlplug.build("iql-pendulum-medium", backend="skrl", overrides=overrides)
    try:
        summary = train(build, run_dir=tmp_path / "run", progress=False, loggers=("csv",))
    finally:
        build.trainer.close()
    evals = {int(r["updates"]): float(r["eval/return"]) for r in rows(tmp_path / "run") if r["eval/return"]}
    assert sorted(evals) == [20, 40, 60]
    best = max(evals.values())
    assert summary["best_eval"]["return"] == pytest.approx(best, abs=1e-3)  # the csv keeps 6 significant digits
    header = load_checkpoint(tmp_path / "run" / BEST_CHECKPOINT)["rlplug"]
    assert header["updates"] == summary["best_eval"]["updates"] == min(s for s, v in evals.items() if v == best)
