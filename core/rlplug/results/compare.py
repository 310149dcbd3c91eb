"""``rlplug compare``: several runs' learning curves on one PNG and a table of their summaries.

Reads what the run layer writes (``rlplug.runs``): ``recipe.json`` (the resolved recipe and backend),
``metrics.csv`` (first column the x axis, ``env_steps`` or ``updates``; ``train/episode_return`` and
``eval/return`` among the others) and, for a finished run, ``summary.json``. Runs of one configuration
(the same recipe, backend and resolved fields apart from the seed) form a group: its curve is the mean
over its runs with a min–max band. Torch-free; matplotlib (Agg) is imported when a picture is drawn.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CompareError, RunDirError
from ..util.jsonfiles import read_json_object
from ..recipes.fields import task_label

RECIPE_FILE, METRICS_FILE, SUMMARY_FILE = "recipe.json", "metrics.csv", "summary.json"
UNITS = {"env_steps": "environment steps", "updates": "gradient updates"}
TRAIN, EVAL = "train/episode_return", "eval/return"
NOT_CONFIGURATION = ("seed", "description", "tier", "reference", "backend")
"""Recipe fields that do not make two runs different configurations (``backend`` is the run's own, kept apart)."""
GRID_POINTS = 400


@dataclass
class RunCurves:
    """One run directory as ``compare`` reads it."""

    run_dir: Path
    name: str
    ref: str
    backend: str
    seed: Any
    unit: str
    recipe: dict[str, Any]
    summary: dict[str, Any] | None
    train: tuple[list[float], list[float]]
    evals: tuple[list[float], list[float]]
    last_step: float
    last_wall: float | None

    @property
    def configuration(self) -> str:
        fields = {k: v for k, v in self.recipe.items() if k not in NOT_CONFIGURATION}
        return json.dumps([self.backend, fields], sort_keys=True, default=str)


@dataclass
class Group:
    """Runs of one configuration: ``label`` names it in the legend and the table."""

    label: str
    runs: list[RunCurves] = field(default_factory=list)


# ---- reading runs -----------------------------------------------------------------------------------


def read_run(run_dir: str | Path) -> RunCurves:
    """A run directory's recipe, summary (``None`` before the run finished) and curves, or one line saying
    why it is not a comparable run."""
    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise RunDirError(f"run directory {run_dir} does not exist")
    if not run_dir.is_dir():
        raise RunDirError(f"run directory {run_dir} is a file, not a run directory")
    recorded = _json(run_dir / RECIPE_FILE, f"{run_dir} is not an rlplug run directory (no {RECIPE_FILE})")
    recipe, backend = recorded.get("recipe"), recorded.get("backend")
    if not isinstance(recipe, dict) or not isinstance(backend, str) or not isinstance(recipe.get("name"), str):
        raise RunDirError(f"{run_dir / RECIPE_FILE} is unreadable: no recipe table and backend")
    unit, rows = _metrics(run_dir)
    summary_file = run_dir / SUMMARY_FILE
    summary = _json(summary_file, "") if summary_file.is_file() else None
    xs = [_number(row.get(unit)) for row in rows]
    last_wall = next((w for w in (_number(row.get("wall_s")) for row in reversed(rows)) if w is not None), None)
    version = recipe.get("version")
    return RunCurves(
        run_dir=run_dir, name=recipe["name"], ref=f"{recipe['name']}@{version}" if version is not None else recipe["name"],
        backend=backend, seed=(summary or {}).get("seed", recipe.get("seed")), unit=unit, recipe=recipe, summary=summary,
        train=_series(xs, rows, TRAIN), evals=_series(xs, rows, EVAL),
        last_step=max((x for x in xs if x is not None), default=0.0), last_wall=last_wall,
    )  # fmt: skip


def _json(path: Path, missing: str) -> dict[str, Any]:
    if not path.is_file():
        raise RunDirError(missing)
    return read_json_object(path, RunDirError)


def _metrics(run_dir: Path) -> tuple[str, list[dict[str, str]]]:
    path = run_dir / METRICS_FILE
    if not path.is_file():
        raise RunDirError(f"run {run_dir} has no metrics ({METRICS_FILE} is missing): it stopped before its first iteration")
    try:
        with path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            unit = (reader.fieldnames or [""])[0]
    except OSError as err:
        raise RunDirError(f"cannot read {path}: {err.strerror or err}") from None
    except (ValueError, csv.Error) as err:
        raise RunDirError(f"{path} is unreadable: {err}") from None
    if unit not in UNITS:
        raise RunDirError(f"{path} is unreadable: its first column is {unit!r}, not {' or '.join(UNITS)}")
    if not rows:
        raise RunDirError(f"run {run_dir} has no metrics ({METRICS_FILE} has no rows yet)")
    return unit, rows


def _number(text: Any) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _series(xs: Sequence[float | None], rows: Sequence[dict[str, str]], key: str) -> tuple[list[float], list[float]]:
    """``(x, y)`` of the rows that have ``key``, sorted by x (a resumed run may repeat a step: the later row wins)."""
    points: dict[float, float] = {}
    for x, row in zip(xs, rows):
        y = _number(row.get(key))
        if x is not None and y is not None:
            points[x] = y
    ordered = sorted(points.items())
    return [x for x, _ in ordered], [y for _, y in ordered]


def find_runs(recipe: str, runs_dir: str | Path = "runs") -> list[Path]:
    """The run directories under ``runs_dir`` trained from ``recipe`` (``NAME`` or ``NAME@VERSION``), by name."""
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        raise CompareError(f"no runs directory {runs_dir} (pass --runs-dir DIR)")
    name, _, version = recipe.partition("@")
    found, others = [], set()
    for candidate in sorted(p for p in runs_dir.iterdir() if (p / RECIPE_FILE).is_file()):
        try:
            table = json.loads((candidate / RECIPE_FILE).read_text()).get("recipe", {})
        except (OSError, ValueError, AttributeError):
            continue  # a broken directory among many is not the one asked for
        if table.get("name") == name and (not version or str(table.get("version")) == version):
            found.append(candidate)
        elif isinstance(table.get("name"), str):
            others.add(table["name"])
    if not found:
        from ..util.suggest import did_you_mean

        seen = f"; it holds runs of {', '.join(sorted(others))}" if others else "; it holds no runs"
        raise CompareError(f"no runs of recipe '{recipe}' under {runs_dir}{did_you_mean(name, sorted(others))}{seen}")
    return found


def read_runs(run_dirs: Iterable[str | Path], skipped: list[str] | None = None) -> list[RunCurves]:
    """Every run, read and checked: the same x axis unit for all of them. With a ``skipped`` list, a run
    that cannot be read (no metrics yet) is left out and the reason appended to it, instead of refused."""
    runs, seen = [], set()
    for run_dir in run_dirs:
        key = Path(run_dir).resolve()
        if key in seen:  # one run named twice (another spelling, a symlink) is one run, not two
            continue
        seen.add(key)
        try:
            runs.append(read_run(run_dir))
        except RunDirError as err:
            if skipped is None:
                raise
            skipped.append(str(err))
    if not runs:
        raise CompareError("nothing to compare: " + ("; ".join(skipped or []) or "give run directories or --recipe NAME"))
    units: dict[str, list[str]] = {}
    for run in runs:
        units.setdefault(run.unit, []).append(str(run.run_dir))
    if len(units) > 1:
        parts = [f"{UNITS[u]} ({', '.join(dirs)})" for u, dirs in sorted(units.items())]
        raise CompareError(f"cannot compare runs counted in {' with runs counted in '.join(parts)}: their x axes differ")
    return runs


def group_runs(runs: Sequence[RunCurves]) -> list[Group]:
    """Runs of the same configuration together, in the order they were given. Configurations that share a
    recipe and backend (other ``--set`` values) are labelled with the fields that tell them apart."""
    groups: dict[str, Group] = {}
    for run in runs:
        groups.setdefault(run.configuration, Group(task_label(run.name, str(run.recipe.get("env")), run.backend))).runs.append(run)
    by_label: dict[str, list[Group]] = {}
    for group in groups.values():
        by_label.setdefault(group.label, []).append(group)
    for same in by_label.values():
        if len(same) == 1:
            continue
        fields = [_flat({k: v for k, v in g.runs[0].recipe.items() if k not in NOT_CONFIGURATION}) for g in same]
        differ = sorted(k for k in set().union(*fields) if len({json.dumps(f.get(k), sort_keys=True) for f in fields}) > 1)
        for i, (group, flat) in enumerate(zip(same, fields), 1):
            shown = ", ".join(f"{k.rpartition('.')[2]}={json.dumps(flat.get(k))}" for k in differ[:3])
            group.label += f" ({shown}{', …' if len(differ) > 3 else ''})" if shown else f" ({i})"
    return list(groups.values())


def _flat(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# ---- the table --------------------------------------------------------------------------------------------


def summary_rows(groups: Sequence[Group]) -> list[dict[str, Any]]:
    """One row per run: what its ``summary.json`` says (``None`` where a run has not finished)."""
    rows = []
    for group in groups:
        for run in group.runs:
            s = run.summary or {}
            rows.append({
                "run": str(run.run_dir), "group": group.label, "recipe": s.get("recipe", run.ref), "backend": run.backend,
                "env": s.get("env", run.recipe.get("env")), "seed": run.seed, "steps": s.get("steps", int(run.last_step)), "step_unit": run.unit,
                "wall_seconds": s.get("wall_seconds", run.last_wall), "eval_return_mean": s.get("eval_return_mean"),
                "eval_return_std": s.get("eval_return_std"), "target": s.get("target", run.recipe.get("target")),
                "passed": s.get("passed"), "finished": run.summary is not None,
            })  # fmt: skip
    return rows


def group_rows(groups: Sequence[Group]) -> list[dict[str, Any]]:
    """Per group of several runs: the final evaluation's mean and spread over its finished runs."""
    out = []
    for group in groups:
        finished = [r.summary for r in group.runs if r.summary is not None and r.summary.get("eval_return_mean") is not None]
        means = [float(s["eval_return_mean"]) for s in finished]
        mean = sum(means) / len(means) if means else None
        std = math.sqrt(sum((m - mean) ** 2 for m in means) / len(means)) if means else None
        out.append({"group": group.label, "runs": len(group.runs), "finished": len(finished),
                    "eval_return_mean": None if mean is None else round(mean, 2), "eval_return_std_over_runs": None if std is None else round(std, 2),
                    "passed": sum(bool(s.get("passed")) for s in finished),
                    "with_target": sum(s.get("target") is not None for s in finished)})  # fmt: skip
    return out


# ---- the picture ------------------------------------------------------------------------------------------


def aggregate(curves: Sequence[tuple[Sequence[float], Sequence[float]]], exact: bool = False) -> tuple[list[float], list[float], list[float], list[float]]:
    """``(x, mean, low, high)`` over runs: each run's curve interpolated onto a shared grid (``exact``: the
    union of the runs' own x values, no interpolation, as for evaluations), and a point only where at
    least one run reaches it (a longer run carries the curve on alone)."""
    import numpy as np

    curves = [(np.asarray(x, dtype=float), np.asarray(y, dtype=float)) for x, y in curves if len(x)]
    if not curves:
        return [], [], [], []
    grid = np.unique(np.concatenate([x for x, _ in curves]))
    if not exact and len(grid) > GRID_POINTS:
        grid = np.linspace(grid[0], grid[-1], GRID_POINTS)
    values = np.full((len(curves), len(grid)), np.nan)
    for i, (x, y) in enumerate(curves):
        if exact:
            at = {float(a): float(b) for a, b in zip(x, y)}
            values[i] = [at.get(float(g), np.nan) for g in grid]
        else:
            inside = (grid >= x[0]) & (grid <= x[-1])
            values[i, inside] = np.interp(grid[inside], x, y)
    seen = ~np.all(np.isnan(values), axis=0)
    grid, values = grid[seen], values[:, seen]
    return grid.tolist(), np.nanmean(values, 0).tolist(), np.nanmin(values, 0).tolist(), np.nanmax(values, 0).tolist()


def draw(groups: Sequence[Group], path: str | Path, title: str | None = None, evaluation_band: bool = False) -> Path:
    """Every group's training-episode return (mean line, min–max band when it has several runs) and its
    evaluation returns (markers, min–max bars; ``evaluation_band``: a dotted mean line with a min–max band,
    for runs that evaluate often), with each recipe's return target, on one PNG; the legend names the
    groups by colour under the plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    unit = groups[0].runs[0].unit
    fig, ax = plt.subplots(figsize=(8, 4.5))
    handles: list[Any] = []
    targets: dict[float, list[str]] = {}
    drawn = set()
    for index, group in enumerate(groups):
        color = f"C{index % 10}"
        n = len(group.runs)
        x, mean, low, high = aggregate([r.train for r in group.runs])
        if x:
            drawn.add(TRAIN)
            ax.plot(x, mean, color=color, lw=1.5)
            if n > 1:
                ax.fill_between(x, low, high, color=color, alpha=0.2, lw=0)
        x, mean, low, high = aggregate([r.evals for r in group.runs], exact=True)
        if x:
            drawn.add(EVAL)
            if evaluation_band:
                ax.plot(x, mean, color=color, marker="o", ms=3, lw=1.2, ls=":")
                if n > 1:
                    ax.fill_between(x, low, high, color=color, alpha=0.12, lw=0)
            else:
                bars = [[m - lo for m, lo in zip(mean, low)], [hi - m for m, hi in zip(mean, high)]] if n > 1 else None
                ax.errorbar(x, mean, yerr=bars, color=color, marker="o", ms=4, lw=1, ls=":", capsize=3)
        handles.append(Line2D([], [], color=color, lw=6, alpha=0.6, label=f"{group.label}: {n} run{'s' if n > 1 else ''}"))
        for run in group.runs:
            target = run.recipe.get("target")
            if run.recipe.get("target_metric", "return") == "return" and isinstance(target, (int, float)):
                labels = targets.setdefault(float(target), [])
                if group.label not in labels:
                    labels.append(group.label)
    for target, labels in targets.items():
        which = "" if len(targets) == 1 else f" ({', '.join(labels)})"
        ax.axhline(target, color="tab:red", ls="--", lw=1)
        handles.append(Line2D([], [], color="tab:red", ls="--", lw=1, label=f"target {target:g}{which}"))
    several = any(len(g.runs) > 1 for g in groups)
    if TRAIN in drawn:
        handles.append(Line2D([], [], color="black", lw=1.5, label="training return" + (" (mean; band: min–max over runs)" if several else "")))
    if EVAL in drawn:
        handles.append(Line2D([], [], color="black", lw=1, ls=":", marker="o", ms=4,
                              label="evaluation return" + (f" (mean; {'band' if evaluation_band else 'bars'}: min–max over runs)"
                                                           if several else "")))  # fmt: skip
    ax.set_xlabel(UNITS[unit])
    ax.set_ylabel("episode return")
    runs = sum(len(g.runs) for g in groups)
    configurations = f", {len(groups)} configurations" if len(groups) > 1 else ""
    ax.set_title(title or f"{runs} run{'s' if runs > 1 else ''}{configurations}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.14), frameon=False)
    from ..util.outputs import png_metadata, replace_atomically

    try:
        return replace_atomically(Path(path), lambda partial: fig.savefig(partial, dpi=110, bbox_inches="tight", format="png",
                                                                          metadata=png_metadata("compare")), "picture")  # fmt: skip
    finally:
        plt.close(fig)
