"""Merge several ``rlplug bench --report FILE.md`` results (FILE.json) into one bench table JSON.

Seeded benches of a catalogue are often run as several commands (one backend, one recipe at a time on a shared
machine); this puts their rows in one file with every command that produced them, in the format
``rlplug bench --report`` writes, so ``benchmarks/all.py --import-bench OUT`` can adopt it::

    python benchmarks/merge_bench.py benchmarks/results/catalogue-*.json --out benchmarks/results/catalogue.json

A later file's row for the same (recipe, backend) replaces an earlier one's; ``--drop REF`` leaves out the rows
of a superseded recipe version (``--drop sac-pendulum@1``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def merge(paths: list[Path], drop: tuple[str, ...] = ()) -> dict:
    rows: dict[tuple[str, str], dict] = {}
    commands, machine = [], None
    for path in paths:
        data = json.loads(path.read_text())
        machine = machine or data.get("machine")
        commands.append(f"{data.get('command', '?')} ({data.get('machine', {}).get('date', '?')})")
        for row in data.get("rows", []):
            if row["recipe"] not in drop:
                rows[(row["recipe"], row["backend"])] = row
    return {"machine": machine, "command": "; ".join(commands), "rows": [rows[key] for key in sorted(rows)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--drop", action="append", default=[], metavar="RECIPE@N", help="leave out this recipe version's rows")
    args = parser.parse_args()
    inputs = [p for p in args.inputs if p.resolve() != args.out.resolve()]
    args.out.write_text(json.dumps(merge(inputs, tuple(args.drop)), indent=2) + "\n")
    print(f"wrote {args.out} from {len(inputs)} files")


if __name__ == "__main__":
    main()
