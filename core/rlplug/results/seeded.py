"""``rlplug bench --seeds``: which seeds to train, and one row per (recipe, backend) from its per-seed runs.

A row passes when the mean over its seeds meets the target and at most one seed misses it: one unlucky
seed does not sink a recipe, a recipe that holds on one seed only does not pass. Its figures: the seeds,
each seed's value (the evaluation return, or the normalised score for ``target_metric =
"normalised_score"``), their mean, sample standard deviation (n - 1), minimum and maximum, a percentile
bootstrap 95 % confidence interval of the mean (10,000 resamples from a fixed seed, so the same values
always give the same interval), wall seconds per seed, and the recipe's published reference.

Torch-free: numpy is imported by the bootstrap only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import RecipeError

MAX_SEEDS = 1000
"""The most seeds one bench row trains (``--seeds 1000`` or a list that long)."""
MAX_JOBS = 1024
"""The most processes ``--jobs`` starts."""
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0


def parse_seeds(text: Any) -> list[int]:
    """``--seeds``: ``"0,1,2"`` (those seeds, in that order) or ``"3"`` (seeds 0, 1, 2); one line on bad input."""
    from ..recipes.overrides import check_option

    raw = str(text).strip()
    if not raw:
        raise RecipeError("--seeds needs a number of seeds (3: seeds 0, 1, 2) or a comma-separated list (0,1,2)")
    if "," not in raw:
        try:
            count = int(raw)
        except ValueError:
            raise RecipeError(f"--seeds {raw}: not a number of seeds (3: seeds 0, 1, 2) or a comma-separated list (0,1,2)") from None
        if count < 0:
            raise RecipeError(f"--seeds {raw}: a number of seeds is at least 1, and seeds are whole numbers from 0")
        if not 1 <= count <= MAX_SEEDS:
            raise RecipeError(f"--seeds {raw}: a number of seeds must be in [1, {MAX_SEEDS}]; for seed {raw} alone write "
                              f"--seeds {raw}, (a list) or --seed {raw}")  # fmt: skip
        return list(range(count))
    items = [part.strip() for part in raw.split(",")]
    if items[-1] == "":  # "7," is the list holding seed 7
        items.pop()
    seeds = []
    for item in items:
        try:
            value = int(item)
        except ValueError:
            raise RecipeError(f"--seeds {raw}: {item!r} is not a whole number") from None
        seeds.append(check_option("seed", value, "--seeds"))
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        raise RecipeError(f"--seeds {raw}: seed {repeated[0]} is given twice; each seed is trained once")
    if len(seeds) > MAX_SEEDS:
        raise RecipeError(f"--seeds {raw}: {len(seeds)} seeds; at most {MAX_SEEDS}")
    return seeds


def check_jobs(jobs: Any) -> int:
    """``--jobs N``: processes training at once, in [1, MAX_JOBS]."""
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise RecipeError(f"--jobs {jobs}: must be a whole number of processes")
    if not 1 <= jobs <= MAX_JOBS:
        raise RecipeError(f"--jobs {jobs}: must be in [1, {MAX_JOBS}] (processes training at once)")
    return jobs


# ---- statistics ------------------------------------------------------------------------------------


def bootstrap_ci(values: Sequence[float], level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:  # fmt: skip
    """Percentile bootstrap interval of the mean; one value is its own interval."""
    if not values:
        raise ValueError("a confidence interval needs at least one value")
    if len(values) == 1:
        return float(values[0]), float(values[0])
    import numpy as np

    data = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)


def seeds_pass(mean: float, target: float, misses: int) -> bool:
    """The bench's rule: the mean over the seeds meets the target, and at most one seed misses it."""
    return math.isfinite(mean) and mean >= target and misses <= 1


def _value(summary: Mapping[str, Any]) -> float | None:
    """What a run's target is checked on: its evaluation return, or its normalised score."""
    if summary.get("target_metric") == "normalised_score":
        return summary.get("normalised_score")
    return summary.get("eval_return_mean")


def _round(x: float, digits: int = 2) -> float:
    return round(float(x), digits)


