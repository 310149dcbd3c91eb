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

from .checkpoint import load_checkpoint, non_finite_tensors, save_checkpoint
from .distributed import COMMAND_VARIABLE, rank_seed, world
from .errors import CheckpointMismatchError, RlplugError, RunDirError, TrainingDivergedError
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
            (run_dir / "command.txt").write_text(os.environ.get(COMMAND_VARIABLE, shlex.join(sys.argv)) + "\n")
            _write_json(run_dir / "versions.json", versions(build))
        if resume:  # temporary files of checkpoint writes a kill interrupted
            for stale in (run_dir / CHECKPOINT.parent).glob(".*.tmp"):
                stale.unlink(missing_ok=True)
        self._csv_path = run_dir / "metrics.csv"
        self._columns: list[str] | None = None
        if resume and self._csv_path.is_file():
            with self._csv_path.open() as handle:
                self._columns = next(csv.reader(handle), None)
        self._tb = None

    def log(self, progress: int, wall: float, metrics: dict[str, float]) -> None:
        unit = getattr(getattr(self.build, "trainer", None), "progress_unit", "env_steps")
        row = {unit: progress, "wall_s": round(wall, 3), **metrics}
        if self._columns is None:
            # the loss's declared terms up front: off-policy cells log rows before their first update
            entry = self.build.loss_entry
            declared = [f"loss/{t}" for t in (*entry.terms, *entry.reported)] if entry is not None else []
            declared += ["eval/return"] + (["eval/normalised_score"] if getattr(self.build, "extras", {}).get("dataset") else [])
            names = set(metrics) | set(declared)
            self._columns = [unit, "wall_s", "train/episode_return", *sorted(names - {"train/episode_return"})]
            with self._csv_path.open("w", newline="") as handle:
                csv.writer(handle).writerow(self._columns)
        elif not set(metrics) <= set(self._columns):
            self._widen(sorted(set(metrics) - set(self._columns)))
        with self._csv_path.open("a", newline="") as handle:
            csv.writer(handle).writerow([_fmt(row.get(c, "")) for c in self._columns])
        writer = self._tensorboard()
        for key, value in metrics.items():
            writer.add_scalar(key, value, progress)
        if any(key.startswith("eval/") for key in metrics):
            self.plot()  # the curve is refreshed at each evaluation

    def plot(self) -> None:
        """``curve.png`` with the target as a return (an offline score target converted with the
        dataset's reference returns) and, offline, the dataset's own mean return."""
        recipe = self.build.recipe
        target = getattr(recipe, "target", None)
        dataset = getattr(self.build, "extras", {}).get("dataset")
        data_mean = None
        if getattr(recipe, "target_metric", "return") == "normalised_score":
            ref = dataset.reference if dataset is not None else {}
            low, high = ref.get("random_return"), ref.get("expert_return")
            target = None if low is None or high is None else low + target / 100.0 * (high - low)
        if dataset is not None:
            data_mean = (dataset.metadata.get("returns") or {}).get("mean")
        plot_learning_curve(self.dir, target, data_mean)

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

    def checkpoint(self, rank_states: list[Any] | None = None) -> None:
        """Save the trainer's state unless it holds a NaN or an infinity (then the last good one stays).

        A distributed run passes every rank's state (rank 0's first): rank 0's is the run's state
        (``eval`` reads it), the others are kept under ``ranks`` so ``resume`` gives each rank its
        own environments, replay memory and RNG streams back.
        """
        trainer = self.build.trainer
        state = rank_states[0] if rank_states else trainer.state_dict()
        bad = next(non_finite_tensors(state), None)
        if bad is not None:
            raise TrainingDivergedError(
                f"{bad} became NaN or infinite by {trainer.progress_unit.replace('_', ' ')} {trainer.progress}; "
                f"training stopped and the last good checkpoint in {self.dir / CHECKPOINT.parent} is kept"
            )
        payload = {"rlplug": checkpoint_header(self.build, len(rank_states or [state])), "trainer": state}
        if rank_states and len(rank_states) > 1:
            payload["ranks"] = rank_states[1:]
        save_checkpoint(self.dir / CHECKPOINT, payload)

    def finish(self, summary: dict[str, Any], wall: float) -> None:
        """Log the final evaluation as the last row (so it is on the curve), then the summary."""
        final = {"eval/return": summary["eval_return_mean"]}
        if summary.get("normalised_score") is not None:
            final["eval/normalised_score"] = summary["normalised_score"]
        self.log(summary["steps"], wall, final)
        if self._tb is not None:
            self._tb.close()
        _write_json(self.dir / "summary.json", summary)


