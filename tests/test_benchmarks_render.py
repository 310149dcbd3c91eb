"""benchmarks/render.py: BENCHMARKS.md from stored section results (pure logic, no timing)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

RENDER = Path(__file__).resolve().parents[1] / "benchmarks" / "render.py"


@pytest.fixture(scope="module")
def render():
    spec = importlib.util.spec_from_file_location("benchmarks_render", RENDER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(recipe: str, backend: str, steps: int, wall: float) -> dict:
    return {"recipe": recipe, "backend": backend, "steps": steps, "wall_seconds": wall}


def envelope(section: str, data: object) -> dict:
    return {"section": section, "command": f"python {section}.py", "date": "2026-11-30T21:00:00+00:00", "data": data}


def cells(r: dict) -> list[str]:
    return [r["recipe"], r["backend"], str(r["steps"]), f"{r['wall_seconds']:.1f}"]


COLUMNS = ("recipe", "backend", "steps", "wall s")


def test_backend_ratio_is_per_unit_of_work_and_skips_single_backend_recipes(render):
    rows = [row("a", "skrl", 1000, 10.0), row("a", "torchrl", 1024, 20.48), row("b", "skrl", 500, 5.0)]
    assert render.backend_ratios(rows) == [{"recipe": "a", "skrl_wall_s": 10.0, "torchrl_wall_s": 20.48, "ratio": 2.0}]


def test_interleaved_backend_ratio_with_its_profile(render):
    run = lambda ms: {"steps": 100, "wall_s": ms / 10, "cpu_s": ms / 10, "ms_per_step": ms}  # noqa: E731
    profile = {"skrl": {"profile_ms_per_step": 2.0, "shares": {"autograd backward": 0.5, "skrl agents, models": 0.3}},
               "torchrl": {"profile_ms_per_step": 5.0, "shares": {"tensordict": 0.25, "torchrl collector": 0.2}}}
    data = {"goal": 1.3, "repeats": 2, "recipes": {"td3-pendulum": {
        "warm": 10, "steps": 3000, "runs": {"skrl": [run(2.0), run(2.0)], "torchrl": [run(3.0), run(3.0)]},
        "wall": {"ratios": [1.5, 1.5], "mean": 1.5, "min": 1.5, "max": 1.5},
        "cpu": {"ratios": [1.2, 1.4], "mean": 1.3, "min": 1.2, "max": 1.4}, "profile": profile}}}
    results = {"backend_ratio": envelope("backend_ratio", data),
               "bench": envelope("bench", {"machine": {}, "rows": [row("a", "skrl", 1000, 10.0), row("a", "torchrl", 1000, 12.0)]})}
    text = render.render(results, cells, COLUMNS)
    assert "| td3-pendulum | 3,000 | 2.000 | 3.000 | 1.500 (1.500–1.500) | 1.300 (1.200–1.400) | yes |" in text
    assert "| td3-pendulum | 2.00 | 5.00 | tensordict 25 %, torchrl collector 20 % | autograd backward 50 %, skrl agents, models 30 % |" in text
    assert "| a | 10.0 | 12.0 | 1.20 |\n" in text  # the bench rows' ratios stay below the interleaved ones, without a verdict


def test_missing_sections_say_how_to_produce_them(render):
    text = render.render({}, cells, COLUMNS)
    for section in render.STORED:
        assert f"python benchmarks/all.py --only {section}" in text
    assert text.count("## ") == len(render.SECTIONS)


def test_page_shows_each_figure_with_spread_and_goal(render):
    results = {
        "bench": envelope("bench", {"machine": {}, "rows": [row("a", "skrl", 1000, 10.0), row("a", "torchrl", 1000, 12.0)]}),
        "overhead": envelope("overhead", {"ppo": {"skrl": {
            "steps": 1000, "repeats": 2,
            "wall": {"plain_steps_per_s": [100, 100], "rlplug_steps_per_s": [95, 99], "ratios": [0.95, 0.99], "ratio_mean": 0.97},
            "cpu": {"plain_steps_per_s": [100, 100], "rlplug_steps_per_s": [90, 92], "ratios": [0.90, 0.92], "ratio_mean": 0.91},
        }}}),
        "startup": envelope("startup", {"rlplug list": {"median": 0.25, "min": 0.2, "max": 0.4},
                                        "  of which beyond the backend import (skrl)": {"median": 1.7, "min": 1.6, "max": 1.8}}),
        "floor": envelope("floor", {"sac": {"skrl": {"plain": [100, 100], "rlplug": [80, 90], "ratio": [0.8, 0.9]},
                                            "torchrl-hand-written": {"plain": [100], "rlplug": [50], "ratio": [0.5]}}}),
    }
    text = render.render(results, cells, COLUMNS)
    assert "| ppo | skrl | 1,000 | 2 | 100 | 97 | 0.970 (0.950–0.990) | 0.910 (0.900–0.920) | yes |" in text
    assert "| rlplug list | 0.250 | 0.200–0.400 | ≤ 0.3 | yes |" in text
    assert "| of which beyond the backend import (skrl) | 1.700 | 1.600–1.800 | ≤ 1.5 | **no** |" in text
    assert "| a | 10.0 | 12.0 | 1.20 | yes |" in text
    assert "| sac | skrl | 100 | 85 | 0.850 (0.800–0.900) | - | yes |" in text
    assert "| sac | torchrl-hand-written | 100 | 50 | 0.500 | - | - |" in text
    assert "Produced by `python overhead.py` on 2026-11-30T21:00:00+00:00." in text


def test_time_to_target_reports_unreached_runs_and_the_ratio(render):
    reached = {"reached": True, "steps": 8192, "wall_s": 3.0, "cpu_s": 3.0, "curve": []}
    sb3 = {"reached": True, "steps": 16384, "wall_s": 6.0, "cpu_s": 6.0, "curve": []}
    data = {"ppo-cartpole": {
        "target": 475.0, "repeats": 2, "sb3": [sb3, sb3], "rlplug": [reached, {"reached": False, "curve": []}], "goal": 0.7,
        "wall": {"ratios": [0.5], "ratio_mean": 0.5, "ratio_min": 0.5, "ratio_max": 0.5, "met": True},
        "cpu": {"ratios": [0.5], "ratio_mean": 0.5, "ratio_min": 0.5, "ratio_max": 0.5, "met": True},
    }}
    text = "\n".join(render.render_time_to_target(envelope("time_to_target", data)))
    assert "| ppo-cartpole | 475 | 2 repeats | 6.0 s @ 16,384, 6.0 s @ 16,384 | 3.0 s @ 8,192, not reached | 0.500 | 0.500 | - | yes |" in text
    seeded = dict(data["ppo-cartpole"], seeds=[42, 0], overrides=["hidden_sizes=[64,64]"], rlplug=[reached, reached],
                  wall={"ratios": [0.5, 0.5], "ratio_mean": 0.5, "ratio_min": 0.5, "ratio_max": 0.5, "met": True, "ratio_of_means": 0.5})
    text = "\n".join(render.render_time_to_target(envelope("time_to_target", {"ppo-cartpole": seeded})))
    assert "| ppo-cartpole (hidden_sizes=[64,64]) | 475 | 42, 0 | " in text and "| 0.500 (0.500–0.500) | 0.500 | 0.500 | yes |" in text


def test_results_round_trip_through_the_directory(render, tmp_path):
    (tmp_path / "startup.json").write_text(json.dumps(envelope("startup", {})))
    (tmp_path / "unrelated.json").write_text("{}")
    assert list(render.load_results(tmp_path)) == ["startup"]
    combined = render.combined_json({"bench": envelope("bench", {"machine": {"cpu_count": 2}, "rows": [row("a", "skrl", 1, 1.0)]})})
    assert combined["rows"] == [row("a", "skrl", 1, 1.0)] and combined["machine"] == {"cpu_count": 2}


def test_seeded_and_earlier_bench_rows_render_together(render):
    """The bench section takes rows `rlplug bench --seeds` writes (per-seed runs inside) next to rows of an earlier,
    one-seed table; the backend ratio reads a seeded row's mean wall seconds per seed."""
    from rlplug.results.report import COLUMNS as BENCH_COLUMNS, _row
    from rlplug.results.seeded import aggregate

    def summary(backend: str, seed: int, value: float, wall: float) -> dict:
        return {"recipe": "a@1", "algorithm": "ppo", "backend": backend, "env": "E-v0", "seed": seed, "steps": 1000,
                "step_unit": "env_steps", "wall_seconds": wall, "steps_per_second": 1000 / wall, "eval_return_mean": value,
                "eval_return_std": 2.0, "target": 100.0, "target_metric": "return", "passed": value >= 100.0}  # fmt: skip

    seeded = aggregate([summary("skrl", 0, 120.0, 10.0), summary("skrl", 1, 130.0, 14.0)], recipe="a@1", backend="skrl",
                       seeds=[0, 1], tier="quick", reference={"value": 150.0, "steps": 1000, "source": "paper"})  # fmt: skip
    earlier = summary("torchrl", 42, 90.0, 24.0)
    text = render.render({"bench": envelope("bench", {"machine": {}, "rows": [seeded, earlier]})}, _row, BENCH_COLUMNS)
    assert "| a@1 | skrl | quick | 0,1 | 1,000 | 12.0 (10–14) | 86 | - | 125.0 ± 7.1 (min 120.0) | [120.0, 130.0] | ≥ 100 | 150 at 1k (paper) | yes |" in text
    assert "| a@1 | torchrl | - | 42 | 1,000 | 24.0 | 42 | - | 90.0 (1 seed; episodes ± 2.0) | - | ≥ 100 | - | **no** |" in text
    assert "| a@1 | 12.0 | 24.0 | 2.00 | **no** |" in text and render.BENCH_NOTE in text