def aggregate(runs: Sequence[Mapping[str, Any]], *, recipe: str, backend: str, seeds: Sequence[int], tier: str | None = None,
              reference: Mapping[str, Any] | None = None, target: float | None = None,
              baseline_of: str = "") -> dict[str, Any]:  # fmt: skip
    """One bench row from per-seed results: each a run's summary, or ``{"seed": S, "error": "..."}``
    for a seed that did not finish (it counts as a miss and the row fails). ``baseline_of``: the recipe the row's
    recipe is the baseline of (``is_baseline``): shown beside it, not counted as a pass or a failure."""
    done = [r for r in runs if "error" not in r]
    errors = [{"seed": r.get("seed"), "error": r["error"]} for r in runs if "error" in r]
    first = done[0] if done else {}
    target = first.get("target", target)
    values = [_value(r) for r in done]
    scored = [float(v) for v in values if v is not None]
    misses = sum(1 for r in done if not r.get("passed")) + len(errors)
    row: dict[str, Any] = {
        "recipe": recipe,
        "backend": backend,
        "algorithm": first.get("algorithm"),
        "env": first.get("env"),
        "tier": tier,
        "seeds": list(seeds),
        "steps": max((r["steps"] for r in done), default=0),
        "step_unit": first.get("step_unit", "env_steps"),
        "target": target,
        "target_metric": first.get("target_metric", "return"),
        "metric_values": [None if v is None else _round(v) for v in values],
        "mean": None, "std": None, "min": None, "max": None, "ci95": None,  # fmt: skip
        "misses": misses,
        "passed": False,
        "wall_seconds_per_seed": [r["wall_seconds"] for r in done],
        "wall_seconds": _round(statistics.fmean(r["wall_seconds"] for r in done), 1) if done else None,
        "steps_per_second": _mean_of(done, "steps_per_second"),
        "updates_per_second": _mean_of(done, "updates_per_second"),
        "eval_return_mean": _mean_of(done, "eval_return_mean", 2),
        "reference": dict(reference) if reference else None,
        "runs": [dict(r) for r in runs],
    }
    if any(r.get("beat_dataset") for r in done):
        row["beat_dataset"] = True
        row["dataset_return_mean"] = first.get("dataset_return_mean")
    if errors:
        row["errors"] = errors
    if baseline_of:
        row["baseline_of"] = baseline_of
    if scored and len(scored) == len(values):
        mean = statistics.fmean(scored)
        low, high = bootstrap_ci(scored)
        row.update(mean=_round(mean), std=_round(statistics.stdev(scored)) if len(scored) > 1 else 0.0,
                   min=_round(min(scored)), max=_round(max(scored)), ci95=[_round(low), _round(high)])
        passed = not errors and target is not None and seeds_pass(mean, target, misses)
        if passed and row.get("beat_dataset"):  # the mean return, too, above the dataset's own
            passed = row["dataset_return_mean"] is not None and row["eval_return_mean"] > row["dataset_return_mean"]
        row["passed"] = passed
    return row


def is_baseline(row: Mapping[str, Any]) -> bool:
    """A row of a baseline recipe (``baseline_of``): built to miss, so neither a pass nor a failure."""
    return bool(row.get("baseline_of"))


def verdict_text(row: Mapping[str, Any], passed: str = "pass", failed: str = "FAIL") -> str:
    """A row's verdict: ``passed``/``failed``, or ``baseline of NAME`` for a baseline's row."""
    if is_baseline(row):
        return f"baseline of {row['baseline_of']}"
    return passed if row.get("passed") else failed


def pass_count(rows: Sequence[Mapping[str, Any]]) -> str:
    """``12 of 14 rows pass`` over the real recipes' rows, and how many baseline rows were set apart."""
    real = [r for r in rows if not is_baseline(r)]
    baselines = len(rows) - len(real)
    apart = f" ({baselines} baseline row{'s' if baselines != 1 else ''} beside their recipes, not counted)" if baselines else ""
    return f"{sum(1 for r in real if r.get('passed'))} of {len(real)} row{'s' if len(real) != 1 else ''} pass{apart}"