def checkpoint_header(build: Build, world_size: int = 1) -> dict[str, Any]:
    from . import __version__

    return {
        "rlplug": __version__,
        "world_size": world_size,
        "algorithm": build.algorithm.name,
        "backend": build.backend,
        "hyperparameters": dict(build.hp),
        "recipe": build.recipe.ref,
        "env_steps": build.trainer.env_steps,
        build.trainer.progress_unit: build.trainer.progress,
    }


def check_header(header: dict[str, Any], build: Build, path: Path | str) -> None:
    """Refuse a checkpoint written by another algorithm, backend, hyperparameter set or rlplug major version."""
    from . import __version__

    written = str(header.get("rlplug", "?"))
    if _compatible_series(written) != _compatible_series(__version__):
        raise CheckpointMismatchError(
            f"checkpoint {path} was written by rlplug {written}; this is rlplug {__version__}, another major version"
        )
    if (header.get("algorithm"), header.get("backend")) != build.cell:
        raise CheckpointMismatchError(
            f"checkpoint {path} holds a {header.get('algorithm')}/{header.get('backend')} run, not {'/'.join(build.cell)}"
        )
    saved = header.get("hyperparameters")
    if saved is not None:
        differ = sorted(k for k in set(saved) | set(build.hp) if saved.get(k) != build.hp.get(k))
        if differ:
            shown = ", ".join(f"{k} ({saved.get(k)!r} there, {build.hp.get(k)!r} here)" for k in differ[:3])
            raise CheckpointMismatchError(f"checkpoint {path} was trained with other hyperparameters: {shown}")


def _compatible_series(version_text: str) -> tuple[str, ...]:
    """The part of a version that must match: the major version, or major.minor while it is 0.x."""
    parts = version_text.split(".")
    return tuple(parts[:2]) if parts[0] == "0" else tuple(parts[:1])


def check_losses(metrics: dict[str, float], progress: int, unit: str) -> None:
    """Stop on a NaN or infinite loss term, naming it and the step."""
    for name, value in metrics.items():
        if name.startswith("loss/") and not math.isfinite(value):
            raise TrainingDivergedError(
                f"{name[5:]} became {value} by {unit.replace('_', ' ')} {progress}; training stopped, the last good checkpoint is kept"
            )


def _fmt(value: Any) -> Any:
    return f"{value:.6g}" if isinstance(value, float) else value


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)