def test_compile_and_vector_mode_sections(render):
    compiled = {"sac/torchrl": {"eager_cpu": [60.0, 62.0], "compiled_cpu": [63.0, 65.1], "ratio_cpu": [1.05, 1.05],
                                "ratio_wall": [0.98, 0.98], "compile_seconds_cold": 262.3, "compile_seconds_warm": 78.7,
                                "break_even_updates": 328132, "budget_updates": 19000, "pays_back": False}}
    text = "\n".join(render.render_compile(envelope("compile", compiled)))
    assert "| sac/torchrl | 61 | 64 | 1.050 (1.050–1.050) | 0.980 (0.980–0.980) | 262 | 79 | 328,132 | 19,000 | no |" in text
    run = lambda rate: {"steps": 8192, "wall_s": 1.0, "cpu_s": 1.0, "steps_per_s": rate}  # noqa: E731
    rows = {"cpu_count": 2, "rows": [{"recipe": "ppo-pendulum", "env": "HalfCheetah-v5", "backend": "skrl", "num_envs": 4,
                                      "steps": 8192, "sync": [run(1000.0)], "async": [run(1500.0)], "async_vs_sync": [1.5]}]}
    text = "\n".join(render.render_vector_modes(envelope("vector_modes", rows)))
    assert "| ppo-pendulum | HalfCheetah-v5 | skrl | 4 | 8,192 | 1000 | 1500 | 1.500 |" in text and "2-core" in text


