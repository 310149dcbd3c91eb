"""``rlplug bench --seeds / --jobs / --tier``: the seed aggregation (rlplug.results.seeded), the options' refusals, the
recipe fields ``tier`` and ``reference``, and one small end-to-end run over two seeds in two processes."""

from __future__ import annotations

import importlib.util
import json

import pytest

from conftest import run_cli
from rlplug.errors import RecipeError
from rlplug.results.report import COLUMNS, _row
from rlplug.results.seeded import aggregate, as_seeded, bootstrap_ci, parse_seeds, reference_text, seeds_pass


def run(seed: int, value: float, target: float = 100.0, wall: float = 10.0) -> dict:
    """A run's summary as ``rlplug train --json`` prints it (the fields the bench reads)."""
    return {"recipe": "x@1", "algorithm": "ppo", "backend": "skrl", "env": "E-v0", "seed": seed, "steps": 1000,
            "step_unit": "env_steps", "wall_seconds": wall, "steps_per_second": 1000 / wall, "eval_episodes": 10,
            "eval_return_mean": value, "eval_return_std": 1.0, "target": target, "target_metric": "return",
            "passed": value >= target}


# ---- the pass rule and the figures ---------------------------------------------------------------------


@pytest.mark.parametrize("values,passed", [
    ([120, 110, 105], True),    # every seed above
    ([150, 130, 90], True),     # mean above, one seed misses
    ([150, 90, 80], False),     # mean 106.7 above, but two seeds miss
    ([104, 99, 96], False),     # mean below
    ([100], True),              # one seed on the target: passes (>=)
    ([99.9], False),
])  # fmt: skip
def test_a_row_passes_on_its_mean_with_at_most_one_seed_below(values, passed):
    row = aggregate([run(i, v) for i, v in enumerate(values)], recipe="x@1", backend="skrl", seeds=list(range(len(values))))
    assert row["passed"] is passed
    assert row["misses"] == sum(v < 100 for v in values)
    assert seeds_pass(row["mean"], 100.0, row["misses"]) is passed


def test_row_figures_mean_std_min_ci_and_wall_per_seed():
    row = aggregate([run(0, 150, wall=10), run(1, 130, wall=20), run(2, 90, wall=30)], recipe="x@1", backend="skrl",
                    seeds=[0, 1, 2], tier="quick", reference={"value": 120.0, "source": "somewhere"})  # fmt: skip
    assert row["seeds"] == [0, 1, 2] and row["metric_values"] == [150, 130, 90]
    assert row["mean"] == pytest.approx(123.33, abs=0.01) and row["std"] == pytest.approx(30.55, abs=0.01)  # n - 1
    assert (row["min"], row["max"]) == (90, 150)
    low, high = row["ci95"]
    assert 90 <= low < row["mean"] < high <= 150
    assert row["wall_seconds_per_seed"] == [10, 20, 30] and row["wall_seconds"] == 20.0 and row["steps"] == 1000
    assert row["tier"] == "quick" and row["reference"] == {"value": 120.0, "source": "somewhere"}
    assert [r["seed"] for r in row["runs"]] == [0, 1, 2]


def test_bootstrap_interval_is_deterministic_and_degenerate_for_one_value():
    values = [3.0, 7.5, 4.2, 9.9, 5.1]
    assert bootstrap_ci(values) == bootstrap_ci(values)
    assert bootstrap_ci(values) != bootstrap_ci(values, seed=1)  # seeded, not fixed by accident
    low, high = bootstrap_ci(values)
    assert min(values) < low < sum(values) / len(values) < high < max(values)
    assert bootstrap_ci([4.0]) == (4.0, 4.0)
    assert bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)


def test_a_seed_that_crashed_fails_the_row_and_is_named():
    row = aggregate([run(0, 150), {"seed": 1, "error": "exit code 1: rlplug: error: boom"}, run(2, 140)],
                    recipe="x@1", backend="skrl", seeds=[0, 1, 2])  # fmt: skip
    assert row["passed"] is False and row["errors"] == [{"seed": 1, "error": "exit code 1: rlplug: error: boom"}]
    assert row["mean"] == 145.0 and row["misses"] == 1  # the seeds that finished, shown; the row fails all the same
    assert _row(row)[8] == "145.0 ± 7.1 (min 140.0; 1 failed)"
    nothing = aggregate([{"seed": 0, "error": "exit code 1"}], recipe="x@1", backend="skrl", seeds=[0], target=100.0)
    assert nothing["passed"] is False and nothing["mean"] is None and _row(nothing)[8] == "not measured"


def test_normalised_score_rows_are_checked_on_the_score_and_the_dataset_mean():
    def offline(seed: int, score: float, ret: float) -> dict:
        summary = run(seed, ret, target=70.0) | {"target_metric": "normalised_score", "normalised_score": score,
                                                   "dataset_return_mean": -600.0, "beat_dataset": True}  # fmt: skip
        summary["passed"] = score >= 70 and ret > -600
        return summary

    row = aggregate([offline(0, 90, -200), offline(1, 80, -300), offline(2, 60, -500)], recipe="x@1", backend="skrl", seeds=[0, 1, 2])
    assert row["metric_values"] == [90, 80, 60] and row["mean"] == pytest.approx(76.67, abs=0.01) and row["passed"]
    assert _row(row)[10] == "score ≥ 70, > data -600"


