"""``rlplug compare``: learning curves of several runs on one PNG (mean and min–max band over the seeds of
one configuration) and a table of their summaries, from run directories written here by hand in the
run layer's format; bad input is one line."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import cli_in_process as _cli, refused_in_process as _refused

CARTPOLE = {
    "name": "ppo-cartpole", "version": 1, "description": "PPO on CartPole-v1", "algorithm": "ppo", "env": "CartPole-v1",
    "dataset": "", "env_kwargs": {}, "backend": "skrl", "steps": 4096, "seed": 42, "num_envs": 4, "loss": "clip",
    "target": 475.0, "target_metric": "return", "eval_episodes": 10, "tier": "quick",
    "hyperparameters": {"rollout_steps": 64, "epochs": 8, "hidden_sizes": [64, 64]},
}  # fmt: skip
IQL = {**CARTPOLE, "name": "iql-pendulum-medium", "algorithm": "iql", "env": "Pendulum-v1", "dataset": "pendulum-medium",
       "steps": 400, "target": 70.0, "target_metric": "normalised_score", "hyperparameters": {"batch_size": 256}}  # fmt: skip


def write_run(path, recipe=CARTPOLE, backend="skrl", seed=0, unit="env_steps", steps=4096, every=512, finished=True, metrics=True):
    """A run directory as ``rlplug train`` leaves it: ``recipe.json``, ``metrics.csv`` (one row per
    iteration, the final evaluation as the last row) and, once finished, ``summary.json``."""
    path.mkdir(parents=True)
    recipe = {**recipe, "seed": seed, "steps": steps}
    (path / "recipe.json").write_text(json.dumps({"backend": backend, "recipe": recipe, "plugins": [], "env_modules": [],
                                                  "checkpoint_every": steps // 10}))  # fmt: skip
    rng = np.random.default_rng(seed)
    final = 100.0 + 300.0 * rng.random()
    if metrics:
        with (path / "metrics.csv").open("w", newline="") as handle:
            out = csv.writer(handle)
            out.writerow([unit, "wall_s", "train/episode_return", "eval/return", "loss/loss_policy", "train/lr"])
            for i, x in enumerate(range(every, steps + 1, every)):
                train = "" if unit == "updates" else f"{20 + x / steps * final * rng.uniform(0.8, 1.2):.6g}"
                evaluation = f"{final * x / steps:.6g}" if unit == "updates" and i % 2 else ""
                out.writerow([x, round(0.01 * (i + 1), 3), train, evaluation, f"{rng.normal():.6g}", "0.001"])
            if finished:
                out.writerow([steps, round(0.01 * (i + 2), 3), "", f"{final:.6g}", "", ""])
    if finished:
        (path / "summary.json").write_text(json.dumps({
            "recipe": f"{recipe['name']}@1", "algorithm": recipe["algorithm"], "backend": backend, "env": recipe["env"],
            "seed": seed, "steps": steps, "step_unit": unit, "wall_seconds": 12.5 + seed, "steps_per_second": 300.0,
            "eval_episodes": 10, "eval_return_mean": round(final, 2), "eval_return_std": 3.25, "target": recipe["target"],
            "target_metric": recipe["target_metric"], "passed": None if recipe["target"] is None else final >= recipe["target"], "world_size": 1, "run_dir": str(path),
        }))  # fmt: skip
    return path


@pytest.fixture
def runs(tmp_path):
    """Three seeds of ppo-cartpole (CartPole-v1) on skrl, two on torchrl, one unfinished skrl run with another budget."""
    root = tmp_path / "runs"
    made = [write_run(root / f"ppo-cartpole-skrl-{s}", seed=s) for s in (1, 2, 3)]
    made += [write_run(root / f"ppo-cartpole-torchrl-{s}", backend="torchrl", seed=s) for s in (1, 2)]
    made.append(write_run(root / "ppo-cartpole-skrl-long", seed=7, steps=8192, finished=False))
    return made


def _assert_a_real_picture(path):
    import matplotlib.image

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 20_000, path.stat().st_size
    pixels = matplotlib.image.imread(str(path))
    assert pixels.shape[0] > 300 and pixels.shape[1] > 500
    colours = {tuple(p) for p in (pixels[..., :3].reshape(-1, 3) * 255).astype(int)[::7]}
    assert len(colours) > 50, "the picture is nearly blank"


def test_compare_draws_the_runs_and_tabulates_their_summaries(capsys, tmp_path, runs):
    out = tmp_path / "cmp.png"
    code, stdout, err = _cli(capsys, "compare", *runs, "--out", out)
    assert code == 0, err
    _assert_a_real_picture(out)
    lines = stdout.splitlines()
    assert lines[0].split() == ["run", "recipe", "backend", "env", "seed", "env", "steps", "wall", "s", "eval", "return", "target", "passed"]
    for run in runs:
        assert any(line.startswith(str(run)) for line in lines), run
    summary = json.loads((runs[0] / "summary.json").read_text())
    row = next(line for line in lines if line.startswith(str(runs[0])))
    assert f"{summary['eval_return_mean']:.1f} ± 3.2" in row and "13.5" in row and "4096" in row and "475" in row
    assert "unfinished" in next(line for line in lines if line.startswith(str(runs[-1])))
    # the three skrl seeds of one configuration are one group; the longer budget is another configuration
    assert any(line.startswith("ppo-cartpole (CartPole-v1) on skrl (steps=4096): 3 runs, final eval return") for line in lines), stdout
    assert any(line.startswith("ppo-cartpole (CartPole-v1) on torchrl: 2 runs, final eval return") for line in lines), stdout
    assert lines[-1] == f"curves: {out}"


def test_json_output_groups_seeds_and_says_what_was_drawn(capsys, tmp_path, runs):
    out = tmp_path / "cmp.png"
    code, stdout, err = _cli(capsys, "compare", *runs, "--out", out, "--json")
    assert code == 0, err
    report = json.loads(stdout)
    assert report["png"] == str(out) and out.is_file()
    assert [r["run"] for r in report["runs"]] == [str(r) for r in runs]
    groups = {g["group"]: g for g in report["groups"]}
    assert set(groups) == {"ppo-cartpole (CartPole-v1) on skrl (steps=4096)", "ppo-cartpole (CartPole-v1) on torchrl", "ppo-cartpole (CartPole-v1) on skrl (steps=8192)"}
    skrl = groups["ppo-cartpole (CartPole-v1) on skrl (steps=4096)"]
    finals = [json.loads((r / "summary.json").read_text())["eval_return_mean"] for r in runs[:3]]
    assert (skrl["runs"], skrl["finished"]) == (3, 3)
    assert skrl["eval_return_mean"] == pytest.approx(np.mean(finals), abs=0.01)
    assert skrl["eval_return_std_over_runs"] == pytest.approx(np.std(finals), abs=0.01)
    assert groups["ppo-cartpole (CartPole-v1) on skrl (steps=8192)"]["finished"] == 0


def test_runs_on_another_env_are_named_by_it_in_the_legend_and_the_table(capsys, tmp_path, monkeypatch):
    # ppo-cartpole trained on Acrobot-v1 with `--set env=`: no target (resolve drops it), its own env everywhere
    acrobot = {**CARTPOLE, "env": "Acrobot-v1", "target": None}
    made = [write_run(tmp_path / "cartpole", seed=1), write_run(tmp_path / "acrobot", recipe=acrobot, seed=1)]
    import rlplug.results.compare

    labels = []
    real_draw = rlplug.results.compare.draw
    monkeypatch.setattr(rlplug.results.compare, "draw", lambda groups, path, **kw: labels.extend(g.label for g in groups) or real_draw(groups, path, **kw))
    code, stdout, err = _cli(capsys, "compare", *made, "--out", tmp_path / "cmp.png")
    assert code == 0, err
    assert labels == ["ppo-cartpole (CartPole-v1) on skrl", "ppo-cartpole (Acrobot-v1) on skrl"]
    rows = {line.split()[0]: line.split() for line in stdout.splitlines()[2:4]}
    assert rows[str(made[0])][3] == "CartPole-v1" and rows[str(made[0])][-2] == "475"
    assert rows[str(made[1])][3] == "Acrobot-v1" and rows[str(made[1])][-2:] == ["-", "-"]  # no target, no verdict


def test_band_is_the_mean_and_range_over_seeds():
    from rlplug.results.compare import aggregate

    x, mean, low, high = aggregate([([0, 10], [0.0, 10.0]), ([0, 10, 20], [2.0, 12.0, 30.0])])
    assert x[0] == 0 and x[-1] == 20
    assert (mean[0], low[0], high[0]) == (1.0, 0.0, 2.0)
    assert (mean[-1], low[-1], high[-1]) == (30.0, 30.0, 30.0)  # past the shorter run, the longer one alone
    x, mean, low, high = aggregate([([5, 10], [1.0, 3.0]), ([10], [5.0])], exact=True)
    assert (x, mean, low, high) == ([5.0, 10.0], [1.0, 4.0], [1.0, 3.0], [1.0, 5.0])


def test_recipe_picks_its_runs_under_runs_dir(capsys, tmp_path, monkeypatch, runs):
    write_run(tmp_path / "runs" / "iql-1", recipe=IQL, unit="updates", steps=400, every=40)
    (tmp_path / "runs" / "stray").mkdir()  # not a run: ignored when searching
    monkeypatch.chdir(tmp_path)
    code, stdout, err = _cli(capsys, "compare", "--recipe", "ppo-cartpole")
    assert code == 0, err
    assert (tmp_path / "compare-ppo-cartpole.png").is_file()
    assert all(str(r.relative_to(tmp_path)) in stdout for r in runs) and "iql-1" not in stdout

    code, stdout, err = _cli(capsys, "compare", "--recipe", "iql-pendulum-medium", "--runs-dir", tmp_path / "runs", "--out", tmp_path / "iql.png")
    assert code == 0, err
    _assert_a_real_picture(tmp_path / "iql.png")
    assert stdout.splitlines()[0].split()[5] == "updates"


def test_a_run_that_has_not_logged_yet_is_left_out_of_a_recipe_with_a_note(capsys, tmp_path, runs):
    write_run(tmp_path / "runs" / "ppo-cartpole-new", metrics=False, finished=False)
    code, stdout, err = _cli(capsys, "compare", "--recipe", "ppo-cartpole", "--runs-dir", tmp_path / "runs", "--out", tmp_path / "c.png")
    assert code == 0, err
    assert err.strip() == f"rlplug: note: left out: run {tmp_path / 'runs' / 'ppo-cartpole-new'} has no metrics (metrics.csv is missing): it stopped before its first iteration"
    assert "ppo-cartpole-new" not in stdout


def test_bad_input_is_one_line(capsys, tmp_path, runs):
    _refused(capsys, f"{tmp_path} is not an rlplug run directory (no recipe.json)", "compare", tmp_path)
    _refused(capsys, f"run directory {tmp_path / 'nope'} does not exist", "compare", tmp_path / "nope")
    silent = write_run(tmp_path / "silent", metrics=False, finished=False)
    _refused(capsys, f"run {silent} has no metrics (metrics.csv is missing)", "compare", runs[0], silent)
    empty = write_run(tmp_path / "empty", steps=256, every=512, finished=False)  # the header, no rows
    _refused(capsys, f"run {empty} has no metrics (metrics.csv has no rows yet)", "compare", empty)
    offline = write_run(tmp_path / "offline", recipe=IQL, unit="updates", steps=400, every=40)
    _refused(capsys, f"cannot compare runs counted in environment steps ({runs[0]}) with runs counted in gradient updates ({offline})",
             "compare", runs[0], offline)  # fmt: skip
    _refused(capsys, "no runs of recipe 'ppo-cartpol' under", "compare", "--recipe", "ppo-cartpol", "--runs-dir", tmp_path / "runs")
    _refused(capsys, "(did you mean 'ppo-cartpole'?)", "compare", "--recipe", "ppo-cartpol", "--runs-dir", tmp_path / "runs")
    _refused(capsys, "give run directories or --recipe NAME (one of the two)", "compare")
    _refused(capsys, "give run directories or --recipe NAME (one of the two)", "compare", runs[0], "--recipe", "ppo-cartpole")
    _refused(capsys, "--out c.svg must name a .png file", "compare", runs[0], "--out", "c.svg")


def test_compare_imports_no_backend(tmp_path, runs):
    """Drawing reads files and imports matplotlib; torch, skrl and TorchRL stay out (a quick command)."""
    code = ("import sys; from rlplug.cli import main; code = main(sys.argv[1:]); "
            "print(sorted(m for m in ('torch', 'skrl', 'torchrl') if m in sys.modules)); sys.exit(code)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code, "compare", *map(str, runs), "--out", str(tmp_path / "c.png")],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
