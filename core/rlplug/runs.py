"""Run directories: what ``rlplug train`` writes, and how ``eval`` / ``resume`` read it back.

A run directory holds ``recipe.json`` (the resolved recipe and backend), ``command.txt``,
``versions.json``, ``metrics.csv``, TensorBoard events under ``tb/``, ``checkpoints/latest.pt``,
``curve.png`` and ``summary.json``.
"""

from __future__ import annotations

import csv
import json
import math
import os
import platform
import re
import shlex
import sys
import time
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from .checkpoint import load_checkpoint, save_checkpoint
from .errors import RunDirError
from .hookspecs import Build
from .recipes import Recipe

CHECKPOINT = Path("checkpoints") / "latest.pt"
LIBRARIES = ("torch", "skrl", "torchrl", "tensordict", "gymnasium", "numpy", "pluggy", "rlplug")


def versions(build: Build | None = None) -> dict[str, str]:
    found = {"python": platform.python_version()}
    names = list(LIBRARIES)
    if build is not None and build.algorithm.plugin:
        names.append(build.algorithm.plugin)
        names.extend(_requirement_names(build.algorithm.plugin))  # e.g. mpe2, vmas for rlplug-mappo
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def _requirement_names(distribution: str) -> list[str]:
    """Names of what ``distribution`` depends on (extras and markers ignored), beyond rlplug itself."""
    from importlib.metadata import requires

    try:
        lines = requires(distribution) or []
    except PackageNotFoundError:
        return []
    names = [re.split(r"[\s<>=!~;\[(]", line, maxsplit=1)[0] for line in lines if "extra ==" not in line]
    return [n for n in names if n and n != "rlplug" and n not in LIBRARIES]


def default_run_dir(recipe: Recipe, backend: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{recipe.name}-{backend}-{stamp}"


class RunWriter:
    """Writes one run directory; ``None`` run_dir (``--no-write``) writes nothing at all."""

    def __init__(self, run_dir: Path, build: Build, resume: bool = False) -> None:
        self.dir = run_dir
        self.build = build
        if not resume:
            run_dir.mkdir(parents=True, exist_ok=False)
            _write_json(run_dir / "recipe.json", {"backend": build.backend, "recipe": build.recipe.to_table()})
            (run_dir / "command.txt").write_text(shlex.join(sys.argv) + "\n")
            _write_json(run_dir / "versions.json", versions(build))
        self._csv_path = run_dir / "metrics.csv"
        self._columns: list[str] | None = None
        if resume and self._csv_path.is_file():
            with self._csv_path.open() as handle:
                self._columns = next(csv.reader(handle), None)
        self._tb = None

    def log(self, env_steps: int, wall: float, metrics: dict[str, float]) -> None:
        row = {"env_steps": env_steps, "wall_s": round(wall, 3), **metrics}
        if self._columns is None:
            # the loss's declared terms up front: off-policy cells log rows before their first update
            entry = self.build.loss_entry
            declared = [f"loss/{t}" for t in (*entry.terms, *entry.reported)] if entry is not None else []
            names = set(metrics) | set(declared)
            self._columns = ["env_steps", "wall_s", "train/episode_return", *sorted(names - {"train/episode_return"})]
            with self._csv_path.open("w", newline="") as handle:
                csv.writer(handle).writerow(self._columns)
        elif not set(metrics) <= set(self._columns):
            self._widen(sorted(set(metrics) - set(self._columns)))
        with self._csv_path.open("a", newline="") as handle:
            csv.writer(handle).writerow([_fmt(row.get(c, "")) for c in self._columns])
        writer = self._tensorboard()
        for key, value in metrics.items():
            writer.add_scalar(key, value, env_steps)

    def _widen(self, new_columns: list[str]) -> None:
        """Add columns for metrics that appear mid-run; rows already written are kept (atomic rewrite)."""
        with self._csv_path.open(newline="") as handle:
            rows = list(csv.reader(handle))[1:]
        self._columns = [*self._columns, *new_columns]
        partial = self._csv_path.with_suffix(".csv.tmp")
        with partial.open("w", newline="") as handle:
            out = csv.writer(handle)
            out.writerow(self._columns)
            out.writerows(row + [""] * (len(self._columns) - len(row)) for row in rows)
        os.replace(partial, self._csv_path)

    def _tensorboard(self):
        if self._tb is None:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(log_dir=str(self.dir / "tb"), flush_secs=30)
        return self._tb

    def checkpoint(self) -> None:
        trainer = self.build.trainer
        save_checkpoint(self.dir / CHECKPOINT, {"rlplug": checkpoint_header(self.build), "trainer": trainer.state_dict()})

    def finish(self, summary: dict[str, Any]) -> None:
        if self._tb is not None:
            self._tb.close()
        _write_json(self.dir / "summary.json", summary)
        plot_learning_curve(self.dir)


def checkpoint_header(build: Build) -> dict[str, Any]:
    from . import __version__

    return {
        "rlplug": __version__,
        "algorithm": build.algorithm.name,
        "backend": build.backend,
        "recipe": build.recipe.ref,
        "env_steps": build.trainer.env_steps,
    }


def _fmt(value: Any) -> Any:
    return f"{value:.6g}" if isinstance(value, float) else value


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)


