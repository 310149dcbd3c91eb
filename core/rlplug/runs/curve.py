"""``curve.png``: training-episode and evaluation returns against progress, with the target line."""

from __future__ import annotations

import csv
from pathlib import Path

from ..contract.hookspecs import Build
from ..recipes.fields import task_label


def curve_lines(build: Build) -> tuple[float | None, float | None]:
    """The target as a return (an offline score target converted with the dataset's reference returns)
    and, offline, the dataset's own mean return."""
    recipe = build.recipe
    target = recipe.target
    dataset = build.extras.get("dataset")
    if recipe.target_metric == "normalised_score" and target is not None:
        ref = dataset.reference if dataset is not None else {}
        low, high = ref.get("random_return"), ref.get("expert_return")
        target = None if low is None or high is None else low + target / 100.0 * (high - low)
    data_mean = (dataset.metadata.get("returns") or {}).get("mean") if dataset is not None else None
    return target, data_mean


def curve_title(run_dir: Path, build: Build) -> str:
    """The run directory and the task it trained on (a run on another env than its recipe's says so)."""
    return f"{run_dir.name}\n{task_label(build.recipe.ref, build.env_id, build.backend)}"


def plot_learning_curve(run_dir: Path, target: float | None = None, data_mean: float | None = None,
                        title: str | None = None) -> None:
    """Draw ``curve.png`` from ``metrics.csv`` (nothing to draw before its first row)."""
    path = run_dir / "metrics.csv"
    if not path.is_file():
        return
    curves: dict[str, tuple[list[float], list[float]]] = {"train/episode_return": ([], []), "eval/return": ([], [])}
    with path.open() as handle:
        reader = csv.DictReader(handle)
        unit = (reader.fieldnames or ["env_steps"])[0]
        for row in reader:
            for key, (xs, ys) in curves.items():
                if row.get(key):
                    xs.append(float(row[unit]))
                    ys.append(float(row[key]))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for key, (xs, ys) in curves.items():
        if xs:
            ax.plot(xs, ys, lw=1.5, marker="o" if key.startswith("eval") else None, ms=3, label=key)
    evals = curves["eval/return"]
    if len(evals[1]) > 1:  # evaluations during training: the best one's state is checkpoints/best.pt
        best = max(range(len(evals[1])), key=evals[1].__getitem__)
        ax.plot(evals[0][best], evals[1][best], "*", ms=11, color="tab:orange", label="best evaluation")
    if target is not None:
        ax.axhline(target, color="tab:red", ls="--", lw=1, label=f"target {target:.0f}")
    if data_mean is not None:
        ax.axhline(data_mean, color="tab:gray", ls=":", lw=1, label=f"dataset mean {data_mean:.0f}")
    ax.legend(fontsize=8)
    ax.set_xlabel("gradient updates" if unit == "updates" else "environment steps")
    ax.set_ylabel("episode return")
    ax.set_title(title or run_dir.name, fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(run_dir / "curve.png", dpi=100)
    plt.close(fig)
