"""Refusals in the order a user can act on (issue 51): what the algorithm cannot take before its budget rules,
and output paths before anything trains."""

from __future__ import annotations

from conftest import cli_in_process as _cli, refused_in_process as _refused


def test_an_action_space_the_algorithm_cannot_take_is_said_before_a_budget_rule(capsys):
    line = _refused(capsys, "dqn on skrl cannot handle the continuous action space of 'Pendulum-v1'",
                    "train", "dqn-cartpole", "--set", "env=Pendulum-v1", "--steps", "512", "--no-write")  # fmt: skip
    assert "learning_starts" not in line
    _refused(capsys, "dqn is a single-agent algorithm but 'mpe:simple_spread' is a multi-agent environment",
             "train", "dqn-cartpole", "--set", "env=mpe:simple_spread", "--steps", "512", "--no-write")  # fmt: skip
    # on an env it can take, the budget rule is still the refusal
    _refused(capsys, "learning_starts = 1000, steps = 512 break the rule learning_starts < steps",
             "train", "dqn-cartpole", "--steps", "512", "--no-write")  # fmt: skip


def test_bench_refuses_a_runs_dir_that_cannot_be_made_before_anything_trains(capsys, tmp_path):
    taken = tmp_path / "notes.txt"
    taken.write_text("mine\n")
    for runs_dir, expected in ((taken, f"bench --runs-dir: {taken} is a file (5 bytes), not a directory"),
                               (taken / "runs", f"bench --runs-dir: {taken} is a file (5 bytes), not a directory, so {taken / 'runs'} cannot be made")):  # fmt: skip
        code, _, err = _cli(capsys, "bench", "ppo-cartpole", "--backend", "skrl", "--steps", "64", "--runs-dir", runs_dir)
        assert code == 2 and err.strip().splitlines() == [f"rlplug: error: {expected}; choose another --runs-dir"], err
    assert taken.read_text() == "mine\n"
