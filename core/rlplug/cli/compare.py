"""``compare``: several runs' learning curves on one PNG and a table of their summaries (``rlplug.results.compare``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import CompareError
from .common import note, print_json


def add_compare_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    compare = sub.add_parser(
        "compare", parents=[common],
        help="runs' learning curves on one PNG (mean and min-max band over the seeds of a recipe) and their summaries",
    )  # fmt: skip
    compare.add_argument("run_dirs", nargs="*", metavar="RUN_DIR", help="run directories to compare")
    compare.add_argument("--recipe", metavar="NAME", help="every run of this recipe (NAME or NAME@VERSION) under --runs-dir")
    compare.add_argument("--runs-dir", default="runs", metavar="DIR", help="where --recipe looks (default: runs)")
    compare.add_argument("--out", metavar="FILE.png", help="the picture (default: compare.png, or compare-NAME.png with --recipe); replaces only a picture rlplug drew")
    compare.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from ..results.compare import draw, find_runs, group_rows, group_runs, read_runs, summary_rows

    if bool(args.run_dirs) == bool(args.recipe):
        raise CompareError("give run directories or --recipe NAME (one of the two)")
    from ..recipes.fields import file_stem

    out = Path(args.out) if args.out else Path(f"compare-{file_stem(args.recipe).replace('@', '-')}.png" if args.recipe else "compare.png")
    if out.suffix.lower() != ".png":
        raise CompareError(f"--out {out} must name a .png file")
    skipped: list[str] | None = None
    if args.recipe:  # the runs found: one that has not logged yet is left out with a note, not refused
        skipped, run_dirs = [], find_runs(args.recipe, args.runs_dir)
    else:
        run_dirs = args.run_dirs
    from ..util.outputs import PICTURE, check_output

    check_output(out, PICTURE, "compare --out")
    groups = group_runs(read_runs(run_dirs, skipped))
    for reason in skipped or ():
        note(f"left out: {reason}")
    # a file that cannot be written is an OSError naming it: the CLI's one line
    draw(groups, out, title=f"{args.recipe}: {sum(len(g.runs) for g in groups)} runs" if args.recipe else None)
    rows, totals = summary_rows(groups), group_rows(groups)
    if args.json:
        print_json({"png": str(out), "runs": rows, "groups": totals})
        return 0
    unit = "updates" if rows[0]["step_unit"] == "updates" else "env steps"
    print(compare_table(rows, unit))
    for total in totals:
        if total["runs"] > 1:
            print(group_line(total))
    print(f"curves: {out}")
    return 0


def compare_table(rows: list[dict[str, Any]], unit: str) -> str:
    from .tables import format_table

    def number(value: Any, digits: int = 1) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    body = []
    for row in rows:
        result = "-" if row["eval_return_mean"] is None else f"{row['eval_return_mean']:.1f} ± {row['eval_return_std']:.1f}"
        passed = "unfinished" if not row["finished"] else "-" if row["passed"] is None else "yes" if row["passed"] else "no"
        target = "-" if row["target"] is None else f"{row['target']:g}"
        body.append([row["run"], row["recipe"], row["backend"], row["env"], row["seed"], row["steps"], number(row["wall_seconds"]),
                     result, target, passed])  # fmt: skip
    return format_table(["run", "recipe", "backend", "env", "seed", unit, "wall s", "eval return", "target", "passed"], body)


def group_line(total: dict[str, Any]) -> str:
    if not total["finished"]:
        return f"{total['group']}: {total['runs']} runs, none finished"
    return (f"{total['group']}: {total['runs']} runs, final eval return {total['eval_return_mean']:.1f} ± "
            f"{total['eval_return_std_over_runs']:.1f} over {total['finished']} finished (mean ± std over runs)"
            + (f", {total['passed']} of {total['with_target']} passed" if total["with_target"] else ", no target"))  # fmt: skip
