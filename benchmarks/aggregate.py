"""One figure across the recipe table: the interquartile mean (IQM) of normalised scores, with a bootstrap CI.

A row's normalised score is ``100 × (R − R_random) / (R_reference − R_random)``: 0 is a uniformly random
policy (``benchmarks/results/random_returns.json``), 100 the recipe's published reference. Offline rows
(``target_metric = "normalised_score"``) are already on that scale (0 random, 100 the dataset's expert) and
are taken as they are. The IQM (the mean of the middle half, Agarwal et al. 2021, "Deep RL at the Edge of the
Statistical Precipice") is robust to one recipe far off the others, unlike the mean, and less coarse than the
median. Its 95 % interval is a percentile bootstrap over rows, from a fixed seed so a page re-renders the same.

Pure: JSON-like values in, numbers out (numpy; scipy when it is installed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0


def iqm(values: Any, axis: int = -1) -> Any:
    """Mean of the middle half: ``floor(n / 4)`` values cut from each end (``scipy.stats.trim_mean(x, 0.25)``)."""
    data = np.sort(np.asarray(values, dtype=np.float64), axis=axis)
    n = data.shape[axis]
    if n == 0:
        raise ValueError("the interquartile mean needs at least one value")
    cut = n // 4
    return np.take(data, range(cut, n - cut), axis=axis).mean(axis=axis)


def bootstrap_ci(values: Sequence[float], level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:  # fmt: skip
    """Percentile bootstrap interval of the IQM over ``values``; one value (or all equal) is its own interval."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("a confidence interval needs at least one value")
    if data.size == 1 or np.all(data == data[0]):
        return float(data[0]), float(data[0])  # nothing to resample; scipy would warn of a degenerate distribution
    try:
        from scipy.stats import bootstrap
    except ImportError:
        return _numpy_bootstrap_ci(data, level, resamples, seed)
    kwargs = dict(n_resamples=resamples, confidence_level=level, method="percentile", vectorized=True)
    try:
        result = bootstrap((data,), iqm, rng=np.random.default_rng(seed), **kwargs)
    except TypeError:  # scipy before 1.15 names the generator random_state
        result = bootstrap((data,), iqm, random_state=np.random.default_rng(seed), **kwargs)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _numpy_bootstrap_ci(data: np.ndarray, level: float, resamples: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    statistics = iqm(data[rng.integers(0, len(data), size=(resamples, len(data)))], axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(statistics, [tail, 100.0 - tail])
    return float(low), float(high)


def normalised_score(value: float, random: float, reference: float) -> float:
    """``100 × (value − random) / (reference − random)``."""
    return 100.0 * (value - random) / (reference - random)


def row_value(row: Mapping[str, Any]) -> float | None:
    """What a bench row measured: a seeded row's mean over seeds, an earlier one-seed row's own value."""
    if "runs" in row:
        return row.get("mean")
    key = "normalised_score" if row.get("target_metric") == "normalised_score" else "eval_return_mean"
    return row.get(key)


def row_score(row: Mapping[str, Any], random_returns: Mapping[str, Mapping[str, Any]],
              references: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any] | None, str | None]:  # fmt: skip
    """``(score, None)`` with the figures it came from, or ``(None, why it is left out)``.

    The reference is the row's own (recorded by the bench), else ``references[recipe]`` (the registry's)."""
    if row.get("baseline_of"):  # built to miss: its score would measure the task's difficulty, not a recipe
        return None, "baseline rows (beside their recipes)"
    value = row_value(row)
    if value is None:
        return None, "no value"
    if row.get("target_metric") == "normalised_score":
        return {"value": value, "random": None, "reference": None, "score": float(value)}, None
    reference = (row.get("reference") or references.get(row["recipe"]) or {}).get("value")
    if reference is None:
        return None, "no reference"
    random = (random_returns.get(row.get("env", "")) or {}).get("mean")
    if random is None:
        return None, "no random return"
    if reference == random:
        return None, "reference equals the random return"
    return {"value": value, "random": random, "reference": reference, "score": normalised_score(value, random, reference)}, None


def aggregate_rows(rows: Sequence[Mapping[str, Any]], random_returns: Mapping[str, Mapping[str, Any]],
                   references: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    """IQM of the rows' normalised scores and its bootstrap 95 % CI, each row's score, and the rows left out
    (``skipped``: ``{reason: ["recipe on backend", ...]}``). ``iqm`` and ``ci95`` are ``None`` without scores."""
    scored, skipped = [], {}
    for row in rows:
        score, why = row_score(row, random_returns, references or {})
        name = f"{row['recipe']} on {row['backend']}"
        if score is None:
            skipped.setdefault(why, []).append(name)
        else:
            scored.append({"row": name, "recipe": row["recipe"], "backend": row["backend"], **score})
    scores = [s["score"] for s in scored]
    low_high = bootstrap_ci(scores) if scores else None
    return {"iqm": float(iqm(scores)) if scores else None, "ci95": list(low_high) if low_high else None,
            "scores": scored, "skipped": skipped}  # fmt: skip
