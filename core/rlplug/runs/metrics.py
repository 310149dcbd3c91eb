"""``metrics.csv`` and TensorBoard events under ``tb/``: the same scalars, one row per training iteration.

A resumed run keeps one timeline: the rows a killed run wrote after its checkpoint are dropped (the resumed
run writes those steps again, from the checkpoint's state), TensorBoard purges its events past the
checkpoint (``purge_step``), and wall time continues from the last row kept.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import RunDirError
from .rundir import file_errors


class MetricsLog:
    """Appends rows to ``metrics.csv`` and, with ``tensorboard``, scalars to ``tb/``.

    ``unit`` heads the first column (the x axis: ``env_steps`` or ``updates``); ``declared`` metrics get
    columns from the first row on, so an off-policy run's warm-up rows line up with its later ones.
    ``resumed_at`` is the progress of the checkpoint a resumed run starts from: rows past it are dropped.
    A row logged at the progress of the row before it (the final evaluation) is merged into that row.
    """

    def __init__(self, run_dir: Path, unit: str, declared: Iterable[str] = (), tensorboard: bool = True,
                 resumed_at: int | None = None) -> None:
        self.dir = run_dir
        self.unit = unit
        self.declared = list(declared)
        self.path = run_dir / "metrics.csv"
        self.tensorboard = tensorboard
        self.columns: list[str] | None = None
        self.last_row: dict[str, Any] | None = None
        self.wall_offset = 0.0
        self.dropped = 0
        # events past the checkpoint are orphans of the killed process; steps start at 1 on a fresh resume
        self.purge_step = None if resumed_at is None else resumed_at + 1
        if self.path.exists():  # a resumed run: keep its columns and the rows up to its checkpoint
            with file_errors(self.path, "write metrics file"):
                self._reopen(resumed_at)
        self._tb = None

    def _reopen(self, resumed_at: int | None) -> None:
        try:
            text = self.path.read_text()
            rows = list(csv.reader(io.StringIO(text)))
        except (ValueError, csv.Error) as err:  # not text, or not CSV
            raise RunDirError(f"metrics file {self.path} is unreadable: {err}") from None
        if not rows:
            return
        self.columns, body = rows[0], rows[1:]
        whole = body[:-1] if body and not text.endswith("\n") else body  # the last one cut short by a kill
        kept = [row for row in whole if _row_progress(row, len(self.columns)) is not None
                and (resumed_at is None or _row_progress(row, len(self.columns)) <= resumed_at)]
        self.dropped = len(body) - len(kept)
        if self.dropped:
            self._rewrite(kept)
        else:
            with self.path.open("a"):  # find out now whether rows can be added
                pass
        if kept:
            self.last_row = dict(zip(self.columns, kept[-1]))
            self.wall_offset = _float(self.last_row.get("wall_s")) or 0.0

    def log(self, progress: int, wall: float, metrics: dict[str, float]) -> None:
        with file_errors(self.path, "write metrics file"):
            self._log(progress, wall, metrics)

    def _log(self, progress: int, wall: float, metrics: dict[str, float]) -> None:
        row = {self.unit: progress, "wall_s": round(self.wall_offset + wall, 3), **metrics}
        if self.columns is None:
            names = set(metrics) | set(self.declared)
            self.columns = [self.unit, "wall_s", "train/episode_return", *sorted(names - {"train/episode_return"})]
            with self.path.open("w", newline="") as handle:
                csv.writer(handle).writerow(self.columns)
        elif not set(metrics) <= set(self.columns):
            self._widen(sorted(set(metrics) - set(self.columns)))
        line = {c: _fmt(row.get(c, "")) for c in self.columns}
        if self.last_row is not None and _int(self.last_row.get(self.unit)) == progress:
            line = {**self.last_row, **{c: v for c, v in line.items() if v != ""}}  # one row per step
            self._replace_last([line.get(c, "") for c in self.columns])
        else:
            with self.path.open("a", newline="") as handle:
                csv.writer(handle).writerow(line.values())
        self.last_row = {c: str(v) for c, v in line.items()}
        if self.tensorboard:
            with file_errors(self.dir / "tb", "write TensorBoard events to"):
                writer = self._tensorboard()
                for key, value in metrics.items():
                    writer.add_scalar(key, value, progress)

    def close(self) -> None:
        if self._tb is not None:
            with file_errors(self.dir / "tb", "write TensorBoard events to"):
                self._tb.close()

    def _widen(self, new_columns: list[str]) -> None:
        """Add columns for metrics that appear mid-run; rows already written are kept (atomic rewrite)."""
        with self.path.open(newline="") as handle:
            rows = list(csv.reader(handle))[1:]
        self.columns = [*self.columns, *new_columns]
        self._rewrite([row + [""] * (len(self.columns) - len(row)) for row in rows])
        if self.last_row is not None:
            self.last_row.update({c: "" for c in new_columns})

    def _replace_last(self, row: list[Any]) -> None:
        with self.path.open(newline="") as handle:
            rows = list(csv.reader(handle))[1:]
        self._rewrite([*rows[:-1], row])

    def _rewrite(self, rows: list[list[Any]]) -> None:
        """The header and ``rows``, swapped in at once: a kill leaves the old file or the new one."""
        partial = self.path.with_suffix(".csv.tmp")
        with partial.open("w", newline="") as handle:
            out = csv.writer(handle)
            out.writerow(self.columns)
            out.writerows(rows)
        os.replace(partial, self.path)

    def _tensorboard(self):
        if self._tb is None:  # imported on first use: torch is heavy and a run may never log
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(log_dir=str(self.dir / "tb"), flush_secs=30, purge_step=self.purge_step)
        return self._tb


def _row_progress(row: list[str], width: int) -> int | None:
    """The row's step, or ``None`` for a row that is not whole (fewer cells than the header)."""
    return _int(row[0]) if len(row) == width and row else None


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _fmt(value: Any) -> Any:
    return f"{value:.6g}" if isinstance(value, float) else value