def test_wide_envs_section_judges_the_goal_at_its_width(render):
    def run(cpu_rate):
        return {"steps": 4096, "wall_s": 1.0, "cpu_s": 4096 / cpu_rate, "steps_per_s": 2000.0, "steps_per_cpu_s": cpu_rate}

    rows = [{"num_envs": n, "steps": 4096, "runs": {"plain": [run(20000.0)], "skrl": [run(18000.0)], "torchrl": [run(14000.0)]},
             "ratios": {"skrl": [0.9], "torchrl": [0.7]}} for n in (8, 256)]
    data = {"recipe": "ppo-cartpole", "overrides": ["normalize_values=false"], "rollout_steps": 16, "epochs": 4,
            "minibatches": 4, "iterations": 1, "rows": rows, "cpu_count": 2, "goal": {"num_envs": 256, "ratio": 0.8}}
    text = "\n".join(render.render_wide_envs(envelope("wide_envs", data)))
    assert "| 8 | 4,096 | 20,000 (2,000) | 18,000 (2,000) | 0.900 | 14,000 (2,000) | 0.700 |" in text
    assert "| 256 | 4,096 | 20,000 (2,000) | 18,000 (2,000) | 0.900 yes | 14,000 (2,000) | 0.700 **no** |" in text


# ---- the aggregate over recipes (benchmarks/aggregate.py) --------------------------------------------------


