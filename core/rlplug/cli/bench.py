"""``bench``: train recipes on their backends and check each one's target; optionally a Markdown report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import RlplugError
from ..tables import format_table
from .common import open_session, print_json
from .dataset import ensure_dataset
from .training import option_override


def cmd_bench(args: argparse.Namespace) -> int:
    from ..runs import train

    session = open_session(args)
    if args.all:
        if args.names:
            raise RlplugError("bench --all runs every first-party recipe; give recipe names or --all, not both")
        names = [n for n, v in session.book.refs() if session.book.raw(f"{n}@{v}")[1].source.endswith("registry.toml")]
    else:
        names = args.names or [n for n, _ in session.book.refs()]
    report = Path(args.report) if args.report else (Path("BENCHMARKS.md") if args.all else None)
    backends = [b for b in (args.backend or "").split(",") if b]
    rows, data = [], []
    for name in dict.fromkeys(names):
        overrides = list(args.set or ())
        if args.steps is not None:  # checked by the recipe's own domain, as --set steps=N is
            overrides.append(option_override("steps", args.steps))
        if args.seed is not None:
            overrides.append(option_override("seed", args.seed))
        recipe = session.resolve(name, overrides)
        spec = session.host.algorithm(recipe.algorithm)
        ensure_dataset(session, recipe, quiet=args.json)
        for backend in backends or list(spec.backends):
            build = session.build(recipe, backend)
            if not args.json:
                print(f"training {recipe.ref} on {backend} ...", file=sys.stderr)
            run_dir = None
            if args.runs_dir:  # keep each row's run directory (metrics, curve.png) for the report
                run_dir = Path(args.runs_dir) / f"{recipe.name}-{backend}-seed{recipe.seed}"
                if run_dir.exists():
                    raise RlplugError(f"{run_dir} already exists; choose another --runs-dir")
            try:
                summary = train(build, run_dir=run_dir, progress=not args.json)
            finally:
                build.trainer.close()
            data.append(summary)
            rows.append(bench_row(summary))
            if report is not None:  # rewritten after each row: a long bench leaves a partial report
                from ..report import write_report

                write_report(report, data, "rlplug " + " ".join(sys.argv[1:]))
    if args.json:
        print_json(data)
    else:
        print(format_table(["recipe", "backend", "steps", "wall s", "steps/s", "eval return", "target", "result"], rows))
    return 0 if all(row["passed"] for row in data) else 1


def bench_row(summary: dict[str, Any]) -> list[Any]:
    unit = "upd" if summary.get("step_unit") == "updates" else ""
    result = f"{summary['eval_return_mean']:.1f} ± {summary['eval_return_std']:.1f}"
    target = f"{summary['target']:g}"
    if summary.get("target_metric") == "normalised_score":
        result += f" (score {summary['normalised_score']:.1f})" if summary.get("normalised_score") is not None else " (no score)"
        target = f"score {target}"
        if summary.get("beat_dataset"):
            target += f", > data {summary['dataset_return_mean']:.0f}"
    return [summary["recipe"], summary["backend"], f"{summary['steps']}{' ' + unit if unit else ''}", f"{summary['wall_seconds']:.1f}",
            f"{summary['steps_per_second']:.0f}", result, target, "pass" if summary["passed"] else "FAIL"]