def plot_learning_curve(run_dir: Path) -> None:
    """``curve.png``: training-episode return against environment steps."""
    path = run_dir / "metrics.csv"
    if not path.is_file():
        return
    xs, ys = [], []
    with path.open() as handle:
        for row in csv.DictReader(handle):
            if row.get("train/episode_return"):
                xs.append(float(row["env_steps"]))
                ys.append(float(row["train/episode_return"]))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(xs, ys, lw=1.5)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("training episode return")
    ax.set_title(run_dir.name, fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(run_dir / "curve.png", dpi=100)
    plt.close(fig)


def train(
    build: Build,
    steps: int | None = None,
    run_dir: Path | None = None,
    progress: bool = True,
    checkpoint_every: int | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Train ``build.trainer`` to ``steps`` env steps (the recipe's budget by default), evaluate, summarise."""
    from tqdm import tqdm

    trainer = build.trainer
    steps = steps or build.recipe.steps
    writer = RunWriter(run_dir, build, resume=resume) if run_dir is not None else None
    checkpoint_every = checkpoint_every or max(1, steps // 10)
    next_checkpoint = (trainer.env_steps // checkpoint_every + 1) * checkpoint_every
    start_steps, started, cpu_started = trainer.env_steps, time.perf_counter(), time.process_time()
    bar = tqdm(total=steps, initial=trainer.env_steps, unit="step", dynamic_ncols=True, disable=not progress, leave=False)
    last_return = [math.nan]
    checkpointed_at = -1

    def on_step(tr: Any, metrics: dict[str, float]) -> None:
        nonlocal next_checkpoint, checkpointed_at
        bar.update(tr.env_steps - bar.n)
        if "train/episode_return" in metrics:
            last_return[0] = metrics["train/episode_return"]
            bar.set_postfix(ret=f"{last_return[0]:.1f}", refresh=False)
        if writer is not None:
            writer.log(tr.env_steps, time.perf_counter() - started, metrics)
            if tr.env_steps >= next_checkpoint:
                writer.checkpoint()
                checkpointed_at = tr.env_steps
                next_checkpoint = (tr.env_steps // checkpoint_every + 1) * checkpoint_every

    try:
        trainer.train(steps, callbacks=[on_step])
    finally:
        bar.close()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    if writer is not None and checkpointed_at != trainer.env_steps:
        writer.checkpoint()
    returns = trainer.evaluate(build.recipe.eval_episodes)
    summary = summarise(build, trainer.env_steps, trainer.env_steps - start_steps, wall, returns, cpu)
    summary["run_dir"] = str(run_dir) if run_dir is not None else None
    if writer is not None:
        writer.finish(summary)
    return summary


def summarise(
    build: Build, env_steps: int, trained_steps: int, wall: float, returns: list[float], cpu: float | None = None
) -> dict[str, Any]:
    """``steps_per_cpu_second`` (process CPU time of the training loop) is robust to a busy machine."""
    import numpy as np

    mean = float(np.mean(returns))
    target = build.recipe.target
    return {
        "recipe": build.recipe.ref,
        "algorithm": build.algorithm.name,
        "backend": build.backend,
        "env": build.env_id,
        "seed": build.seed,
        "steps": env_steps,
        "wall_seconds": round(wall, 2),
        "steps_per_second": round(trained_steps / wall, 1) if wall > 0 else None,
        "steps_per_cpu_second": round(trained_steps / cpu, 1) if cpu else None,
        "eval_episodes": len(returns),
        "eval_return_mean": round(mean, 2),
        "eval_return_std": round(float(np.std(returns)), 2),
        "target": target,
        "passed": bool(mean >= target),
    }


def read_run(run_dir: Path) -> tuple[Recipe, str, dict[str, Any]]:
    """The recipe, backend and checkpoint of a run directory, with a clear error for each way it can be wrong."""
    if not run_dir.is_dir():
        raise RunDirError(f"run directory {run_dir} does not exist")
    recipe_file = run_dir / "recipe.json"
    if not recipe_file.is_file():
        raise RunDirError(f"{run_dir} is not an rlplug run directory (no recipe.json)")
    checkpoint = run_dir / CHECKPOINT
    if not checkpoint.is_file():
        raise RunDirError(f"run directory {run_dir} holds no checkpoint ({CHECKPOINT} is missing)")
    try:
        data = json.loads(recipe_file.read_text())
        recipe = Recipe.from_table(data["recipe"], source=str(recipe_file))
        backend = data["backend"]
    except (ValueError, KeyError, TypeError) as err:
        raise RunDirError(f"{recipe_file} is unreadable: {err}") from None
    payload = load_checkpoint(checkpoint)
    header = payload.get("rlplug", {})
    if (header.get("algorithm"), header.get("backend")) != (recipe.algorithm, backend):
        raise RunDirError(
            f"checkpoint {checkpoint} was written by {header.get('algorithm')}/{header.get('backend')}, "
            f"but the run is {recipe.algorithm}/{backend}"
        )
    return recipe, backend, payload
