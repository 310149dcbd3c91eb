"""Record Zoo verification results: the table in docs/zoo.md and each pair's ``result`` in verified.toml.

Reads bench report JSONs of ``zoo:`` rows (``rlplug bench zoo:... --report F.md`` or ``rlplug bench --from-runs
DIR --report F.md``, which judges Zoo runs by their current record), one row per (pair, backend), and

- writes the table between ``<!-- zoo-verified -->`` markers in docs/zoo.md: per pair and backend the seeds,
  rlplug's evaluation return over seeds, the target, the Zoo's score and the random policy's return;
  a pair's ``why`` in verified.toml (why it misses the Zoo's score) is listed under the table;
- sets ``result`` in ``core/rlplug/interop/zoo/verified.toml`` for every pair whose default-backend (skrl) row
  covers 3 seeds: "pass"/"FAIL" with the numbers and the reports' command, so ``rlplug recipes --zoo`` shows it.

    python benchmarks/zoo_verified.py benchmarks/results/zoo-verify-skrl.json benchmarks/results/zoo-verify-torchrl.json
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "zoo.md"
VERIFIED = ROOT / "core" / "rlplug" / "interop" / "zoo" / "verified.toml"
MARK = "<!-- zoo-verified -->"


def rows(paths: list[Path]) -> list[dict[str, Any]]:
    found = []
    for path in paths:
        document = json.loads(path.read_text())
        found += [dict(row, command=document.get("command", "")) for row in document["rows"] if row["recipe"].startswith("zoo:")]
    return sorted(found, key=lambda r: (r["recipe"], r["backend"] != "skrl", r["backend"]))


def returns_text(row: dict[str, Any]) -> str:
    values = ", ".join(f"{v:.1f}" for v in row["metric_values"] if v is not None)
    return f"{row['mean']:.1f} ± {row['std']:.1f} ({values})" if len(row["seeds"]) > 1 else f"{row['mean']:.1f}"


def table(found: list[dict[str, Any]], random: dict[str, Any], why: dict[str, str]) -> str:
    lines = [
        "| pair | backend | steps | seeds | return (mean ± std over seeds; per seed) | target | Zoo (one agent) | random | result |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for row in found:
        pair = row["recipe"].removeprefix("zoo:").partition("@")[0]
        reference = row.get("reference") or {}
        zoo = f"{reference['value']:.1f} ± {reference.get('std', 0):.1f}" if reference else "-"
        rand = random.get(row["env"], {}).get("mean")
        lines.append(
            f"| `zoo:{pair}` | {row['backend']} | {row['steps']:,} | {','.join(map(str, row['seeds']))} | {returns_text(row)} "
            f"| ≥ {row['target']:g} | {zoo} | {'-' if rand is None else f'{rand:.1f}'} | {'pass' if row['passed'] else '**FAIL**'} |"
        )
        if pair in why and f"`zoo:{pair}`" not in "".join(notes):
            notes.append(f"- `zoo:{pair}`: {why[pair]}")
    return "\n".join(lines + ([""] + notes if notes else []))


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    block = f"{MARK}\n{text}\n{MARK}"
    if doc.count(MARK) == 2:
        doc = re.sub(f"{MARK}.*?{MARK}", lambda _: block, doc, flags=re.S)
    elif "ZOO_TABLE" in doc:
        doc = doc.replace("ZOO_TABLE", block)
    else:
        raise SystemExit(f"{DOC} has neither the {MARK} markers nor ZOO_TABLE")
    DOC.write_text(doc)


def write_results(found: list[dict[str, Any]]) -> list[str]:
    """``result = "..."`` under each 3-seed skrl row's pair table in verified.toml (replacing an older one)."""
    text, done = VERIFIED.read_text(), []
    for row in found:
        if row["backend"] != "skrl" or len(row["seeds"]) < 3:
            continue
        pair = row["recipe"].removeprefix("zoo:").partition("@")[0]
        others = [r for r in found if r["recipe"] == row["recipe"] and r["backend"] != "skrl"]
        result = f"skrl seeds {','.join(map(str, row['seeds']))}: {returns_text(row)}, {'pass' if row['passed'] else 'FAIL'}"
        for other in others:
            result += f"; {other['backend']} seed {','.join(map(str, other['seeds']))}: {returns_text(other)}, {'pass' if other['passed'] else 'FAIL'}"
        header = f'\n[pairs."{pair}"]\n'  # at a line's start: the file's header comment shows an example
        if header not in text:
            continue
        start = text.index(header) + len(header)
        end = text.find("\n[", start)
        body = text[start: None if end < 0 else end]
        body = re.sub(r'^result = ".*"\n', "", body, flags=re.M).rstrip("\n") + f'\nresult = "{result}"\n'
        text = text[:start] + body + ("" if end < 0 else text[end:])
        done.append(pair)
    VERIFIED.write_text(text)
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    args = parser.parse_args()
    found = rows(args.reports)
    random_file = ROOT / "benchmarks" / "results" / "random_returns_zoo.json"
    random = json.loads(random_file.read_text())["data"] if random_file.exists() else {}
    import tomllib

    why = {pair: entry["why"] for pair, entry in tomllib.loads(VERIFIED.read_text())["pairs"].items() if "why" in entry}
    write_doc(table(found, random, why))
    done = write_results(found)
    print(f"{len(found)} rows into {DOC.relative_to(ROOT)}; results for {len(done)} pairs in {VERIFIED.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
