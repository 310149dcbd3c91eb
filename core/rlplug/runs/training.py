"""The training loop of ``rlplug train`` and ``resume``: progress bar, metrics, checkpoint cadence,
divergence guard, final evaluation and summary. It talks to the trainer through ``rlplug.Trainer`` only."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..pipeline.distributed import world
from ..errors import EnvContractError, EnvStepError, RunInterrupted
from ..contract.hookspecs import Build, Trainer
from .divergence import check_losses, diverged_parameters
from .evaluations import Evaluations, best_so_far, check_eval_every, episode_bar
from .policy_beside import export_beside_checkpoint
from .rundir import BEST_CHECKPOINT, CHECKPOINT, recorded_checkpoint_every, recorded_eval_every
from .summary import add_update_rate, add_world, summarise
from .trackers import DEFAULT_LOGGERS
from .writer import RunWriter


class CheckpointCadence:
    """Every ``every`` units of progress, counted from zero so a resumed run keeps the same beat."""

    def __init__(self, every: int, progress: int) -> None:
        self.every = every
        self.due_at = self._next(progress)
        self.saved_at = -1

    def due(self, progress: int) -> bool:
        return progress >= self.due_at

    def saved(self, progress: int) -> None:
        self.saved_at = progress
        self.due_at = self._next(progress)

    def _next(self, progress: int) -> int:
        return (progress // self.every + 1) * self.every


class StopSignals:
    """SIGINT (Ctrl-C) and SIGTERM while a run is written: remembered, then acted on at the end of the
    training iteration under way, where the trainer's state is whole (a checkpoint at the interrupt is
    written there). A second signal acts at once, as it would without this. Main thread, one process only:
    the ranks of a distributed run would each stop at another iteration and wait on each other."""

    SIGNALS = ("SIGINT", "SIGTERM")

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return
        for name in self.SIGNALS:
            number = getattr(signal, name, None)
            if number is not None:
                self._previous[number] = signal.signal(number, self._remember)

    def _remember(self, signum: int, frame: Any) -> None:
        import signal

        self.signum = signum
        signal.signal(signum, self._previous.get(signum, signal.SIG_DFL))  # a second one is not held back

    def restore(self) -> None:
        import signal

        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()

    def interrupted(self, trainer: Trainer, run_dir: Path) -> RunInterrupted:
        import signal

        name = signal.Signals(self.signum).name
        unit = "update" if trainer.progress_unit == "updates" else "env step"
        return RunInterrupted(
            f"interrupted by {name} at {unit} {trainer.progress}; a checkpoint was written there: "
            f"continue with `rlplug resume {run_dir}`", self.signum,
        )


def budget_note(build: Build, steps: int) -> str | None:
    """The line saying a step budget is rounded to whole iterations (``None`` when it is not), said once
    before training: ``steps 2000 rounded up to 4096: training runs whole iterations of 4096 env steps (8 envs x 512)``."""
    trainer = build.trainer
    planned = trainer.planned_progress(steps)
    if planned == steps or trainer.progress >= steps:
        return None
    chunk = trainer.steps_per_iteration or 1
    unit = "updates" if trainer.progress_unit == "updates" else "env steps"
    shape = f" ({build.num_envs} envs x {chunk // build.num_envs})" if build.num_envs > 1 and chunk % build.num_envs == 0 else ""
    return (f"steps {steps} rounded {'up' if planned > steps else 'down'} to {planned}: training runs whole iterations "
            f"of {chunk} {unit}{shape}")


def stopped_by_env(trainer: Trainer, run_dir: Path | None) -> str:
    """What became of a run whose environment failed: where it stopped and the checkpoint it keeps (the
    last one written; the state mid-rollout is not saved)."""
    unit = "update" if trainer.progress_unit == "updates" else "env step"
    stopped = f"training stopped at {unit} {trainer.progress}"
    if run_dir is None:
        return stopped
    if (run_dir / CHECKPOINT).is_file():
        return f"{stopped}, the last checkpoint in {run_dir / CHECKPOINT.parent} is kept"
    return f"{stopped}, before its first checkpoint"


def stopped_by_hook(trainer: Trainer) -> dict[str, Any] | None:
    """Which hook ended training before its budget (``summary.json``'s ``stopped_by``: hook, step, metric,
    value, reason), or ``None`` when training ran its whole budget."""
    hooks = getattr(trainer, "hooks", None)
    if hooks is None or not getattr(hooks, "stop_requested", False):
        return None
    by = getattr(hooks, "stopped_by", None) or {"hook": None, "reason": getattr(hooks, "stop_reason", None), "metric": None, "value": None}
    return {"hook": by["hook"], "step": trainer.progress, "step_unit": trainer.progress_unit, "metric": by["metric"],
            "value": by["value"], "reason": by["reason"]}


def stop_line(stopped: dict[str, Any] | None) -> str | None:
    """``early_stopping stopped training at env step 11264 ('train/episode_return' = 487.3): ...``, one line."""
    if not stopped:
        return None
    unit = "update" if stopped.get("step_unit") == "updates" else "env step"
    on = f" ('{stopped['metric']}' = {stopped['value']:.4g})" if stopped.get("metric") and stopped.get("value") is not None else ""
    reason = f": {stopped['reason']}" if stopped.get("reason") else ""
    return f"{stopped.get('hook') or 'a hook'} stopped training at {unit} {stopped['step']}{on}{reason}"


def train(
    build: Build,
    steps: int | None = None,
    run_dir: Path | None = None,
    progress: bool = True,
    checkpoint_every: int | None = None,
    resume: bool = False,
    loggers: tuple[str, ...] = DEFAULT_LOGGERS,
    eval_every: int | None = None,
    progress_label: str | None = None,
) -> dict[str, Any]:
    """Train ``build.trainer`` to ``steps`` (the recipe's budget by default), evaluate, summarise.

    In a distributed run every rank calls this; rank 0 alone writes, shows progress and evaluates
    (the parameters are the same on every rank), and checkpoints collect every rank's state.
    A resumed run keeps the checkpoint and evaluation periods recorded in its directory unless given
    others. ``eval_every`` steps (0 or ``None``: only at the end) evaluates during training and keeps the
    best evaluation's state as ``checkpoints/best.pt`` (``rlplug.runs.evaluations``).
    SIGINT and SIGTERM write a checkpoint at the end of the iteration under way, then raise
    ``RunInterrupted`` (a ``KeyboardInterrupt``). ``loggers`` (``rlplug.runs.trackers``) are recorded in a
    new run directory; a resumed one keeps its own. ``progress_label`` names the bar (a dataset build's phase).
    """
    here = world()
    trainer = build.trainer
    steps = steps or build.recipe.steps
    writes = run_dir is not None  # rank 0 writes it; the other ranks take part in its checkpoints
    if writes and resume and checkpoint_every is None:
        checkpoint_every = recorded_checkpoint_every(run_dir)
    if writes and resume and eval_every is None:
        eval_every = recorded_eval_every(run_dir)
    check_eval_every(eval_every, build.algorithm.kind, build.recipe.name)
    every = checkpoint_every or max(1, steps // 10)
    writer = RunWriter(run_dir, build, resume, every, loggers, eval_every) if writes and here.is_main else None
    saved = build.extras.get("saved_run") if resume else None
    best = best_so_far(run_dir, saved.payload if saved is not None else None) if resume and here.is_main else None
    # rank 0 alone evaluates (the parameters are the same on every rank); the others wait for it at their next update
    cadence = CheckpointCadence(eval_every, trainer.progress) if eval_every and here.is_main else None
    evaluations = Evaluations(cadence, build.recipe.eval_episodes, trainer.progress_unit, best)
    status = "failed"
    try:
        summary = _train(build, trainer, steps, run_dir, writer, progress and here.is_main, every, evaluations, progress_label)
        status = "finished"
        return summary
    except RunInterrupted:
        status = "interrupted"
        raise
    finally:
        if writer is not None:
            writer.release(status)


def _train(build: Build, trainer: Trainer, steps: int, run_dir: Path | None, writer: RunWriter | None, progress: bool,
           every: int, evaluations: Evaluations, progress_label: str | None = None) -> dict[str, Any]:
    from tqdm import tqdm

    here = world()
    writes = run_dir is not None
    cadence = CheckpointCadence(every, trainer.progress)
    stop = StopSignals()
    if writes and not here.distributed:
        stop.install()

    def save_checkpoint_now() -> None:
        # every rank gets here at the same step (budgets and cadences are per rank and equal)
        if here.distributed:
            from ..backends.common.parallel import gather_states

            rank_states = gather_states(trainer.state_dict())
            if writer is not None:
                writer.checkpoint(rank_states)
        elif writer is not None:
            writer.checkpoint()
        cadence.saved(trainer.progress)

    start_steps, started, cpu_started = trainer.progress, time.perf_counter(), time.process_time()
    gradient_steps_before = trainer.gradient_steps
    unit = "update" if trainer.progress_unit == "updates" else "step"
    # the total is where training stops (whole iterations), so the bar ends at 100 %
    bar = tqdm(total=trainer.planned_progress(steps), initial=trainer.progress, desc=progress_label, unit=unit, dynamic_ncols=True,
               disable=not progress, leave=False)  # fmt: skip
    postfix: dict[str, str] = {}
    if writer is not None:
        writer.best_eval = evaluations.best

    def on_step(tr: Trainer, metrics: dict[str, float]) -> None:
        check_losses(metrics, tr.progress, tr.progress_unit)
        if evaluations.due(tr.progress, steps):
            metrics.update(evaluations.evaluate(tr, progress))
        elapsed = time.perf_counter() - started
        if elapsed > 0:
            metrics["train/steps_per_second"] = (tr.progress - start_steps) / elapsed
        bar.update(tr.progress - bar.n)
        best = evaluations.improved(metrics.get("eval/return"), tr.progress)
        for key, label in (("train/episode_return", "ret"), ("eval/return", "eval"), ("eval/normalised_score", "score")):
            if key in metrics:
                postfix[label] = f"{metrics[key]:.1f}"
        if evaluations.best is not None:
            postfix["best"] = f"{evaluations.best['return']:.1f}"
        bar.set_postfix(postfix, refresh=False)
        if writer is not None:
            writer.log(tr.progress, elapsed, metrics)
            if best:
                writer.best_checkpoint(evaluations.best)
        if writes and (cadence.due(tr.progress) or stop.signum is not None) and cadence.saved_at != tr.progress:
            save_checkpoint_now()
        if stop.signum is not None:
            raise stop.interrupted(tr, run_dir)

    stopped = None
    try:
        try:
            trainer.train(steps, callbacks=[on_step])
            stopped = stopped_by_hook(trainer)
            if stopped is not None:  # the bar ends where training did, not at a budget it will never reach
                bar.total = trainer.progress
                bar.refresh()
        except (EnvContractError, EnvStepError) as err:
            raise type(err)(f"{err}; {stopped_by_env(trainer, run_dir)}") from err
        except (RuntimeError, ValueError) as err:
            diverged = diverged_parameters(err, trainer)
            if diverged is None:
                raise
            raise diverged from None
        finally:
            bar.close()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        if writes and cadence.saved_at != trainer.progress:
            save_checkpoint_now()
        if stop.signum is not None:  # it came after the last iteration: the final checkpoint is written
            raise stop.interrupted(trainer, run_dir)
    finally:
        stop.restore()
    in_sync = True
    if here.distributed:
        from ..backends.common.parallel import ranks_in_sync

        in_sync = ranks_in_sync(build)
        if not here.is_main:
            return {"rank": here.rank, "steps": trainer.progress, "ranks_in_sync": in_sync}
    with episode_bar(build.recipe.eval_episodes, progress, "final evaluation"):
        returns = trainer.evaluate(build.recipe.eval_episodes)
    if writer is not None:  # after the evaluation: its episodes and the summary are as they were without the file
        export_beside_checkpoint(build, run_dir)
    if evaluations.active and evaluations.improved(sum(returns) / len(returns), trainer.progress) and writer is not None:
        writer.best_checkpoint(evaluations.best)
    summary = summarise(build, trainer.progress, trainer.progress - start_steps, wall, returns, cpu)
    summary["stopped_by"] = stopped
    add_world(summary, here, in_sync)
    add_update_rate(summary, trainer, gradient_steps_before, wall)
    if evaluations.active and evaluations.best is not None:
        kept = writes and (run_dir / BEST_CHECKPOINT).is_file()
        summary["best_eval"] = {**evaluations.best, "checkpoint": str(BEST_CHECKPOINT) if kept else None}
    summary["run_dir"] = str(run_dir) if writes else None
    if writer is not None:
        writer.finish(summary, wall)
    return summary
