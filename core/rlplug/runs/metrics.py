"""``metrics.csv`` and TensorBoard events under ``tb/``: the same scalars, one row per training iteration."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import RunDirError
from .rundir import file_errors


class MetricsLog:
    """Appends rows to ``metrics.csv`` (keeping every row a resumed run wrote) and scalars to TensorBoard.

    ``unit`` heads the first column (the x axis: ``env_steps`` or ``updates``); ``declared`` metrics get
    columns from the first row on, so an off-policy run's warm-up rows line up with its later ones.
    """

    def __init__(self, run_dir: Path, unit: str, declared: Iterable[str] = ()) -> None:
        self.dir = run_dir
        self.unit = unit
        self.declared = list(declared)
        self.path = run_dir / "metrics.csv"
        self.columns: list[str] | None = None
        if self.path.exists():  # a resumed run: keep its columns, and find out now whether rows can be added
            with file_errors(self.path, "write metrics file"):
                try:
                    with self.path.open(newline="") as handle:
                        self.columns = next(csv.reader(handle), None)
                except (ValueError, csv.Error) as err:  # not text, or not CSV
                    raise RunDirError(f"metrics file {self.path} is unreadable: {err}") from None
                with self.path.open("a"):
                    pass
        self._tb = None

    def log(self, progress: int, wall: float, metrics: dict[str, float]) -> None:
        with file_errors(self.path, "write metrics file"):
            self._log(progress, wall, metrics)

    def _log(self, progress: int, wall: float, metrics: dict[str, float]) -> None:
        row = {self.unit: progress, "wall_s": round(wall, 3), **metrics}
        if self.columns is None:
            names = set(metrics) | set(self.declared)
            self.columns = [self.unit, "wall_s", "train/episode_return", *sorted(names - {"train/episode_return"})]
            with self.path.open("w", newline="") as handle:
                csv.writer(handle).writerow(self.columns)
        elif not set(metrics) <= set(self.columns):
            self._widen(sorted(set(metrics) - set(self.columns)))
        with self.path.open("a", newline="") as handle:
            csv.writer(handle).writerow([_fmt(row.get(c, "")) for c in self.columns])
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
        partial = self.path.with_suffix(".csv.tmp")
        with partial.open("w", newline="") as handle:
            out = csv.writer(handle)
            out.writerow(self.columns)
            out.writerows(row + [""] * (len(self.columns) - len(row)) for row in rows)
        os.replace(partial, self.path)

    def _tensorboard(self):
        if self._tb is None:  # imported on first use: torch is heavy and a run may never log
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(log_dir=str(self.dir / "tb"), flush_secs=30)
        return self._tb


def _fmt(value: Any) -> Any:
    return f"{value:.6g}" if isinstance(value, float) else value