def _mean_of(runs: Sequence[Mapping[str, Any]], key: str, digits: int = 1) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return _round(statistics.fmean(values), digits) if values else None


def as_seeded(row: Mapping[str, Any]) -> dict[str, Any]:
    """A bench row in the seeded form: an earlier table's row (one run's summary) becomes a one-seed row."""
    if "runs" in row:
        return dict(row)
    return aggregate([row], recipe=row["recipe"], backend=row["backend"], seeds=[row.get("seed")])


# ---- text ------------------------------------------------------------------------------------------


def short_count(n: int | float) -> str:
    """``1000000`` -> ``1M``, ``307000`` -> ``307k``, ``50000`` -> ``50k``, ``999`` -> ``999``."""
    for size, suffix in ((10**6, "M"), (10**3, "k")):
        if n >= size:
            return f"{n / size:.3g}{suffix}"
    return f"{n:g}"


def reference_text(reference: Mapping[str, Any] | None) -> str:
    """``242 ± 32 at 1M steps, 10 seeds (RL Zoo PPO)``; ``-`` when the recipe names none."""
    if not reference:
        return "-"
    parts = []
    if reference.get("value") is not None:
        parts.append(f"{reference['value']:g}" + (f" ± {reference['std']:g}" if reference.get("std") is not None else ""))
    if reference.get("steps"):
        parts.append(f"at {short_count(reference['steps'])}")
    if reference.get("seeds"):
        parts.append(f"{reference['seeds']} seeds")
    text = ", ".join([" ".join(parts[:2])] + parts[2:]) if parts else ""
    source = reference.get("source", "")
    return f"{text} ({source})" if text and source else (text or source or "-")


def result_text(row: Mapping[str, Any]) -> str:
    """``480.2 ± 12.1 (min 466.0)`` over seeds; one seed: its value and the spread over its episodes."""
    if row.get("mean") is None:
        return "not measured" if row.get("errors") else "no value"
    score = "score " if row.get("target_metric") == "normalised_score" else ""
    failed = f"; {len(row['errors'])} failed" if row.get("errors") else ""
    if len(row.get("metric_values") or []) == 1:
        run = next(r for r in row.get("runs") or [{}] if "error" not in r)
        episodes = f"; episodes ± {run['eval_return_std']:.1f}" if run.get("eval_return_std") is not None and not score else ""
        return f"{score}{row['mean']:.1f} (1 seed{episodes}{failed})"
    return f"{score}{row['mean']:.1f} ± {row['std']:.1f} (min {row['min']:.1f}{failed})"


def ci_text(row: Mapping[str, Any]) -> str:
    ci = row.get("ci95")
    if not ci or len(row.get("metric_values") or []) < 2:
        return "-"
    return f"[{ci[0]:.1f}, {ci[1]:.1f}]"


def target_text(row: Mapping[str, Any]) -> str:
    target = row.get("target")
    if target is None:
        return "-"
    if row.get("target_metric") == "normalised_score":
        text = f"score ≥ {target:g}"
        if row.get("beat_dataset") and row.get("dataset_return_mean") is not None:
            text += f", > data {row['dataset_return_mean']:.0f}"
        return text
    return f"≥ {target:g}"


def seeds_text(row: Mapping[str, Any]) -> str:
    seeds = [s for s in row.get("seeds") or [] if s is not None]
    if not seeds:
        return "-"
    text = ",".join(map(str, seeds)) if len(seeds) <= 5 else f"{len(seeds)} ({seeds[0]}..{seeds[-1]})"
    misses = row.get("misses") or 0
    return text + (f" ({misses} missed)" if misses and len(seeds) > 1 else "")


def wall_text(row: Mapping[str, Any]) -> str:
    walls = row.get("wall_seconds_per_seed") or []
    if not walls:
        return "-"
    if len(walls) == 1:
        return f"{walls[0]:.1f}"
    digits = 0 if min(walls) >= 10 else 1
    return f"{statistics.fmean(walls):.1f} ({min(walls):.{digits}f}–{max(walls):.{digits}f})"