def test_earlier_one_seed_rows_render_in_the_seeded_table():
    old = run(42, 477.4, target=450.0, wall=90.4) | {"updates_per_second": 270.0}  # a BENCHMARKS.json row before seeds
    cells = _row(old)
    assert len(cells) == len(COLUMNS)
    assert cells[:6] == ["x@1", "skrl", "-", "42", "1,000", "90.4"]
    assert cells[8] == "477.4 (1 seed; episodes ± 1.0)" and cells[9] == "-" and cells[-1] == "yes"
    assert as_seeded(as_seeded(old)) == as_seeded(old)


def test_reference_text():
    assert reference_text({"value": 242.1, "std": 31.8, "steps": 1_000_000, "source": "RL Zoo"}) == "242.1 ± 31.8 at 1M (RL Zoo)"
    assert reference_text({"value": 3927.0, "std": 996.0, "steps": 307_000, "seeds": 10, "source": "Tianshou"}) == \
        "3927 ± 996 at 307k, 10 seeds (Tianshou)"
    assert reference_text({"source": "MinAtar"}) == "MinAtar" and reference_text(None) == "-"


# ---- options --------------------------------------------------------------------------------------------


def test_seeds_option():
    assert parse_seeds("3") == [0, 1, 2]
    assert parse_seeds("0,1,2") == [0, 1, 2] and parse_seeds("7,3") == [7, 3] and parse_seeds("5,") == [5]
    for text, words in (("0,0", "seed 0 is given twice"), ("0", "for seed 0 alone write --seeds 0,"), ("", "--seeds needs"),
                        ("a,b", "'a' is not a whole number"), ("-2", "at least 1"), ("1,-1", "--seeds"),
                        ("1001", "[1, 1000]"), ("1.5", "not a number of seeds")):  # fmt: skip
        with pytest.raises(RecipeError, match="^--seeds") as caught:
            parse_seeds(text)
        assert words in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("argv,words", [
    (["--seeds", "0,0"], "--seeds 0,0: seed 0 is given twice"),
    (["--jobs", "0"], "--jobs 0: must be in [1, 1024]"),
    (["--jobs", "two"], "argument --jobs: invalid int value: 'two'"),
    (["--tier", "quik"], "argument --tier: invalid choice 'quik' (did you mean 'quick'?)"),
    (["--seed", "1", "--seeds", "2"], "give --seed S (one seed) or --seeds"),
    (["--tier", "full"], "bench --tier full: none of the recipes asked for is of tier 'full'"),
    (["--backend", "defualt"], "bench --backend: no backend 'defualt' (did you mean 'default'?); known: default, skrl, torchrl"),
    (["--backend", "xyz"], "bench --backend: no backend 'xyz'; known: default, skrl, torchrl"),
])  # fmt: skip
def test_bench_refuses_bad_options_in_one_line(argv, words, capsys):
    from rlplug.cli import main

    try:
        code = main(["bench", "ppo-cartpole", *argv])
    except SystemExit as exit_:  # argparse's own refusals
        code = exit_.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and words in err[0], err


def test_tier_and_reference_are_validated_recipe_fields(tmp_path):
    from rlplug.pipeline.session import Session

    session = Session()
    assert session.resolve("ppo-cartpole").tier == "quick"
    recipe = session.resolve("ppo-lunarlander")
    assert recipe.reference["source"].startswith("RL Baselines3 Zoo") and recipe.to_table()["reference"]["value"] == 242.1
    assert session.resolve("ppo-cartpole", ['reference="a paper"']).reference == {"source": "a paper"}
    for override, words in (('tier="quik"', "did you mean 'quick'"), ("reference={value=1}", "needs a 'source'"),
                            ('reference={vaule=1, source="x"}', "did you mean 'value'"), ("reference=3", "must be table")):  # fmt: skip
        with pytest.raises(RecipeError, match="'tier'|'reference'") as caught:
            session.resolve("ppo-cartpole", [override])
        assert words in str(caught.value)
    custom = tmp_path / "mine.toml"
    custom.write_text('[recipes.mine]\nextends = "ppo-cartpole"\nsteps = 10\n')
    assert Session(recipe_files=[str(custom)]).resolve("mine").tier == "quick"  # inherited
    custom.write_text('[recipes.mine]\nalgorithm = "ppo"\nenv = "CartPole-v1"\nbackend = "skrl"\nsteps = 10\ntarget = 1.0\n')
    assert Session(recipe_files=[str(custom)]).resolve("mine").tier == "full"  # a recipe that does not say


