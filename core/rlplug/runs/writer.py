"""``RunWriter``: everything a training run writes into its directory, in the order it happens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .checkpoint_io import save_checkpoint
from ..contract.hookspecs import Build
from .checkpoints import checkpoint_payload
from .curve import curve_lines, curve_title, plot_learning_curve
from .divergence import check_finite_state
from .metrics import MetricsLog
from .lock import check_still_held, lock_run_dir, unlock_run_dir
from .trackers import DEFAULT_LOGGERS, Trackers, check_installed
from .claim import create_run_dir
from .rundir import BEST_CHECKPOINT, CHECKPOINT, SUMMARY_FILE, file_errors, record_period, recorded_loggers, write_json
from .saved import clear_interrupted_writes, set_aside_unusable_latest


class RunWriter:
    """Writes one run directory: its description at the start (not on resume), metrics rows, the
    curve at each evaluation, checkpoints, and the summary at the end; and sends the same to the run's
    trackers (``rlplug.runs.trackers``), rows once a checkpoint covers them.

    It takes the directory's lock (``rlplug.runs.lock``) first unless this process holds it already (the
    CLI takes it before building), and ``release`` gives back only a lock it took itself. A resumed run
    keeps the loggers it was trained with and continues its timeline from the checkpoint's progress.
    """

    def __init__(self, run_dir: Path, build: Build, resume: bool = False, checkpoint_every: int | None = None,
                 loggers: tuple[str, ...] = DEFAULT_LOGGERS, eval_every: int | None = None) -> None:
        self.dir = run_dir
        self.build = build
        self.locked_now = False
        self.trackers: Trackers | None = None
        self.best_eval: dict[str, Any] | None = None  # what the checkpoints' headers say (rlplug.runs.evaluations)
        try:
            if resume:
                self.locked_now = lock_run_dir(run_dir)
                set_aside_unusable_latest(build.extras.get("saved_run"))
                clear_interrupted_writes(run_dir)
                if checkpoint_every is not None:
                    record_period(run_dir, "checkpoint_every", checkpoint_every)
                if eval_every is not None:
                    record_period(run_dir, "eval_every", eval_every)
                loggers = recorded_loggers(run_dir) or DEFAULT_LOGGERS
                for name in loggers:  # refused before metrics.csv drops the rows past the checkpoint
                    check_installed(name)
            else:
                self.locked_now = create_run_dir(run_dir, build, checkpoint_every, loggers, eval_every).locked_now
            self.metrics = MetricsLog(run_dir, build.trainer.progress_unit, declared_metrics(build),
                                      tensorboard="tensorboard" in loggers,
                                      resumed_at=build.trainer.progress if resume else None)
            self.trackers = Trackers(run_dir, build, loggers, resume)
        except BaseException:
            self.release("failed")
            raise

    def release(self, status: str = "finished") -> None:
        """End the tracker runs (``finished``, ``interrupted`` or ``failed``) and give back the directory's
        lock if this writer took it (a run trained from Python, not the CLI)."""
        trackers, self.trackers = self.trackers, None
        try:
            if trackers is not None:
                trackers.end(status)
        finally:
            if self.locked_now:
                unlock_run_dir(self.dir)
                self.locked_now = False

    def log(self, progress: int, wall: float, metrics: dict[str, float]) -> None:
        check_still_held(self.dir)
        self.metrics.log(progress, wall, metrics)
        if self.trackers is not None:
            self.trackers.add(progress, metrics)
        if any(key.startswith("eval/") for key in metrics):
            self.plot()  # the curve is refreshed at each evaluation

    def plot(self) -> None:
        with file_errors(self.dir / "curve.png", "write"):
            plot_learning_curve(self.dir, *curve_lines(self.build), title=curve_title(self.dir, self.build))

    def checkpoint(self, rank_states: list[Any] | None = None) -> None:
        """Save the trainer's state unless it holds a NaN or an infinity (then the last good one stays).

        A distributed run passes every rank's state, rank 0's first.
        """
        check_still_held(self.dir)
        rank_states = rank_states or [self.build.trainer.state_dict()]
        check_finite_state(rank_states[0], self.build.trainer, self.dir / CHECKPOINT.parent)
        with file_errors(self.dir / CHECKPOINT, "write checkpoint"):
            save_checkpoint(self.dir / CHECKPOINT, checkpoint_payload(self.build, rank_states, self.best_eval))
        if self.trackers is not None:
            self.trackers.flush()  # these rows will not be trained again

    def best_checkpoint(self, best_eval: dict[str, Any]) -> None:
        """The trainer's state as ``best.pt``: its evaluation is the best so far. Rank 0's state alone in a
        distributed run (``eval`` reads it; resume continues from ``latest.pt``)."""
        check_still_held(self.dir)
        self.best_eval = dict(best_eval)
        state = self.build.trainer.state_dict()
        check_finite_state(state, self.build.trainer, self.dir / CHECKPOINT.parent)
        with file_errors(self.dir / BEST_CHECKPOINT, "write checkpoint"):
            save_checkpoint(self.dir / BEST_CHECKPOINT, checkpoint_payload(self.build, [state], self.best_eval), keep_previous=False)

    def finish(self, summary: dict[str, Any], wall: float) -> None:
        """Log the final evaluation as the last row (so it is on the curve), then the summary."""
        final = {"eval/return": summary["eval_return_mean"]}
        if summary.get("normalised_score") is not None:
            final["eval/normalised_score"] = summary["normalised_score"]
        if summary.get("d4rl_normalised_score") is not None:
            final["eval/d4rl_normalised_score"] = summary["d4rl_normalised_score"]
        self.log(summary["steps"], wall, final)
        self.metrics.close()
        write_json(self.dir / SUMMARY_FILE, summary)
        if self.trackers is not None:
            self.trackers.finish([self.dir / "curve.png", self.dir / SUMMARY_FILE, self.dir / CHECKPOINT, self.dir / BEST_CHECKPOINT])


def declared_metrics(build: Build) -> list[str]:
    """Columns every row has from the start: the loss's declared terms (off-policy cells log rows
    before their first update) and the evaluation's."""
    entry = build.loss_entry
    declared = [f"loss/{t}" for t in (*entry.terms, *entry.reported)] if entry is not None else []
    declared.append("eval/return")
    if build.extras.get("dataset") is not None:
        declared.append("eval/normalised_score")
        if build.extras["dataset"].metadata.get("d4rl_reference"):
            declared.append("eval/d4rl_normalised_score")
    return declared
