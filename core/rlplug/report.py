"""``rlplug bench --report``: the benchmark table as Markdown and JSON, with the machine it ran on."""

from __future__ import annotations

import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

COLUMNS = ("recipe", "backend", "tier", "seeds", "steps", "wall s / seed", "steps/s", "updates/s", "eval: mean ± std over seeds (min)",
           "95% CI of the mean", "target", "reference", "pass")


def machine() -> dict[str, Any]:
    """Where the numbers come from: CPU, cores, torch threads, library versions, time."""
    from .runs import versions

    threads = None
    try:
        import torch

        threads = torch.get_num_threads()
    except ImportError:
        pass
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_threads": threads,
        "versions": versions(),
    }


def _row(row: dict[str, Any]) -> list[str]:
    """A bench row's cells; a row of an earlier, one-seed table (a run's summary) is read as a one-seed row."""
    from .seeded import as_seeded, ci_text, reference_text, result_text, seeds_text, target_text, wall_text

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
        "yes" if row["passed"] else "**no**",
    ]


NOTES = [
    "Each row trains its recipe once per seed. A row passes when the mean over its seeds meets the target and at most "
    "one seed misses it. ± is the sample standard deviation over seeds (n − 1); the 95 % confidence interval of the mean "
    "is a percentile bootstrap (10,000 resamples, seeded); a one-seed row shows the spread over its evaluation episodes instead. "
    "`reference` is the published result the recipe cites (registry.toml).",
    "Offline rows count gradient updates; their score is 100 × (R − R_random) / (R_expert − R_random) with the reference "
    "returns the dataset recorded.",
]


def write_report(path: Path, rows: list[dict[str, Any]], command: str) -> None:
    """``path`` (Markdown) and ``path`` with ``.json`` (the rows, each with its per-seed summaries, and the machine)."""
    info = machine()
    lines = [
        "# rlplug benchmarks",
        "",
        f"Produced by `{command}` on {info['date']}.",
        "",
        f"Machine: {info['processor']}, {info['cpu_count']} cores, torch threads {info['torch_threads']}, {info['platform']}.",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()) + ".",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(_row(r)) + " |" for r in rows]
    for note in NOTES:
        lines += ["", note]
    lines += [""]
    path.write_text("\n".join(lines))
    path.with_suffix(".json").write_text(json.dumps({"machine": info, "command": command, "rows": rows}, indent=2) + "\n")
