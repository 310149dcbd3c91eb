"""``rlplug bench --report``: the benchmark table as Markdown and JSON, with the machine it ran on."""

from __future__ import annotations

import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

COLUMNS = ("recipe", "backend", "steps", "wall s", "steps/s", "updates/s", "eval return", "target", "pass")


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


def _row(summary: dict[str, Any]) -> list[str]:
    offline = summary.get("step_unit") == "updates"
    updates = summary.get("updates_per_second")
    result = f"{summary['eval_return_mean']:.1f} ± {summary['eval_return_std']:.1f}"
    target = f"{summary['target']:g}"
    if summary.get("target_metric") == "normalised_score":
        result += f" (score {summary['normalised_score']:.1f})" if summary.get("normalised_score") is not None else ""
        target = f"score ≥ {summary['target']:g}" + (f", > data {summary['dataset_return_mean']:.0f}" if summary.get("beat_dataset") else "")
    return [
        summary["recipe"],
        summary["backend"],
        f"{summary['steps']:,}" + (" updates" if offline else ""),
        f"{summary['wall_seconds']:.1f}",
        "-" if offline else f"{summary['steps_per_second']:.0f}",
        f"{updates:.0f}" if updates else "-",
        result,
        target,
        "yes" if summary["passed"] else "**no**",
    ]


def write_report(path: Path, summaries: list[dict[str, Any]], command: str) -> None:
    """``path`` (Markdown) and ``path`` with ``.json`` (the summaries and the machine)."""
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
    lines += ["| " + " | ".join(_row(s)) + " |" for s in summaries]
    lines += ["", "Offline rows count gradient updates; their score is 100 × (R − R_random) / (R_expert − R_random) "
              "with the reference returns the dataset recorded.", ""]
    path.write_text("\n".join(lines))
    path.with_suffix(".json").write_text(json.dumps({"machine": info, "command": command, "rows": summaries}, indent=2) + "\n")