def test_backend_default_plans_each_recipe_on_its_own_backend(tmp_path):
    import argparse

    from rlplug.cli.bench import plan_rows
    from rlplug.pipeline.session import Session

    custom = tmp_path / "mine.toml"
    custom.write_text('[recipes.mine]\nextends = "ppo-cartpole"\nbackend = "torchrl"\n')
    session = Session(recipe_files=[str(custom)])
    for backend, planned in (("default", [("ppo-cartpole@1", "skrl"), ("mine@1", "torchrl")]),
                             ("default,torchrl", [("ppo-cartpole@1", "skrl"), ("ppo-cartpole@1", "torchrl"), ("mine@1", "torchrl")]),
                             (None, [("ppo-cartpole@1", "skrl"), ("ppo-cartpole@1", "torchrl"), ("mine@1", "skrl"), ("mine@1", "torchrl")])):  # fmt: skip
        args = argparse.Namespace(names=["ppo-cartpole", "mine"], all=False, tier=None, backend=backend, json=True, runs_dir=None)
        assert [(row.ref, row.backend) for row in plan_rows(session, args, [], [0])] == planned


def test_every_first_party_recipe_has_a_tier_and_every_new_one_a_reference():
    from rlplug.pipeline.session import Session

    session = Session()
    new = ("ppo-lunarlander", "dqn-lunarlander", "ppo-halfcheetah", "sac-halfcheetah", "td3-halfcheetah",
           "ppo-minatar-breakout", "dqn-minatar-breakout", "iql-halfcheetah-medium", "cql-halfcheetah-medium", "ddpg-pendulum")
    raw = {n: session.book.raw(n)[0] for n in session.book.names() if session.book.raw(n)[1].source.endswith("registry.toml")}
    assert set(new) <= set(raw)
    assert all("tier" in table for table in raw.values()), [n for n, t in raw.items() if "tier" not in t]
    assert all(raw[n].get("reference", {}).get("source") for n in new)


# ---- end to end -----------------------------------------------------------------------------------------


@pytest.mark.skipif(importlib.util.find_spec("skrl") is None, reason="skrl missing")
def test_bench_trains_each_row_once_per_seed_in_two_processes(tmp_path):
    fast = ["--set", "num_envs=2", "--set", "rollout_steps=64", "--set", "epochs=1", "--set", "eval_episodes=2"]
    report = tmp_path / "seeded.md"
    result = run_cli("bench", "ppo-cartpole", "--backend", "skrl", "--steps", "128", "--seeds", "2", "--jobs", "2", *fast,
                     "--json", "--report", str(report))  # fmt: skip
    assert result.returncode == 1, result.stderr  # 128 steps do not reach 475
    (row,) = json.loads(result.stdout)
    assert row["recipe"] == "ppo-cartpole@1" and row["backend"] == "skrl" and row["tier"] == "quick"
    assert row["seeds"] == [0, 1] and [r["seed"] for r in row["runs"]] == [0, 1] and len(row["wall_seconds_per_seed"]) == 2
    assert row["steps"] == 128 and all(r["steps"] == 128 for r in row["runs"])
    assert row["metric_values"] == [r["eval_return_mean"] for r in row["runs"]]
    assert row["min"] == min(row["metric_values"]) and row["ci95"][0] <= row["mean"] <= row["ci95"][1]
    assert row["reference"]["value"] == 500.0 and row["passed"] is False and row["misses"] == 2
    assert json.loads(report.with_suffix(".json").read_text())["rows"] == [row]
    assert "| ppo-cartpole@1 | skrl | quick | 0,1 (2 missed) | 128 |" in report.read_text()
    assert "torch threads 1 in each of 2 training processes at once" in report.read_text()


def test_a_baseline_row_is_neither_a_pass_nor_a_failure(capsys):
    """issue 51: a recipe with ``baseline_of`` (built to miss) is shown as a baseline and does not fail the bench."""
    import argparse

    from rlplug.cli.bench import print_rows
    from rlplug.results.seeded import aggregate

    def run(seed, value, target=475.0):
        return {"seed": seed, "eval_return_mean": value, "eval_return_std": 1.0, "passed": value >= target, "target": target,
                "steps": 100, "wall_seconds": 1.0, "algorithm": "ppo", "env": "CartPole-v1"}

    real = aggregate([run(0, 500.0)], recipe="ppo-lstm-cartpole-novel@4", backend="skrl", seeds=[0])
    baseline = aggregate([run(0, 48.0)], recipe="ppo-cartpole-novel@4", backend="skrl", seeds=[0], baseline_of="ppo-lstm-cartpole-novel")
    assert baseline["baseline_of"] == "ppo-lstm-cartpole-novel" and not baseline["passed"]
    args = argparse.Namespace(json=False)
    assert print_rows(args, [real, baseline]) == 0
    out = capsys.readouterr().out
    assert "baseline of ppo-lstm-cartpole-novel" in out and "FAIL" not in out
    assert out.rstrip().endswith("1 of 1 row pass (1 baseline row beside their recipes, not counted)")
    failing = aggregate([run(0, 100.0)], recipe="ppo-lstm-cartpole-novel@4", backend="skrl", seeds=[0])
    assert print_rows(args, [failing, baseline]) == 1  # a real recipe's miss still fails it
