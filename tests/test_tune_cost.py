"""``rlplug tune`` weighs what it finds: each trial's steps per second and wall time, a per-trial time budget,
the winner's gain against the seeds' noise and its cost per step against the recipe as written, and a bar
over the re-evaluation."""

from __future__ import annotations

import json

import pytest

from rlplug.cli import main

pytest.importorskip("optuna")

TINY = ["--steps", "256", "--seeds", "1", "--set", "hidden_sizes=[8]", "--set", "rollout_steps=16"]


def trials_of(tmp_path, study="ppo-cartpole-skrl"):
    import optuna

    return optuna.load_study(study_name=study, storage=f"sqlite:///{tmp_path / 'rlplug-tune.db'}").get_trials(deepcopy=False)


def test_gain_inside_or_outside_the_seeds_noise_and_a_costly_winner_are_said():
    from rlplug.tuning.export import Reevaluation, speed_line

    ref = "ppo-cartpole@1"
    noisy = Reevaluation(1, [10, 11, 12], tuned=[480.0, 200.0, 500.0], original=[450.0, 300.0, 470.0])
    assert noisy.gain_line(ref).startswith("gain over ppo-cartpole@1 as written: -13.33 (95 % CI of the paired "
                                           "difference over 3 fresh seeds: -100 to +30)")  # fmt: skip
    assert noisy.gain_line(ref).endswith(": inside the seeds' noise, not shown to be better")
    clear = Reevaluation(1, [10, 11, 12], tuned=[500.0, 490.0, 495.0], original=[300.0, 310.0, 280.0])
    assert clear.gain_line(ref).endswith(": outside the seeds' noise")
    assert "on one fresh seed, too few" in Reevaluation(1, [10], [500.0], [300.0]).gain_line(ref)
    assert Reevaluation(1, [10], [500.0]).gain_line(ref) is None  # the recipe as written was not trained again
    assert speed_line(49.0, 1000.0, ref, "re-evaluation") == (
        "speed (re-evaluation): tuned 49 steps/s against 1,000 for ppo-cartpole@1 as written: the tuned recipe "
        "costs 20.4x the time per step")
    assert speed_line(900.0, 1000.0, ref, "re-evaluation").endswith("against 1,000 for ppo-cartpole@1 as written")


def test_tune_records_each_trials_cost_shows_the_reevaluation_and_judges_the_winner(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["tune", "ppo-cartpole", "--trials", "2", *TINY, "--eval-seeds", "2", "--report", "r.md"]) == 0
    captured = capsys.readouterr()
    assert "re-evaluating:" in captured.err and "step" in captured.err  # the bar over its training steps
    trials = trials_of(tmp_path)
    for trial in trials:
        assert trial.user_attrs["wall_seconds"] > 0 and trial.user_attrs["steps_per_second"] > 0
    out = captured.out
    assert "gain over ppo-cartpole@1 as written: " in out and "over 2 fresh seeds: " in out and "the seeds' noise" in out
    assert "speed (re-evaluation): tuned " in out and " steps/s against " in out
    report = (tmp_path / "r.md").read_text()
    assert "| trial | state | value | seconds | steps/s | outcome |" in report and "| steps/s | " in report
    assert "gain over ppo-cartpole@1 as written" in (tmp_path / "ppo-cartpole-tuned.toml").read_text()
    # exporting again reads the re-evaluation back (nothing trains) and says the same in --json
    assert main(["tune", "ppo-cartpole", "--export", "--eval-seeds", "2", "--json", "--out", "again.toml"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["reevaluation"]["tuned_steps_per_second"] > 0 and again["reevaluation"]["original_steps_per_second"] > 0
    assert any(line.startswith("gain over") for line in again["verdicts"])


def test_max_seconds_per_trial_prunes_a_trial_over_its_budget(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["tune", "ppo-cartpole", "--trials", "1", *TINY, "--max-seconds-per-trial", "0.001", "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == (
        "rlplug: error: study 'ppo-cartpole-skrl' has no complete trial yet; run more trials first")
    (trial,) = trials_of(tmp_path)
    assert trial.state.name == "PRUNED" and trial.user_attrs["outcome"].startswith("over --max-seconds-per-trial 0.001: ")
    assert trial.user_attrs["wall_seconds"] > 0
    assert main(["tune", "ppo-cartpole", "--trials", "1", *TINY, "--max-seconds-per-trial", "0"]) == 2
    assert capsys.readouterr().err.strip() == "rlplug: error: --max-seconds-per-trial = 0 must be a number of seconds > 0"
