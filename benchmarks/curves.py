"""Learning curves of seeded bench rows: ``docs/curves/<recipe>.png`` per recipe, both backends on one plot.

Reads ``rlplug bench --seeds ... --runs-dir DIR --report FILE.md`` results (FILE.json; or an all.py section
envelope holding such rows), whose per-seed runs name their run directory, and draws each recipe with
``rlplug compare``'s reading and plotting (``rlplug.results.compare``): per backend the mean over seeds with a min–max
band, of the training-episode return and of the evaluation return, and the recipe's return target as a dashed
line. BENCHMARKS.md links each row to its recipe's picture when it exists (``all.py``).

    python benchmarks/curves.py benchmarks/results/catalogue-skrl.json benchmarks/results/catalogue-torchrl.json
    python benchmarks/curves.py results.json --out /tmp/curves
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CURVES = ROOT / "docs" / "curves"


def file_stem(name: str) -> str:
    """A recipe name as a file name (``zoo:ppo/Acrobot-v1`` -> ``zoo-ppo-Acrobot-v1``), as rlplug names run folders."""
    from rlplug.recipes.fields import file_stem as stem

    return stem(name)


def recipe_name(ref: str) -> str:
    """``ppo-cartpole@1`` -> ``ppo-cartpole`` (a picture holds every version's rows of one recipe name)."""
    return ref.partition("@")[0]


def bench_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of a ``rlplug bench --report`` JSON, or of an all.py envelope (``{"data": {"rows": ...}}``)."""
    return list(document.get("rows") or document.get("data", {}).get("rows") or [])


def resolve_run_dir(run_dir: str, bases: Sequence[Path]) -> Path:
    """A run directory as recorded (absolute, or relative to where the bench ran): the first base it exists under."""
    path = Path(run_dir)
    if path.is_absolute():
        return path
    return next((base / path for base in bases if (base / path).is_dir()), bases[0] / path)


def run_dirs_by_recipe(rows: Iterable[Mapping[str, Any]], bases: Sequence[Path] | None = None) -> dict[str, list[Path]]:
    """Each recipe name's run directories over all its rows (every backend, every seed), in row order; a relative
    one is looked for under ``bases`` (default: the working directory, then the repository root)."""
    bases = bases or (Path.cwd(), ROOT)
    found: dict[str, list[Path]] = {}
    for row in rows:
        dirs = [resolve_run_dir(run["run_dir"], bases) for run in row.get("runs") or [] if run.get("run_dir")]
        if dirs:
            found.setdefault(recipe_name(row["recipe"]), []).extend(dirs)
    return found


def draw_recipe(name: str, run_dirs: Sequence[Path], out_dir: Path) -> tuple[Path, list[str]]:
    """``out_dir/<name>.png`` from the runs ``rlplug compare`` can read; the reasons any others were left out."""
    from rlplug.results.compare import draw, group_runs, read_runs

    skipped: list[str] = []
    groups = group_runs(read_runs(run_dirs, skipped))
    title = f"{name}: " + ", ".join(f"{g.label.partition(' on ')[2] or g.label} ({len(g.runs)} seed{'s' if len(g.runs) > 1 else ''})"
                                    for g in groups)  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)
    # evaluation as a band: an offline run evaluates every eval_every updates, an online one at its end
    return draw(groups, out_dir / f"{file_stem(name)}.png", title=title, evaluation_band=True), skipped


def write_curves(documents: Iterable[Mapping[str, Any]], out_dir: Path = CURVES,
                 bases: Sequence[Path] | None = None) -> dict[str, Path]:  # fmt: skip
    """A picture per recipe whose rows name run directories; returns ``{recipe name: picture}``."""
    from rlplug.errors import RlplugError

    rows = [row for document in documents for row in bench_rows(document)]
    written = {}
    for name, run_dirs in run_dirs_by_recipe(rows, bases).items():
        try:
            written[name], skipped = draw_recipe(name, run_dirs, out_dir)
        except RlplugError as err:  # no readable run at all (moved or deleted run dirs): say so, draw the others
            print(f"{name}: no curve ({err})", file=sys.stderr)
            continue
        for reason in skipped:
            print(f"{name}: left out {reason}", file=sys.stderr)
    return written


def existing_curves(rows: Iterable[Mapping[str, Any]], curves_dir: Path = CURVES, page_dir: Path = ROOT) -> dict[str, str]:
    """``{recipe name: link relative to the page}`` for the rows' recipes that have a picture in ``curves_dir``."""
    links = {}
    for row in rows:
        name = recipe_name(row["recipe"])
        picture = curves_dir / f"{file_stem(name)}.png"
        if picture.is_file():
            links[name] = Path(os.path.relpath(picture, page_dir)).as_posix()
    return links


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=Path, help="seeded bench JSON files (rlplug bench --report) with run dirs")
    parser.add_argument("--out", type=Path, default=CURVES, help="where the pictures go (default docs/curves)")
    args = parser.parse_args()
    documents = [json.loads(path.read_text()) for path in args.inputs]
    written = write_curves(documents, args.out, (Path.cwd(), ROOT, *{p.resolve().parent for p in args.inputs}))
    for name, path in written.items():
        print(f"{name}: {path}")
    if not written:
        print("no curves: no row names a run directory (bench with --runs-dir DIR)", file=sys.stderr)


if __name__ == "__main__":
    main()
