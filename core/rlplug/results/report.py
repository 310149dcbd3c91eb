"""``rlplug bench --report``: the benchmark table as Markdown and JSON, with the machine it ran on."""

from __future__ import annotations

import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..util.outputs import BENCH_JSON, BENCH_REPORT, check_output, write_file

COLUMNS = ("recipe", "backend", "tier", "seeds", "steps", "wall s / seed", "steps/s", "updates/s", "eval: mean ± std over seeds (min)",
           "95% CI of the mean", "target", "reference", "pass")


def machine(jobs: int = 1) -> dict[str, Any]:
    """Where the numbers come from: CPU, cores, torch threads, library versions, time. ``jobs`` > 1: the runs trained
    in that many processes at once, each on one torch thread (``rlplug bench --jobs``), not in this process."""
    from ..runs import versions

    threads = 1  # with --jobs each training process runs one torch thread: no need to import torch here
    if jobs == 1:
        try:
            import torch

            threads = torch.get_num_threads()
        except ImportError:
            threads = None
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_threads": threads,
        "jobs": jobs,
        "versions": versions(),
    }


def machine_lines(info: dict[str, Any]) -> list[str]:
    """``machine()``'s record as the two lines a report shows (a record from before ``jobs`` was kept reads as one job)."""
    jobs = info.get("jobs") or 1
    at_once = f" in each of {jobs} training processes at once" if jobs > 1 else ""
    return [f"Machine: {info.get('processor')}, {info.get('cpu_count')} cores, torch threads {info.get('torch_threads')}{at_once}, "
            f"{info.get('platform')}.",
            "Versions: " + ", ".join(f"{k} {v}" for k, v in info.get("versions", {}).items()) + "."]


def _row(row: dict[str, Any]) -> list[str]:
    """A bench row's cells; a row of an earlier, one-seed table (a run's summary) is read as a one-seed row."""
    from .seeded import as_seeded, ci_text, reference_text, result_text, seeds_text, target_text, verdict_text, wall_text

    row = as_seeded(row)
    offline = row.get("step_unit") == "updates"
    updates = row.get("updates_per_second")
    return [
        row["recipe"],
        row["backend"],
        row.get("tier") or "-",
        seeds_text(row),
        f"{row['steps']:,}" + (" updates" if offline else ""),
        wall_text(row),
        "-" if offline or not row.get("steps_per_second") else f"{row['steps_per_second']:.0f}",
        f"{updates:.0f}" if updates else "-",
        result_text(row),
        ci_text(row),
        target_text(row),
        reference_text(row.get("reference")),
        verdict_text(row, "yes", "**no**"),
    ]


NOTES = [
    "Each row trains its recipe once per seed. A row passes when the mean over its seeds meets the target and at most "
    "one seed misses it. ± is the sample standard deviation over seeds (n − 1); the 95 % confidence interval of the mean "
    "is a percentile bootstrap (10,000 resamples, seeded); a one-seed row shows the spread over its evaluation episodes instead. "
    "`reference` is the published result the recipe cites (registry.toml).",
    "Offline rows count gradient updates; their score is 100 × (R − R_random) / (R_expert − R_random) with the reference "
    "returns the dataset recorded.",
]


def write_report(path: Path, rows: list[dict[str, Any]], command: str, jobs: int = 1) -> None:
    """``path`` (Markdown) and ``path`` with ``.json`` (the rows, each with its per-seed summaries, and the machine)."""
    info = machine(jobs)
    lines = [
        "# rlplug benchmarks",
        "",
        f"Produced by `{command}` on {info['date']}.",
        "",
        *machine_lines(info),
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(_row(r)) + " |" for r in rows]
    for note in NOTES:
        lines += ["", note]
    lines += [""]
    data = json.dumps({"machine": info, "command": command, "rows": rows}, indent=2) + "\n"
    write_file(path, BENCH_REPORT, "bench --report", lambda partial: partial.write_text("\n".join(lines)))
    write_file(path.with_suffix(".json"), BENCH_JSON, "bench --report", lambda partial: partial.write_text(data))


def check_report_paths(path: Path) -> None:
    """Refuse, before anything trains, a report path (or its JSON) holding something an earlier bench did not write."""
    check_output(path, BENCH_REPORT, "bench --report")
    check_output(path.with_suffix(".json"), BENCH_JSON, "bench --report")
