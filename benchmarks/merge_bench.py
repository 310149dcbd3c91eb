"""Merge several ``rlplug bench --report FILE.md`` results (FILE.json) into one bench table JSON.

Seeded benches of a catalogue are often run as several commands (one backend, one recipe at a time on a shared
machine); this puts their rows in one file with every command that produced them, in the format
``rlplug bench --report`` writes, so ``benchmarks/all.py --import-bench OUT`` can adopt it::

    python benchmarks/merge_bench.py benchmarks/results/catalogue-*.json --out benchmarks/results/catalogue.json

A later file's row for the same (recipe, backend) replaces an earlier one's, unless ``--combine-seeds`` is given
and the two rows ran the same budget: then they become one row over all their seeds, a seed in both taken from the
later row (a re-measured seed replaces its old run, the others stay), recomputed by ``rlplug bench``'s own
``rlplug.results.seeded.aggregate`` (seeds run as separate commands, e.g. two at once on two cores).
``--drop REF`` leaves out the rows of a superseded recipe version (``--drop sac-pendulum@1``).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from render import split_commands
from rlplug.util.commands import portable_text

_DATE = r"\(\d{4}-\d\d-\d\dT[^()]*\)"  # "(2026-12-03T16:33:03+00:00)", as merge() dates a command
_DATED = re.compile(_DATE + "$")
_DOUBLED = re.compile(f"({_DATE})(?: {_DATE})+$")


def combined(old: dict, new: dict) -> dict | None:
    """One row over both rows' seeds, the new row's run where both have a seed, when the budgets match (else ``None``)."""
    from rlplug.results.seeded import aggregate

    if old.get("steps") != new.get("steps") or not (old.get("runs") and new.get("runs")):
        return None
    remeasured = {r.get("seed") for r in new["runs"]}
    kept = [r for r in old["runs"] if r.get("seed") not in remeasured]
    runs = sorted([*kept, *new["runs"]], key=lambda r: r.get("seed", 0))
    return aggregate(runs, recipe=new["recipe"], backend=new["backend"], seeds=[r.get("seed") for r in runs],
                     tier=new.get("tier"), reference=new.get("reference"), target=new.get("target"))


def dated(command: str, date: str) -> str:
    """``command (date)``, unless ``command`` is a merged file's list, whose commands carry their own dates (its
    machine date is only its first run's); a date doubled by an earlier merge is dropped."""
    commands = [_DOUBLED.sub(r"\1", c) for c in split_commands(command)]
    if all(_DATED.search(c) for c in commands):
        return "; ".join(commands)
    return f"{command} ({date})"


def merge(paths: list[Path], drop: tuple[str, ...] = (), combine_seeds: bool = False) -> dict:
    rows: dict[tuple[str, str], dict] = {}
    commands, machine = [], None
    for path in paths:
        data = json.loads(path.read_text())
        machine = machine or data.get("machine")
        commands.append(dated(portable_text(data.get("command", "?")), data.get("machine", {}).get("date", "?")))
        for row in data.get("rows", []):
            if row["recipe"] in drop:
                continue
            key = (row["recipe"], row["backend"])
            both = combined(rows[key], row) if combine_seeds and key in rows else None
            rows[key] = both or row
    return {"machine": machine, "command": "; ".join(commands), "rows": [rows[key] for key in sorted(rows)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--drop", action="append", default=[], metavar="RECIPE@N", help="leave out this recipe version's rows")
    parser.add_argument("--combine-seeds", action="store_true", help="join rows of the same recipe and budget into one over all their seeds (a seed in both: the later run)")
    args = parser.parse_args()
    if any(p.resolve() == args.out.resolve() for p in args.inputs):
        # reading and rewriting one file in one go is where rows get lost: merge from a copy instead
        parser.exit(2, f"merge_bench: --out {args.out} is also an input; copy it first (cp {args.out} /tmp/prev.json) "
                       f"and merge /tmp/prev.json\n")  # fmt: skip
    args.out.write_text(json.dumps(merge(args.inputs, tuple(args.drop), args.combine_seeds), indent=2) + "\n")
    print(f"wrote {args.out} from {len(args.inputs)} files")


if __name__ == "__main__":
    main()