def plot_learning_curve(run_dir: Path, target: float | None = None, data_mean: float | None = None) -> None:
    """``curve.png``: training-episode and evaluation returns against progress, with the target line."""
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
    if target is not None:
        ax.axhline(target, color="tab:red", ls="--", lw=1, label=f"target {target:.0f}")
    if data_mean is not None:
        ax.axhline(data_mean, color="tab:gray", ls=":", lw=1, label=f"dataset mean {data_mean:.0f}")
    ax.legend(fontsize=8)
    ax.set_xlabel("gradient updates" if unit == "updates" else "environment steps")
    ax.set_ylabel("episode return")
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
    """Train ``build.trainer`` to ``steps`` env steps (the recipe's budget by default), evaluate, summarise.

    In a distributed run every rank calls this; rank 0 alone writes, shows progress and evaluates
    (the parameters are the same on every rank), and checkpoints collect every rank's state.
    """
    from tqdm import tqdm

    here = world()
    trainer = build.trainer
    steps = steps or build.recipe.steps
    writes = run_dir is not None  # rank 0 writes it; the other ranks take part in its checkpoints
    progress = progress and here.is_main
    writer = RunWriter(run_dir, build, resume=resume) if writes and here.is_main else None

    def save_checkpoint_now() -> None:
        # every rank gets here at the same step (budgets and cadences are per rank and equal)
        if here.distributed:
            from .backends.parallel import gather_states

            rank_states = gather_states(trainer.state_dict())
            if writer is not None:
                writer.checkpoint(rank_states)
        elif writer is not None:
            writer.checkpoint()

    checkpoint_every = checkpoint_every or max(1, steps // 10)
    next_checkpoint = (trainer.progress // checkpoint_every + 1) * checkpoint_every
    start_steps, started, cpu_started = trainer.progress, time.perf_counter(), time.process_time()
    start_updates = getattr(trainer, "gradient_steps", 0)
    unit = "update" if trainer.progress_unit == "updates" else "step"
    bar = tqdm(total=steps, initial=trainer.progress, unit=unit, dynamic_ncols=True, disable=not progress, leave=False)
    checkpointed_at = -1

    def on_step(tr: Any, metrics: dict[str, float]) -> None:
        nonlocal next_checkpoint, checkpointed_at
        check_losses(metrics, tr.progress, tr.progress_unit)
        elapsed = time.perf_counter() - started
        if elapsed > 0:
            metrics["train/steps_per_second"] = (tr.progress - start_steps) / elapsed
        bar.update(tr.progress - bar.n)
        for key, label in (("train/episode_return", "ret"), ("eval/return", "eval"), ("eval/normalised_score", "score")):
            if key in metrics:
                bar.set_postfix({label: f"{metrics[key]:.1f}"}, refresh=False)
        if writer is not None:
            writer.log(tr.progress, elapsed, metrics)
        if writes and tr.progress >= next_checkpoint:
            save_checkpoint_now()
            checkpointed_at = tr.progress
            next_checkpoint = (tr.progress // checkpoint_every + 1) * checkpoint_every

    try:
        trainer.train(steps, callbacks=[on_step])
    except (RuntimeError, ValueError) as err:
        # a library choking on NaN parameters (a Categorical of NaN logits, ...): name what diverged
        try:
            bad = next(non_finite_tensors(trainer.state_dict()), None)
        except Exception:  # a trainer too broken to report its state: the original error tells more
            bad = None
        if bad is None:
            raise
        raise TrainingDivergedError(
            f"{bad} became NaN or infinite by {trainer.progress_unit.replace('_', ' ')} {trainer.progress} "
            f"({str(err).splitlines()[0]}); training stopped, the last good checkpoint is kept"
        ) from None
    finally:
        bar.close()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    if writes and checkpointed_at != trainer.progress:
        save_checkpoint_now()
    in_sync = True
    if here.distributed:
        from .backends.parallel import ranks_in_sync

        in_sync = ranks_in_sync(build)
        if not here.is_main:
            return {"rank": here.rank, "steps": trainer.progress, "ranks_in_sync": in_sync}
    returns = trainer.evaluate(build.recipe.eval_episodes)
    summary = summarise(build, trainer.progress, trainer.progress - start_steps, wall, returns, cpu)
    summary["world_size"] = here.size
    if here.distributed:  # the budget is per rank: all ranks together took world_size times as many
        summary["steps_all_ranks"] = summary["steps"] * here.size
        summary["steps_per_second_all_ranks"] = round(summary["steps_per_second"] * here.size, 1) if summary["steps_per_second"] else None
        summary["ranks_in_sync"] = in_sync
    if trainer.progress_unit == "updates":
        summary["updates_per_second"] = summary["steps_per_second"]
    elif hasattr(trainer, "gradient_steps") and wall > 0:  # off-policy cells: gradient steps taken
        summary["updates_per_second"] = round((trainer.gradient_steps - start_updates) / wall, 1)
    summary["run_dir"] = str(run_dir) if writes else None
    if writer is not None:
        writer.finish(summary, wall)
    return summary


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
    }
    dataset = build.extras.get("dataset")
    if dataset is not None:
        score = dataset.normalised_score(mean)
        stats = dataset.metadata.get("returns") or {}
        summary["dataset"] = dataset.name
        summary["normalised_score"] = round(score, 1) if score is not None else None
        summary["dataset_return_mean"] = round(stats["mean"], 2) if "mean" in stats else None
        summary["beat_dataset"] = recipe.beat_dataset
    summary["passed"] = passed(recipe, summary)
    return summary


def passed(recipe: Recipe, summary: dict[str, Any]) -> bool:
    """The recipe's target on its metric; ``beat_dataset`` also requires a return above the dataset's mean."""
    value = summary["eval_return_mean"] if recipe.target_metric == "return" else summary.get("normalised_score")
    if value is None or value < recipe.target:
        return False
    if recipe.beat_dataset:
        dataset_mean = summary.get("dataset_return_mean")
        return dataset_mean is not None and summary["eval_return_mean"] > dataset_mean
    return True


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
        raise CheckpointMismatchError(
            f"checkpoint {checkpoint} was written by {header.get('algorithm')}/{header.get('backend')}, "
            f"but the run is {recipe.algorithm}/{backend}"
        )
    return recipe, backend, payload


def open_run(session: Any, run_dir: Path, device: str = "cpu") -> Build:
    """Rebuild a run directory's recipe on its backend and load its checkpoint into the trainer.

    A distributed worker loads its own rank's state; a rank the run did not have (resuming on more
    processes than it was trained on) starts from rank 0's state with its own random streams.
    """
    recipe, backend, payload = read_run(run_dir)
    if backend == "torchrl" and device != "cpu":
        # seen on an H200: the restored collector mixes CPU and GPU tensors in its first batch
        raise RunDirError(f"resuming a TorchRL run on {device} is not supported yet; resume {run_dir} with --device cpu")
    build = session.prepare(recipe, backend, device=device)
    join_ranks(build, session)
    session.construct(build)
    try:
        check_header(payload.get("rlplug", {}), build, run_dir / CHECKPOINT)
        build.extras["saved_world_size"] = int(payload.get("rlplug", {}).get("world_size", 1))
        rank = world().rank
        saved_ranks = payload.get("ranks") or []
        state = saved_ranks[rank - 1] if 0 < rank <= len(saved_ranks) else payload["trainer"]
        load_trainer_state(build, state, run_dir / CHECKPOINT)
        if rank > len(saved_ranks):
            from .rng import seed_all

            seed_all(build.seed)  # else this rank would replay rank 0's actions step for step
    except BaseException:
        build.trainer.close()
        raise
    return build


def join_ranks(build: Build, session: Any) -> None:
    """In a distributed worker: refuse a cell that cannot train data-parallel, and give this rank its
    seed (rank ``r``'s environment ``i`` gets ``seed + r * num_envs + i``). Nothing in one process."""
    here = world()
    if not here.distributed:
        return
    check_distributed(build.algorithm, build.backend, session.host.algorithms.values())
    build.seed = rank_seed(build.recipe.seed, build.num_envs, here.rank)


def check_distributed(spec: Any, backend: str, installed: Any = ()) -> None:
    if spec.backends[backend].distributed:
        return
    able = sorted({s.name for s in installed if any(b.distributed for b in s.backends.values())})
    raise RlplugError(
        f"{spec.name} on {backend} does not train across processes (--nproc); "
        f"installed algorithms that do: {', '.join(able) or 'none'}"
    )


def resume_note(saved_world_size: int, world_size: int) -> str | None:
    """What changes when a run resumes on another number of processes (``None``: nothing)."""
    if saved_world_size == world_size:
        return None
    trained = f"run was trained on {saved_world_size} process{'es' if saved_world_size != 1 else ''}"
    if world_size < saved_world_size:
        lost = f"rank {world_size}" if saved_world_size - world_size == 1 else f"ranks {world_size}-{saved_world_size - 1}"
        return (f"{trained} and resumes on {world_size}: {lost}'s environments and replay memory are left behind; "
                f"the networks and optimisers carry on")
    new = f"rank {saved_world_size} starts" if world_size - saved_world_size == 1 else f"ranks {saved_world_size}-{world_size - 1} start"
    return f"{trained} and resumes on {world_size}: {new} from rank 0's environments and memory with their own random streams"


def load_trainer_state(build: Build, state: Any, path: Path | str) -> None:
    """``trainer.load_state_dict`` with one clear line when the checkpoint lacks what the cell needs."""
    try:
        build.trainer.load_state_dict(state)
    except KeyError as err:
        raise CheckpointMismatchError(
            f"checkpoint {path} lacks {err.args[0]!r}, which {'/'.join(build.cell)} needs to resume; it was written by another version of the plugin"
        ) from None
    except (RuntimeError, ValueError, TypeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointMismatchError(f"checkpoint {path} does not fit {'/'.join(build.cell)}: {first}") from None