def load_benchmark_module(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", RENDER.parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def aggregate():
    return load_benchmark_module("aggregate")


@pytest.fixture(scope="module")
def curves():
    return load_benchmark_module("curves")


def test_iqm_is_the_mean_of_the_middle_half(aggregate):
    assert aggregate.iqm([8, 1, 7, 2, 6, 3, 5, 4]) == 4.5  # 1, 2 and 7, 8 cut: mean of 3..6
    assert aggregate.iqm([0, 1, 2, 3, 1000]) == 2.0  # floor(5 / 4) = 1 cut from each end: the outlier goes
    assert aggregate.iqm([10, 1, 2, 3]) == 2.5
    assert aggregate.iqm([7.0]) == 7.0
    assert aggregate.iqm([[1, 2, 3, 100], [4, 4, 4, 4]], axis=1).tolist() == [2.5, 4.0]  # per row, as the bootstrap calls it


def test_iqm_interval_is_seeded_and_holds_the_iqm(aggregate):
    scores = [12.0, 40.0, 55.0, 61.0, 70.0, 88.0, 95.0, 101.0, 130.0]
    low, high = aggregate.bootstrap_ci(scores)
    assert low < aggregate.iqm(scores) < high and (low, high) == aggregate.bootstrap_ci(scores)
    fallback = aggregate._numpy_bootstrap_ci(np.asarray(scores), 0.95, 10_000, 0)  # without scipy: the same percentile bootstrap
    assert fallback == pytest.approx((low, high), abs=0.05 * (high - low))
    assert aggregate.bootstrap_ci([3.0, 3.0, 3.0]) == (3.0, 3.0) and aggregate.bootstrap_ci([5.0]) == (5.0, 5.0)


def seeded_row(recipe: str, backend: str, mean: float | None, env: str = "E-v0", reference: dict | None = None,
               metric: str = "return") -> dict:
    return {"recipe": recipe, "backend": backend, "env": env, "mean": mean, "target_metric": metric, "reference": reference,
            "runs": []}  # fmt: skip


RANDOM = {"command": "python benchmarks/random_returns.py", "date": "2026-12-01T00:00:00+00:00",
          "data": {"E-v0": {"mean": -100.0, "std": 5.0, "episodes": 20}, "F-v0": {"mean": 0.0, "std": 0.0, "episodes": 20}}}


def test_rows_are_normalised_against_random_and_reference_and_the_rest_is_counted(aggregate):
    rows = [
        seeded_row("a@1", "skrl", 50.0, reference={"value": 200.0, "source": "paper"}),  # 100 × 150 / 300 = 50
        seeded_row("a@1", "torchrl", 200.0, reference={"value": 200.0}),  # the reference itself: 100
        seeded_row("b@1", "skrl", 30.0, env="F-v0"),  # no reference of its own: the registry's, 60 -> 50
        seeded_row("c@1", "skrl", 42.0, env="-", metric="normalised_score"),  # offline: already normalised
        seeded_row("d@1", "skrl", 10.0),  # no reference anywhere
        seeded_row("e@1", "skrl", 10.0, env="G-v0", reference={"value": 20.0}),  # no random return for G-v0
        seeded_row("f@1", "skrl", None, reference={"value": 20.0}),  # every seed failed
        # a one-seed row of an earlier table, stored without a reference: its return, against the registry's reference
        {"recipe": "a@1", "backend": "jax", "env": "E-v0", "eval_return_mean": -100.0, "target_metric": "return"},
    ]
    summary = aggregate.aggregate_rows(rows, RANDOM["data"], {"b@1": {"value": 60.0}, "a@1": {"value": 200.0}})
    assert [(s["row"], s["score"]) for s in summary["scores"]] == [
        ("a@1 on skrl", 50.0), ("a@1 on torchrl", 100.0), ("b@1 on skrl", 50.0), ("c@1 on skrl", 42.0), ("a@1 on jax", 0.0)]
    assert summary["skipped"] == {"no reference": ["d@1 on skrl"], "no random return": ["e@1 on skrl"], "no value": ["f@1 on skrl"]}
    assert summary["iqm"] == pytest.approx((42.0 + 50.0 + 50.0) / 3)  # 0 and 100 cut
    assert summary["ci95"][0] <= summary["iqm"] <= summary["ci95"][1]


def test_recipe_table_links_curves_and_ends_with_the_aggregate(render):
    from rlplug.results.report import COLUMNS as BENCH_COLUMNS, _row
    from rlplug.results.seeded import aggregate as seeded

    def run(seed: int, value: float) -> dict:
        return {"recipe": "a@1", "algorithm": "ppo", "backend": "skrl", "env": "E-v0", "seed": seed, "steps": 1000,
                "step_unit": "env_steps", "wall_seconds": 10.0, "steps_per_second": 100.0, "eval_return_mean": value,
                "eval_return_std": 1.0, "target": 100.0, "target_metric": "return", "passed": value >= 100.0,
                "run_dir": f"runs/a-{seed}"}  # fmt: skip

    a = seeded([run(0, 150.0), run(1, 50.0), run(2, 110.0)], recipe="a@1", backend="skrl", seeds=[0, 1, 2],
               reference={"value": 200.0, "std": 10.0, "source": "paper"})  # fmt: skip
    b = {**a, "recipe": "b@2", "reference": None}
    results = {"bench": envelope("bench", {"machine": {}, "rows": [a, b]})}
    text = render.render(results, _row, BENCH_COLUMNS, curves={"a": "docs/curves/a.png"}, random_returns=RANDOM)
    assert "| reference | pass | curve |" in text
    assert "| a@1 | skrl | - | 0,1,2 (1 missed) | 1,000 | 10.0 (10–10) | 100 | - | 103.3 ± 50.3 (min 50.0) |" in text
    assert "| [50.0, 150.0] | ≥ 100 | 200 ± 10 (paper) | yes | [a](docs/curves/a.png) |" in text  # mean passes, one seed missed
    assert "| ≥ 100 | - | yes | - |" in text  # b has no picture
    # a: 100 × (103.33 + 100) / 300 = 67.8; one row, so its own interval
    assert ("**Aggregate:** interquartile mean of the normalised scores **67.8** (95 % CI 67.8 – 67.8) over 1 row "
            "(recipe × backend). 1 of 2 rows left out: 1 no reference (b@2 on skrl).") in text
    assert "| a@1 | skrl | 103.3 | -100.0 | 200.0 | 67.8 |" in text
    assert "Random returns from `python benchmarks/random_returns.py` on 2026-12-01T00:00:00+00:00 (uniform random actions)." in text
    assert "| curve |" not in render.render(results, _row, BENCH_COLUMNS)  # no pictures, no column
    assert "run `python benchmarks/random_returns.py`" in render.render(results, _row, BENCH_COLUMNS)
    combined = render.combined_json(results, RANDOM)
    assert combined["aggregate"]["iqm"] == pytest.approx(67.78, abs=0.01) and combined["random_returns"] == RANDOM


# ---- learning curves (benchmarks/curves.py) -----------------------------------------------------------------


def write_run_dir(path: Path, backend: str, seed: int, target: float = 300.0) -> Path:
    """A run directory as ``rlplug train`` leaves it, by hand: recipe.json, metrics.csv (evaluations every 1,000
    steps), summary.json."""
    path.mkdir(parents=True)
    recipe = {"name": "ppo-x", "version": 1, "algorithm": "ppo", "env": "E-v0", "seed": seed, "steps": 4000,
              "target": target, "target_metric": "return", "hyperparameters": {"lr": 1e-3}}  # fmt: skip
    (path / "recipe.json").write_text(json.dumps({"backend": backend, "recipe": recipe}))
    lines = ["env_steps,wall_s,train/episode_return,eval/return"]
    lines += [f"{x},{x / 1000:.1f},{x / 10 + seed},{x / 12 + 5 * seed if x % 1000 == 0 else ''}" for x in range(500, 4001, 500)]
    (path / "metrics.csv").write_text("\n".join(lines) + "\n")
    (path / "summary.json").write_text(json.dumps({"recipe": "ppo-x@1", "backend": backend, "seed": seed, "steps": 4000,
                                                   "eval_return_mean": 4000 / 12 + 5 * seed, "passed": True}))  # fmt: skip
    return path


def test_curves_put_both_backends_of_a_recipe_on_one_picture(curves, tmp_path, monkeypatch):
    import rlplug.results.compare

    dirs = {(b, s): write_run_dir(tmp_path / "runs" / f"{b}-{s}", b, s) for b in ("skrl", "torchrl") for s in (0, 1)}
    bench = {"rows": [{"recipe": "ppo-x@1", "backend": b, "runs": [{"seed": s, "run_dir": f"runs/{b}-{s}"} for s in (0, 1)]}
                      for b in ("skrl", "torchrl")]  # relative, as recorded where the bench ran
             + [{"recipe": "old@1", "backend": "skrl", "runs": [{"seed": 0, "run_dir": None}]},  # no --runs-dir: no picture
                {"recipe": "gone@1", "backend": "skrl", "runs": [{"seed": 0, "run_dir": str(tmp_path / "moved")}]}]}
    assert curves.run_dirs_by_recipe(bench["rows"], [tmp_path]) == {
        "ppo-x": [dirs[k] for k in [("skrl", 0), ("skrl", 1), ("torchrl", 0), ("torchrl", 1)]], "gone": [tmp_path / "moved"]}

    drawn = []
    real_draw = rlplug.results.compare.draw
    def spy(groups, path, **options):
        drawn.append(([g.label for g in groups], options))
        return real_draw(groups, path, **options)

    monkeypatch.setattr(rlplug.results.compare, "draw", spy)
    written = curves.write_curves([bench], tmp_path / "docs" / "curves", [tmp_path])
    assert written == {"ppo-x": tmp_path / "docs" / "curves" / "ppo-x.png"}  # "gone" says why on stderr and draws nothing
    title = "ppo-x: skrl (2 seeds), torchrl (2 seeds)"
    assert drawn == [(["ppo-x (E-v0) on skrl", "ppo-x (E-v0) on torchrl"], {"title": title, "evaluation_band": True})]
    assert written["ppo-x"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and written["ppo-x"].stat().st_size > 10_000
    links = curves.existing_curves(bench["rows"], tmp_path / "docs" / "curves", tmp_path)
    assert links == {"ppo-x": "docs/curves/ppo-x.png"}


def test_backend_ratio_groups_profile_entries_by_library(monkeypatch):
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "backend_ratio.py"
    spec = importlib.util.spec_from_file_location("benchmarks_backend_ratio", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    site = "/venv/lib/python3.11/site-packages"
    cases = {
        ("~", "<method 'run_backward' of 'torch._C._EngineBase' objects>"): "autograd backward",
        ("~", "<built-in method torch._fused_adam_>"): "optimiser, target update",
        (f"{site}/torchrl/data/replay_buffers/replay_buffers.py", "extend"): "replay buffer / memory",
        (f"{site}/skrl/memories/torch/base.py", "sample_batch"): "replay buffer / memory",
        (f"{site}/tensordict/_td.py", "_set_item"): "tensordict",
        (f"{site}/torchrl/collectors/_single.py", "rollout"): "torchrl collector",
        (f"{site}/torchrl/envs/gym_like.py", "_step"): "torchrl env + transforms",
        (f"{site}/torchrl/objectives/sac.py", "forward"): "torchrl losses, modules",
        (f"{site}/gymnasium/envs/classic_control/pendulum.py", "step"): "simulator",
        (f"{site}/gymnasium/vector/sync_vector_env.py", "step"): "gymnasium wrappers, vector env",
        ("~", "<built-in method torch._C._nn.linear>"): "forward kernels (torch ops)",
        (f"{site}/torch/nn/modules/module.py", "_call_impl"): "torch python (nn.Module, distributions)",
        ("/work/core/rlplug/contract/trainer.py", "train"): "rlplug, plugin cells",
        ("~", "<built-in method builtins.isinstance>"): "python builtins (isinstance, getattr, dict)",
    }
    for (filename, name), expected in cases.items():
        assert module.category(filename, name) == expected, (filename, name)
    assert set(module.WORKLOADS) >= {"ppo-cartpole", "sac-pendulum", "cql-cartpole-medium"}


def test_merge_bench_joins_rows_and_replaces_remeasured_seeds(tmp_path, monkeypatch):
    from rlplug.results.seeded import aggregate

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from merge_bench import merge

    def run(seed, value):
        return {"recipe": "r@1", "backend": "skrl", "seed": seed, "steps": 100, "wall_seconds": 10.0, "eval_return_mean": value,
                "target": 5.0, "target_metric": "return", "passed": value >= 5.0}

    runs = [run(0, 6.0), run(1, 4.0), run(2, 8.0)]
    whole = aggregate(runs, recipe="r@1", backend="skrl", seeds=[0, 1, 2])
    for name, part, seeds in (("a", runs[:1], [0]), ("b", runs[1:], [1, 2]), ("d", [run(1, 9.0)], [1])):  # d: seed 1 re-measured
        row = aggregate(part, recipe="r@1", backend="skrl", seeds=seeds)
        (tmp_path / f"{name}.json").write_text(json.dumps({"command": name, "rows": [row]}))
    joined = merge([tmp_path / "a.json", tmp_path / "b.json"], combine_seeds=True)["rows"][0]
    assert {k: joined[k] for k in ("seeds", "mean", "std", "ci95", "misses", "passed")} == \
        {k: whole[k] for k in ("seeds", "mean", "std", "ci95", "misses", "passed")}
    assert merge([tmp_path / "a.json", tmp_path / "b.json"])["rows"][0]["seeds"] == [1, 2]  # without the flag: the later row
    remeasured = merge([tmp_path / "b.json", tmp_path / "d.json"], combine_seeds=True)["rows"][0]
    assert remeasured["seeds"] == [1, 2] and remeasured["metric_values"] == [9.0, 8.0]  # seed 1 replaced, seed 2 kept


def test_merging_a_merged_file_keeps_each_command_with_its_own_date(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from merge_bench import merge

    for name, date in (("a", "2026-12-01T10:00:00+00:00"), ("b", "2026-12-02T10:00:00+00:00")):
        (tmp_path / f"{name}.json").write_text(json.dumps({"command": f"rlplug bench {name}", "machine": {"date": date}, "rows": []}))
    (tmp_path / "ab.json").write_text(json.dumps(merge([tmp_path / "a.json", tmp_path / "b.json"])))
    assert merge([tmp_path / "ab.json"])["command"] == \
        "rlplug bench a (2026-12-01T10:00:00+00:00); rlplug bench b (2026-12-02T10:00:00+00:00)"  # not b's date plus a's
    (tmp_path / "old.json").write_text(json.dumps({"command": "rlplug bench a (2026-12-01T10:00:00+00:00) (2026-11-30T09:00:00+00:00)",
                                                  "machine": {"date": "2026-11-30T09:00:00+00:00"}, "rows": []}))
    assert merge([tmp_path / "old.json"])["command"] == "rlplug bench a (2026-12-01T10:00:00+00:00)"  # an earlier merge's doubled date


def test_a_section_merged_from_several_commands_lists_them_folded(render):
    one = render.provenance({"command": "python benchmarks/startup.py --json", "date": "D"})
    assert one == "Produced by `python benchmarks/startup.py --json` on D."
    merged = render.provenance({"command": "rlplug bench a --seeds 3 (D1); rlplug bench b [row a only; b elsewhere] (D2); "
                                          "RLPLUG_DATA_DIR=/d rlplug bench c (D3)", "date": "D1"})
    assert merged.startswith("Produced by 3 commands, each with its date.")
    assert "- `rlplug bench b [row a only; b elsewhere] (D2)`" in merged and "- `RLPLUG_DATA_DIR=/d rlplug bench c (D3)`" in merged
    assert "<details>" in merged and merged.endswith("</details>")


def test_baselines_are_shown_beside_their_recipes_and_not_counted_as_failures(render, aggregate):
    """``baseline_of`` (registry.toml, or the row's own) decides: the table's verdict says baseline, the pair sits side by
    side, the pass count counts real recipes only and the aggregate leaves the baselines out (issue 51)."""
    from rlplug.results.report import COLUMNS, _row

    def seeded(recipe, backend, values, passed):
        mean, std = float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else None
        return {**row(recipe, backend, 1000, 10.0), "env": "CartPole-v1", "target": 475.0, "seeds": list(range(len(values))),
                "mean": mean, "std": std, "min": min(values), "passed": passed, "metric_values": values, "runs": [],
                "reference": {"value": 500.0, "source": "zoo"}}

    rows = [seeded("ppo-lstm-cartpole-novel@2", "skrl", [500.0, 500.0, 490.0], True),
            seeded("ppo-cartpole-novel@2", "skrl", [49.1, 47.2, 49.3], False),  # stored before rows said baseline_of
            seeded("ppo-lstm-cartpole-novel@2", "torchrl", [480.0], True),  # no torchrl baseline row: no pair
            {**seeded("mine@1", "skrl", [10.0], False), "baseline_of": "ppo-cartpole"},  # a name nothing like its recipe's
            seeded("ppo-cartpole", "skrl", [500.0], True)]
    envelope = {"command": "rlplug bench", "date": "D", "data": {"machine": {"processor": "x86_64"}, "rows": rows}}
    lines = render.render_bench(envelope, _row, COLUMNS, random_returns=None, baselines={"ppo-cartpole-novel": "ppo-lstm-cartpole-novel"})
    assert "| ppo-lstm-cartpole-novel / ppo-cartpole-novel | skrl | CartPole-v1 | ≥ 475 | 496.7 ± 5.8 (3 seeds, pass) | 48.5 ± 1.2 (3 seeds, baseline) |" in lines
    assert "| ppo-cartpole / mine | skrl | CartPole-v1 | ≥ 475 | 500.0 (1 seed, pass) | 10.0 (1 seed, baseline) |" in lines
    assert sum(line.startswith("| ppo-lstm-cartpole-novel / ") for line in lines) == 1
    table_rows = [line for line in lines if line.startswith("| ppo-cartpole-novel@2 ") or line.startswith("| mine@1 ")]
    assert [line.rstrip(" |").rpartition("| ")[2] for line in table_rows] == ["baseline of ppo-lstm-cartpole-novel", "baseline of ppo-cartpole"]
    assert "**3 of 3 rows pass (2 baseline rows beside their recipes, not counted).**" in lines
    assert render.render_baselines(render.with_baselines([seeded("ppo-cartpole", "skrl", [500.0], True)], {})) == []
    random = {"CartPole-v1": {"mean": 20.0}}
    summary = aggregate.aggregate_rows(render.with_baselines(rows, {"ppo-cartpole-novel": "ppo-lstm-cartpole-novel"}), random)
    assert summary["skipped"] == {"baseline rows (beside their recipes)": ["ppo-cartpole-novel@2 on skrl", "mine@1 on skrl"]}
    assert len(summary["scores"]) == 3


def test_the_registry_s_novel_baselines_say_whose_baseline_they_are():
    import rlplug

    session = rlplug.session()
    assert session.resolve("ppo-cartpole-novel").baseline_of == "ppo-lstm-cartpole-novel"
    assert session.resolve("ppo-pendulum-novel").baseline_of == "ppo-lstm-pendulum-novel"
    assert session.resolve("ppo-lstm-cartpole-novel").baseline_of == ""
    with pytest.raises(rlplug.RlplugError, match="'baseline_of' names no known recipe \\('ppo-lstm-cartpol'\\) \\(did you mean 'ppo-lstm-cartpole-novel'"):
        session.resolve("ppo-cartpole-novel", ["baseline_of=ppo-lstm-cartpol"])


def test_recorded_commands_are_portable():
    """issue 51: a command is recorded as a reader re-runs it (paths in the repository relative to it, scratch
    folders as SCRATCH/...), and every command stored in benchmarks/results/ is so."""
    import re

    from rlplug.util.commands import portable_command, portable_text

    root = Path("/home/me/rlplug")
    assert portable_command(["rlplug", "bench", "ppo-cartpole", "--runs-dir", "/work/runs/s4/x", "--report",
                             "/home/me/rlplug/benchmarks/results/r.md", "--set=env=CartPole-v1", "--out=/tmp/a b/c.png"], root) == (
        "rlplug bench ppo-cartpole --runs-dir SCRATCH/s4/x --report benchmarks/results/r.md --set=env=CartPole-v1 "
        "'--out=SCRATCH/a b/c.png'")  # fmt: skip
    stored = ("RLPLUG_DATA_DIR=/work/data rlplug bench a --runs-dir /work/runs/s5/x --report /work/wt/i29/benchmarks/results/a.md "
              "(2026-12-02T17:39:36+00:00); rlplug bench b --steps 1e6 (2026-12-03T00:00:00+00:00) https://example.org/x steps/s")
    assert portable_text(stored) == (
        "RLPLUG_DATA_DIR=SCRATCH/work/data rlplug bench a --runs-dir SCRATCH/s5/x --report benchmarks/results/a.md "
        "(2026-12-02T17:39:36+00:00); rlplug bench b --steps 1e6 (2026-12-03T00:00:00+00:00) https://example.org/x steps/s")
    absolute = re.compile(r"(?<![\w/:.~-])/(work|tmp|root|home)/")
    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    for path in sorted(results.glob("*.json")):
        text = path.read_text()
        for command in re.findall(r'"command": ("(?:[^"\\]|\\.)*")', text):
            assert not absolute.search(json.loads(command)), (path.name, command)
    for path in sorted(results.glob("*.md")):
        for line in path.read_text().splitlines():
            if line.startswith("Produced by `"):
                assert not absolute.search(line), (path.name, line)


def test_bench_records_its_command_portably(capsys, tmp_path):
    from conftest import cli_in_process

    report = tmp_path / "r.md"
    code, _, err = cli_in_process(capsys, "bench", "ppo-cartpole", "--backend", "skrl", "--steps", "64", "--set", "eval_episodes=1",
                                  "--runs-dir", tmp_path / "runs", "--report", report)  # fmt: skip
    assert code in (0, 1), err
    recorded = json.loads(report.with_suffix(".json").read_text())["command"]
    assert recorded.endswith(f"--runs-dir SCRATCH/{tmp_path.name}/runs --report SCRATCH/{tmp_path.name}/r.md"), recorded
    assert str(tmp_path) not in report.read_text()


def test_merge_bench_refuses_to_merge_into_one_of_its_inputs(tmp_path):
    """The file merged into is read and rewritten at once otherwise: its rows would be lost."""
    import subprocess
    import sys

    table = tmp_path / "seeded.json"
    table.write_text(json.dumps({"command": "rlplug bench a", "rows": []}))
    before = table.read_text()
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "merge_bench.py"
    done = subprocess.run([sys.executable, str(script), str(table), "--out", str(table)], capture_output=True, text=True,
                          cwd=script.parent)  # fmt: skip
    assert done.returncode == 2 and "is also an input; copy it first" in done.stderr
    assert table.read_text() == before


def test_sac_floor_section_judges_the_cells_and_bounds_the_time_to_target(render):
    floor = {"results": {
        "rlplug skrl": {"plain": [100.0, 100.0], "rlplug": [90.0, 92.0], "ratio": [0.9, 0.92], "ratio_cpu": [0.9, 0.92]},
        "rlplug torchrl": {"plain": [100.0], "rlplug": [80.0], "ratio": [0.8], "ratio_cpu": [0.8]},
        "SB3": {"plain": [100.0], "rlplug": [84.0], "ratio": [0.84], "ratio_cpu": [0.84]},
        "fused+compile": {"plain": [100.0, 100.0], "rlplug": [90.0, 90.0], "ratio": [0.9, 0.9], "ratio_cpu": [0.9, 0.9]},
    }, "extra": {"fused+compile": {"compile_s": 40.0}}}
    timed = {"sac-pendulum": {"seeds": [42, 0, 1], "overrides": ["hidden_sizes=[256,256]"], "wall": {"ratio_of_means": 0.9}}}
    text = "\n".join(render.render_sac_floor(envelope("sac_floor", {"floor": floor, "time_to_target": timed})))
    assert "| rlplug skrl | 100 | 91 | 0.910 (0.900–0.920) | 0.910 (0.900–0.920) | yes |" in text
    assert "| rlplug torchrl | 100 | 80 | 0.800 | 0.800 | **no** |" in text and "| SB3 | 100 | 84 | 0.840 | 0.840 | - |" in text
    assert "never pays back: it is not faster" in text
    assert "rlplug ÷ SB3 0.900 (ratio of the mean times; goal ≤ 0.6: **no**)" in text and "needs 0.84 of SB3's time" in text
