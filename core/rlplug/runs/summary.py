"""``summary.json``: what a finished run reached (the final evaluation against the recipe's target)."""

from __future__ import annotations

from typing import Any

from ..pipeline.distributed import World
from ..contract.hookspecs import Build, Trainer
from ..recipes.fields import Recipe
from .versions import source_commit


def summarise(
    build: Build, steps: int, trained_steps: int, wall: float, returns: list[float], cpu: float | None = None
) -> dict[str, Any]:
    """``steps_per_cpu_second`` (process CPU time of the training loop) is robust to a busy machine.

    Offline runs count ``steps`` in gradient updates and add the dataset's normalised score
    (100 x (R - R_random) / (R_expert - R_random)) and its own mean return.
    """
    import numpy as np

    mean = float(np.mean(returns))
    recipe = build.recipe
    unit = build.trainer.progress_unit if build.trainer is not None else "env_steps"
    summary = {
        "recipe": recipe.ref,
        "algorithm": build.algorithm.name,
        "backend": build.backend,
        "env": build.env_id,
        "seed": build.seed,
        "steps": steps,
        "step_unit": unit,
        "wall_seconds": round(wall, 2),
        "steps_per_second": round(trained_steps / wall, 1) if wall > 0 else None,
        "steps_per_cpu_second": round(trained_steps / cpu, 1) if cpu else None,
        "eval_episodes": len(returns),
        "eval_return_mean": round(mean, 2),
        "eval_return_std": round(float(np.std(returns)), 2),
        "target": recipe.target,
        "target_metric": recipe.target_metric,
        "rlplug_source": source_commit(),  # which code measured it (None for an installed wheel)
    }
    dataset = build.extras.get("dataset")
    if dataset is not None:
        score = dataset.normalised_score(mean)
        stats = dataset.metadata.get("returns") or {}
        summary["dataset"] = dataset.name
        summary["normalised_score"] = round(score, 1) if score is not None else None
        summary["dataset_return_mean"] = round(stats["mean"], 2) if "mean" in stats else None
        d4rl = dataset.d4rl_score(mean)
        if d4rl is not None:  # the dataset carries D4RL's reference returns (Minari's ref_min_score / ref_max_score)
            summary["d4rl_normalised_score"] = round(d4rl, 1)
        summary["beat_dataset"] = recipe.beat_dataset
    summary["passed"] = passed(recipe, summary)
    return summary


def passed(recipe: Recipe, summary: dict[str, Any]) -> bool | None:
    """The recipe's target on its metric; ``beat_dataset`` also requires a return above the dataset's mean.
    ``None`` when the run has no target (its task is not the one the recipe's target was set on)."""
    if recipe.target is None:
        return None
    value = summary["eval_return_mean"] if recipe.target_metric == "return" else summary.get("normalised_score")
    if value is None or value < recipe.target:
        return False
    if recipe.beat_dataset:
        dataset_mean = summary.get("dataset_return_mean")
        return dataset_mean is not None and summary["eval_return_mean"] > dataset_mean
    return True


def add_world(summary: dict[str, Any], here: World, ranks_in_sync: bool) -> None:
    """The budget is per rank: all ranks together took world_size times as many steps."""
    summary["world_size"] = here.size
    if here.distributed:
        summary["steps_all_ranks"] = summary["steps"] * here.size
        summary["steps_per_second_all_ranks"] = round(summary["steps_per_second"] * here.size, 1) if summary["steps_per_second"] else None
        summary["ranks_in_sync"] = ranks_in_sync


def add_update_rate(summary: dict[str, Any], trainer: Trainer, gradient_steps_before: int | None, wall: float) -> None:
    """Gradient updates per second: offline progress already counts them; off-policy cells count them apart."""
    if trainer.progress_unit == "updates":
        summary["updates_per_second"] = summary["steps_per_second"]
    elif trainer.gradient_steps is not None and gradient_steps_before is not None and wall > 0:
        summary["updates_per_second"] = round((trainer.gradient_steps - gradient_steps_before) / wall, 1)
    if trainer.compile_seconds is not None:  # compile = true: the wall seconds above include this much compiling
        summary["compile_seconds"] = trainer.compile_seconds
