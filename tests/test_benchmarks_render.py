"""benchmarks/render.py: BENCHMARKS.md from stored section results (pure logic, no timing)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

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
    assert "| ppo-cartpole | 475 | 2 | 6.0 s @ 16,384, 6.0 s @ 16,384 | 3.0 s @ 8,192, not reached | 0.500 | 0.500 | yes |" in text


def test_results_round_trip_through_the_directory(render, tmp_path):
    (tmp_path / "startup.json").write_text(json.dumps(envelope("startup", {})))
    (tmp_path / "unrelated.json").write_text("{}")
    assert list(render.load_results(tmp_path)) == ["startup"]
    combined = render.combined_json({"bench": envelope("bench", {"machine": {"cpu_count": 2}, "rows": [row("a", "skrl", 1, 1.0)]})})
    assert combined["rows"] == [row("a", "skrl", 1, 1.0)] and combined["machine"] == {"cpu_count": 2}


def test_seeded_and_earlier_bench_rows_render_together(render):
    """The bench section takes rows `rlplug bench --seeds` writes (per-seed runs inside) next to rows of an earlier,
    one-seed table; the backend ratio reads a seeded row's mean wall seconds per seed."""
    from rlplug.report import COLUMNS as BENCH_COLUMNS, _row
    from rlplug.seeded import aggregate

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
