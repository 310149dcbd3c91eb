"""Render BENCHMARKS.md from the stored section results in ``benchmarks/results/*.json``.

Pure logic (JSON in, Markdown out; no torch, no timing), so it is unit-tested
(tests/test_benchmarks_render.py) and ``all.py --only`` can rerun one section and re-render the rest
from what is stored. Every stored file has the same envelope:
``{"section": NAME, "command": "...", "date": "ISO time", "data": {...}}``; ``data`` is what the
section's script printed as JSON (the bench section: ``{"machine": ..., "rows": [...]}`` as
``rlplug bench --report`` writes it).

Two optional inputs refine the recipe table: the random policy's returns (``results/random_returns.json``,
``random_returns.py``), for the aggregate line (``aggregate.py``: the IQM of normalised scores), and links to
the recipes' learning-curve pictures (``docs/curves/``, ``curves.py``), which ``all.py`` finds on disk.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (the tests), not only from all.py
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from aggregate import aggregate_rows  # noqa: E402

SECTIONS = ("bench", "overhead", "startup", "backend_ratio", "floor", "sac_floor", "optimizer", "ensemble", "ensemble_cells", "compile", "time_to_target", "scaling",
            "vector_modes", "wide_envs", "env_steps", "torch_envs", "eval_speed")
STORED = SECTIONS  # backend_ratio: backend_ratio.py's interleaved runs, and the ratios the bench rows give

GOALS = {
    "overhead": 0.97,  # rlplug steps/s ÷ plain steps/s, at least
    "startup_listing": 0.3,  # seconds, at most
    "startup_ready": 1.5,  # seconds beyond the backend's own import, at most
    "startup_floor": 1.5,  # a listing command's seconds ÷ the bare pluggy + entry-points interpreter's, at most
    "backend_ratio": 1.3,  # TorchRL wall ÷ skrl wall, at most
    "floor": 0.85,  # rlplug updates/s ÷ plain PyTorch updates/s, at least
    "time_to_target": 0.7,  # rlplug seconds ÷ SB3 seconds, at most
    "sac_floor_time": 0.6,  # rlplug SAC's seconds to target ÷ SB3's at SB3's 256x256 networks, at most (issue 48)
    "eval_speed": 1.5,  # `rlplug eval` seconds ÷ a plain script's (the same policy and episodes), at most
}

TITLES = {
    "bench": "Recipes",
    "overhead": "Overhead against plain scripts",
    "startup": "Startup",
    "backend_ratio": "TorchRL backend ÷ skrl backend",
    "floor": "Update floor",
    "sac_floor": "SAC at the CPU's limit: a fused floor, SB3 and rlplug at 256x256",
    "optimizer": "Adam implementation",
    "ensemble": "Critic ensembles: one batched module against the per-critic loop",
    "ensemble_cells": "Critic ensembles inside the cells (batched_critics)",
    "time_to_target": "Time to target against Stable-Baselines3",
    "scaling": "Scaling: one process against --nproc N",
    "compile": "Compiled updates (compile = true)",
    "vector_modes": "Parallel environments (vector_mode)",
    "wide_envs": "Wide vector environments against a plain batched PPO loop",
    "env_steps": "Vector modes alone: gymnasium sync and async against EnvPool",
    "torch_envs": "Torch-native vector envs against gymnasium's",
    "eval_speed": "Evaluating a run: `rlplug eval` against a plain script",
}

LISTING_COMMANDS = ("rlplug list", "rlplug recipes", "rlplug show ppo-cartpole", "rlplug --help")


def load_results(directory: Path) -> dict[str, dict[str, Any]]:
    """The stored envelope of each section that has a file in ``directory``."""
    found = {}
    for section in STORED:
        path = directory / f"{section}.json"
        if path.exists():
            found[section] = json.loads(path.read_text())
    return found


def spread(values: Iterable[float], digits: int = 3) -> str:
    """``mean (min–max)`` of the values, or just the value when there is one."""
    values = list(values)
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def verdict(met: bool | None) -> str:
    return "-" if met is None else ("yes" if met else "**no**")


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


def split_commands(command: str) -> list[str]:
    """The commands a merged section's ``command`` joins with "; " (``merge_bench.py``), each with its date."""
    return re.split(r"; (?=(?:rlplug|python|RLPLUG_\w+=\S+) )", command)


def provenance(envelope: dict[str, Any]) -> str:
    """Where a section's figures come from: its command and date, and the note stored with it, if any. A
    section merged from several commands (the seeded recipe table) lists them, folded, one a line."""
    command = str(envelope.get("command", "?"))
    note = f" {envelope['note']}" if envelope.get("note") else ""
    if "SCRATCH/" in command:  # rlplug.util.commands: where the machine that ran it had a folder outside the repository
        note += " `SCRATCH/` stands for a scratch directory of your choosing."
    commands = split_commands(command)
    if len(commands) == 1:
        return f"Produced by `{command}` on {envelope.get('date', '?')}.{note}"
    listed = "\n".join(f"- `{c}`" for c in commands)
    return (f"Produced by {len(commands)} commands, each with its date.{note}\n\n"
            f"<details><summary>The commands</summary>\n\n{listed}\n\n</details>")


def missing(section: str) -> list[str]:
    return [f"No stored result: run `python benchmarks/all.py --only {section}`.", ""]


# ---- sections -----------------------------------------------------------------------------------


def bench_rows(envelope: dict[str, Any]) -> list[dict[str, Any]]:
    return envelope["data"]["rows"]


def render_bench(envelope: dict[str, Any], row_cells: Callable[[dict[str, Any]], list[str]], columns: Iterable[str],
                 curves: Mapping[str, str] | None = None, random_returns: dict[str, Any] | None = None,
                 references: Mapping[str, Mapping[str, Any]] | None = None,
                 baselines: Mapping[str, str] | None = None) -> list[str]:  # fmt: skip
    """The recipe table (``row_cells``: ``rlplug bench --report``'s cells), a ``curve`` column when pictures exist
    (``curves``: recipe name -> link), the baselines beside their recipes, how many real recipes' rows pass, and the
    aggregate over rows (``random_returns``: its stored envelope). ``baselines`` (recipe name -> the recipe it is the
    baseline of, registry.toml's ``baseline_of``) marks the rows stored before rows carried it."""
    from rlplug.results.report import machine_lines
    from rlplug.results.seeded import pass_count

    data = envelope["data"]
    rows = with_baselines(data["rows"], baselines or {})
    machine = data.get("machine", {})
    lines = [f"## {TITLES['bench']}", "", provenance(envelope)]
    if machine:
        lines += ["", *machine_lines(machine)]
    header, cells = list(columns), [row_cells(row) for row in rows]
    if curves:
        header.append("curve")
        cells = [c + [curve_cell(row, curves)] for c, row in zip(cells, rows)]
    lines += [""] + table(header, cells)
    lines += ["", f"**{pass_count(rows)}.**", "", BENCH_NOTE, "", "Offline rows count gradient updates; their score is 100 × (R − R_random) / (R_expert − R_random) "
              "with the reference returns the dataset recorded.", ""]
    return lines + render_baselines(rows) + render_aggregate(rows, random_returns, references)


def with_baselines(rows: list[dict[str, Any]], baselines: Mapping[str, str]) -> list[dict[str, Any]]:
    """The rows, each baseline's marked with ``baseline_of`` (its own, else the registry's for its recipe name)."""
    marked = []
    for row in rows:
        of = row.get("baseline_of") or baselines.get(row["recipe"].partition("@")[0])
        marked.append({**row, "baseline_of": of} if of else row)
    return marked


def render_baselines(rows: list[dict[str, Any]]) -> list[str]:
    """Each baseline's row beside the row of the recipe it is the baseline of (``baseline_of``), on the same backend:
    what the recipe buys over its baseline (a recurrent core on a partially observable task). Nothing when the table
    has no such pair."""

    def result(r: dict[str, Any]) -> str:
        seeds = r.get("seeds") or [r.get("seed")]
        spread_text = f" ± {r['std']:.1f}" if len(seeds) > 1 and r.get("std") is not None else ""
        judged = "baseline" if r.get("baseline_of") else "-" if r.get("passed") is None else ("pass" if r["passed"] else "miss")
        return f"{r['mean']:.1f}{spread_text} ({len(seeds)} seed{'s' if len(seeds) != 1 else ''}, {judged})"

    by_key = {(r["recipe"].partition("@")[0], r["backend"]): r for r in rows if r.get("mean") is not None}
    cells = []
    for (name, backend), baseline in sorted(by_key.items()):
        r = by_key.get((baseline.get("baseline_of") or "", backend))
        if r is not None:
            cells.append([f"{r['recipe'].partition('@')[0]} / {name}", backend, r.get("env", "-"),
                          f"≥ {r['target']:g}" if r.get("target") is not None else "-", result(r), result(baseline)])
    if not cells:
        return []
    return ["### Baselines beside their recipes", "",
            "Each baseline recipe (`baseline_of` in registry.toml: built to miss its target, so it is neither a pass nor a "
            "failure) beside the recipe it is the baseline of, on the same backend: here feed-forward PPO against the same "
            "recipe with its recurrent core, on the same env with the same observations hidden, same budget and seeds.", "",
            *table(["recipe / baseline", "backend", "env", "target", "recipe", "baseline"], cells), ""]


def curve_cell(row: dict[str, Any], curves: Mapping[str, str]) -> str:
    name = row["recipe"].partition("@")[0]
    return f"[{name}]({curves[name]})" if name in curves else "-"


def aggregate_text(summary: dict[str, Any], total: int) -> str:
    """The aggregate line: the IQM and its interval over the scored rows, and how many rows were left out and why."""
    used = len(summary["scores"])
    skipped = "; ".join(f"{len(names)} {why} ({', '.join(names)})" for why, names in summary["skipped"].items())
    left_out = f" {total - used} of {total} rows left out: {skipped}." if skipped else ""
    if summary["iqm"] is None:
        return f"**Aggregate:** no row can be scored.{left_out}"
    low, high = summary["ci95"]
    return (f"**Aggregate:** interquartile mean of the normalised scores **{summary['iqm']:.1f}** (95 % CI {low:.1f} – {high:.1f}) "
            f"over {used} row{'s' if used != 1 else ''} (recipe × backend).{left_out}")


def render_aggregate(rows: list[dict[str, Any]], random_returns: dict[str, Any] | None,
                     references: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:  # fmt: skip
    """The IQM of normalised scores across the table, with each row's score; needs the random returns."""
    if random_returns is None:
        return ["No random returns stored: run `python benchmarks/random_returns.py` for the aggregate over recipes.", ""]
    summary = aggregate_rows(rows, random_returns["data"], references)
    lines = ["### Aggregate over recipes", "", aggregate_text(summary, len(rows)), "",
             f"{AGGREGATE_NOTE} `{random_returns.get('command', '?')}` on {random_returns.get('date', '?')} "
             f"({random_returns.get('protocol', 'uniform random actions')}).", ""]
    if summary["scores"]:
        cells = [[s["recipe"], s["backend"], f"{s['value']:.1f}", number_or_dash(s["random"]), number_or_dash(s["reference"]),
                  f"{s['score']:.1f}"] for s in summary["scores"]]  # fmt: skip
        lines += table(["recipe", "backend", "R (mean over seeds)", "R_random", "R_reference", "normalised score"], cells) + [""]
    return lines


def number_or_dash(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


AGGREGATE_NOTE = ("A row's normalised score is 100 × (R − R_random) / (R_reference − R_random): 0 is a uniformly random policy, 100 "
                  "the recipe's published reference (the row's own, else the one registry.toml names); offline rows are already "
                  "normalised (`-` below). The interquartile mean (the mean of the middle half of the rows' scores) resists one "
                  "recipe far off the others; its 95 % CI is a percentile bootstrap over rows (10,000 resamples, seeded). "
                  "Random returns from")


BENCH_NOTE = ("Each row trains its recipe once per seed (`rlplug bench --seeds`); rows stored before seeded benches are "
              "one-seed rows. A row passes when the mean over its seeds meets the target and at most one seed misses it. "
              "± is the sample standard deviation over seeds (n − 1), the 95 % confidence interval of the mean a percentile "
              "bootstrap (10,000 resamples, seeded); a one-seed row shows the spread over its evaluation episodes instead. "
              "Rows named `zoo:ALGO/ENV` are RL Baselines3 Zoo recipes, the Zoo's tuned hyperparameters translated key by "
              "key (docs/zoo.md), trained at the Zoo's own budget; their target is a normalised score of 0.9 between a random "
              "policy and the Zoo's one trained agent (its score is the reference column), and docs/zoo.md gives why a "
              "pair misses.")


def render_overhead(envelope: dict[str, Any]) -> list[str]:
    goal = GOALS["overhead"]
    rows = []
    for recipe, backends in envelope["data"].items():
        for backend, r in backends.items():
            wall, cpu = r["wall"], r["cpu"]
            rows.append([recipe, backend, f"{r['steps']:,}", str(r["repeats"]),
                         f"{statistics.mean(wall['plain_steps_per_s']):.0f}", f"{statistics.mean(wall['rlplug_steps_per_s']):.0f}",
                         spread(wall["ratios"]), spread(cpu["ratios"]), verdict(wall["ratio_mean"] >= goal or cpu["ratio_mean"] >= goal)])
    lines = [f"## {TITLES['overhead']}", "", provenance(envelope), "",
             f"rlplug ÷ a hand-written script of the same training (benchmarks/plain_*.py), steps/s of the training loop, "
             f"runs interleaved in fresh processes. Goal: ≥ {goal} (met when the wall or the CPU-time ratio's mean reaches it: "
             "the wall clock on this shared machine swings with other people's jobs, the process CPU time much less).", ""]
    lines += table(["recipe", "backend", "steps", "repeats", "plain steps/s", "rlplug steps/s",
                    "wall ratio mean (min–max)", "CPU ratio mean (min–max)", "goal met"], rows)
    return lines + [""]


def render_startup(envelope: dict[str, Any]) -> list[str]:
    data = envelope["data"]
    rows = []
    for name, s in data.items():
        goal: float | None = None
        if name.endswith(" ÷ floor"):
            goal = GOALS["startup_floor"]
        elif name.removesuffix(" (CPU s)") in LISTING_COMMANDS:
            goal = GOALS["startup_listing"]
        elif "beyond the backend import" in name:
            goal = GOALS["startup_ready"]
        met = None if goal is None else s["median"] <= goal
        rows.append([name.strip(), f"{s['median']:.3f}", f"{s['min']:.3f}–{s['max']:.3f}", f"≤ {goal}" if goal else "-", verdict(met)])
    lines = [f"## {TITLES['startup']}", "", provenance(envelope), "",
             "Cold wall seconds, a fresh interpreter each time with Python's bytecode cache on, as an installed package "
             "has it (median, min–max); `(CPU s)` rows: the same runs' CPU seconds. `ready to step`: `rlplug train` "
             "until the trainer's first step; the backend's own import (torch + the library + the first optimiser) is "
             "measured alone and subtracted. `floor`: a bare interpreter that imports pluggy and reads the `rlplug.plugins` "
             "entry points (their distributions' names and versions), run side by side with the listing commands; `÷ floor` "
             "rows: each command's seconds over the floor run beside it (a ratio, not seconds).", ""]
    return lines + table(["command", "median s", "min–max s", "goal", "met"], rows) + [""]


def backend_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per recipe run on both backends: TorchRL wall seconds ÷ skrl wall seconds (and steps/s the other way)."""
    by_recipe: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_recipe.setdefault(row["recipe"], {})[row["backend"]] = row
    ratios = []
    for recipe, cells in sorted(by_recipe.items()):
        if "skrl" in cells and "torchrl" in cells and cells["skrl"].get("wall_seconds") and cells["torchrl"].get("wall_seconds"):
            skrl, torchrl = cells["skrl"], cells["torchrl"]
            # per unit of work: the backends round budgets differently (TorchRL to whole batches)
            skrl_rate, torchrl_rate = skrl["steps"] / skrl["wall_seconds"], torchrl["steps"] / torchrl["wall_seconds"]
            ratios.append({"recipe": recipe, "skrl_wall_s": skrl["wall_seconds"], "torchrl_wall_s": torchrl["wall_seconds"],
                           "ratio": round(skrl_rate / torchrl_rate, 2)})
    return ratios


def top_shares(shares: Mapping[str, float], n: int) -> str:
    """The ``n`` largest cost centres of a profile as ``name 23 %, ...``."""
    return ", ".join(f"{name} {100 * share:.0f} %" for name, share in list(shares.items())[:n])


def render_interleaved_ratio(envelope: dict[str, Any]) -> list[str]:
    """backend_ratio.py's result: per recipe the interleaved TorchRL ÷ skrl ratios and, when profiled, where each
    backend's time goes."""
    goal = GOALS["backend_ratio"]
    data = envelope["data"]
    rows, profiles, met_on = [], [], 0
    for recipe, r in data["recipes"].items():
        skrl_ms = statistics.mean(x["ms_per_step"] for x in r["runs"]["skrl"])
        torchrl_ms = statistics.mean(x["ms_per_step"] for x in r["runs"]["torchrl"])
        met = min(r["wall"]["mean"], r["cpu"]["mean"]) <= goal
        met_on += met
        rows.append([recipe, f"{r['steps']:,}", f"{skrl_ms:.3f}", f"{torchrl_ms:.3f}", spread_from(r["wall"]), spread_from(r["cpu"]),
                     verdict(met)])
        if "profile" in r:
            p = r["profile"]
            profiles.append([recipe, f"{p['skrl']['profile_ms_per_step']:.2f}", f"{p['torchrl']['profile_ms_per_step']:.2f}",
                             top_shares(p["torchrl"]["shares"], 5), top_shares(p["skrl"]["shares"], 3)])
    cpu = [r["cpu"]["mean"] for r in data["recipes"].values()]
    lines = [f"## {TITLES['backend_ratio']}", "", provenance(envelope), "",
             f"Each recipe trained for the same stretch (after an untimed warm-up) on both backends in fresh processes, "
             f"alternating which goes first, {data['repeats']} repeats (benchmarks/backend_ratio.py): TorchRL seconds per "
             f"step (per update, offline) ÷ skrl's, by wall clock and by process CPU time. Goal: ≤ {goal} on every shared "
             f"recipe (met when either ratio's mean reaches it). CPU ratio across recipes: {spread(cpu, 2)}; met on "
             f"{met_on} of {len(cpu)}.", ""]
    lines += table(["recipe", "timed steps", "skrl ms/step", "torchrl ms/step", "wall ratio mean (min–max)",
                    "CPU ratio mean (min–max)", f"≤ {goal}"], rows) + [""]
    if profiles:
        lines += ["Where the time goes: one cProfile run per backend of the same stretch, self time grouped by the code it is "
                  "spent in (shares of the profiled time; cProfile inflates Python-heavy code, so the ms/step here are "
                  "higher than above).", ""]
        lines += table(["recipe", "skrl ms/step (profiled)", "torchrl ms/step (profiled)", "torchrl: largest shares",
                        "skrl: largest shares"], profiles) + [""]
    if data.get("note"):
        lines += [data["note"], ""]
    return lines


def render_backend_ratio(envelope: dict[str, Any], interleaved: dict[str, Any] | None = None) -> list[str]:
    goal = GOALS["backend_ratio"]
    ratios = backend_ratios(bench_rows(envelope))
    columns = ["recipe", "skrl wall s", "torchrl wall s", "torchrl ÷ skrl"]
    rows = [[r["recipe"], f"{r['skrl_wall_s']:.1f}", f"{r['torchrl_wall_s']:.1f}", f"{r['ratio']:.2f}"] for r in ratios]
    if interleaved is not None:  # the interleaved table is the measurement: no verdict on rows timed at other loads
        lines = render_interleaved_ratio(interleaved) + [
            "From the recipe table above (a seeded row's mean wall seconds per seed; the rows ran at different times, "
            "loads and code, so this is indicative only and judges nothing): TorchRL wall seconds per unit of work ÷ skrl's.", ""]
        return lines + table(columns, rows) + [""]
    values = [r["ratio"] for r in ratios]
    lines = [f"## {TITLES['backend_ratio']}", "",
             f"From the recipe table above (a seeded row's mean wall seconds per seed): TorchRL wall seconds per unit of work "
             f"÷ skrl's. Goal: ≤ {goal} on every shared recipe. Across recipes: {spread(values, 2) if values else '-'}; "
             f"met on {sum(v <= goal for v in values)} of {len(values)}.", ""]
    judged = [row + [verdict(r["ratio"] <= goal)] for row, r in zip(rows, ratios)]
    return lines + table([*columns, f"≤ {goal}"], judged) + [""]


def render_floor(envelope: dict[str, Any]) -> list[str]:
    goal = GOALS["floor"]
    rows = []
    for workload, cells in envelope["data"].items():
        for cell, r in cells.items():
            informational = cell == "torchrl-hand-written"
            cpu = r.get("ratio_cpu")  # older results have the wall-clock ratio only
            met = max(statistics.mean(r["ratio"]), statistics.mean(cpu) if cpu else 0.0) >= goal
            rows.append([workload, cell, f"{statistics.mean(r['plain']):.0f}", f"{statistics.mean(r['rlplug']):.0f}",
                         spread(r["ratio"]), spread(cpu) if cpu else "-", "-" if informational else verdict(met)])
    lines = [f"## {TITLES['floor']}", "", provenance(envelope), "",
             "Gradient updates/s of each cell ÷ a plain PyTorch loop doing the same maths on the same sizes, interleaved "
             f"rounds in one process (benchmarks/*_updates.py), by wall clock and by process CPU time. Goal: ≥ {goal} (met "
             "when either ratio's mean reaches it). `torchrl-hand-written` is upstream TorchRL's "
             "own loss class in a loop without rlplug: what TorchRL itself costs.", ""]
    return lines + table(["workload", "cell", "plain updates/s", "cell updates/s", "wall ratio mean (min–max)",
                          "CPU ratio mean (min–max)", f"≥ {goal}"], rows) + [""]


def render_optimizer(envelope: dict[str, Any]) -> list[str]:
    data = envelope["data"]
    rows = []
    for cell, r in data.get("cells", {}).items():
        rates = r["updates_per_s"]
        rows.append([cell, *(f"{statistics.mean(rates[k]):.0f}" for k in ("loop", "foreach", "fused")),
                     spread_from(r["foreach_vs_loop"]), spread_from(r["fused_vs_loop"])])
    lines = [f"## {TITLES['optimizer']}", "", provenance(envelope), "",
             "Updates/s of each cell with torch's three CPU Adam paths swapped in (default `loop`, `foreach=True`, "
             "`fused=True`), interleaved rounds in one process (benchmarks/optimizer_impl.py).", ""]
    lines += table(["cell", "loop /s", "foreach /s", "fused /s", "foreach ÷ loop", "fused ÷ loop"], rows)
    compiled = data.get("compile")
    if compiled:
        if "error" in compiled:
            lines += ["", f"torch.compile of TorchRL's SACLoss failed: {compiled['error']}"]
        else:
            breaks_even = compiled["break_even_updates"]
            lines += ["", f"torch.compile of TorchRL's SACLoss (sac/torchrl): first compiled step {compiled['compile_s']} s, "
                      f"compiled ÷ eager updates/s {compiled['compiled_vs_eager']} "
                      + (f"(pays back after {breaks_even:,} updates)." if breaks_even else "(never pays back: not faster once compiled).")]
    if data.get("note"):
        lines += ["", data["note"]]
    return lines + [""]


def render_ensemble_cells(envelope: dict[str, Any]) -> list[str]:
    data = envelope["data"]
    rows = [[f"`{r['cell']}`", r["hidden"], str(r["critics"]), f"{r['loop_per_cpu_s']:.0f}", f"{r['batched_per_cpu_s']:.0f}",
             f"{r['batched_vs_loop']:.2f}"] for r in data["rows"]]  # fmt: skip
    lines = [f"## {TITLES['ensemble_cells']}", "", provenance(envelope), "",
             "Gradient steps per CPU second of each cell (its whole update: critics, policy, entropy, targets) with its "
             "Q(s, a) critics called one after another (`batched_critics = false`, the default) and as one batched "
             "ensemble (`true`: their weights stacked per call, one `torch.baddbmm` per layer on skrl; the loss's stacked "
             "parameters in one batched matmul per layer on TorchRL's lean losses); both built from the same seed on the "
             "recipe with `hidden_sizes` set, rounds alternating in one process, medians shown "
             "(benchmarks/ensemble_cells.py). REDQ carries N (`n_critics`; 2 in its target). TorchRL's own TQC and REDQ "
             "losses call their stacked critics through `vmap` either way. The two train to the same parameters up to "
             "float rounding (tests/test_ensemble_mlp.py).", ""]
    lines += table(["cell", "hidden", "critics", "loop /s", "batched /s", "batched ÷ loop"], rows)
    return lines + [""]


def render_ensemble(envelope: dict[str, Any]) -> list[str]:
    data = envelope["data"]
    rows = [[r["hidden"], str(r["critics"]), *(f"{r['updates_per_cpu_s'][way]:.0f}" for way in ("loop", "EnsembleMlp", "vmap")),
             f"{r['ensemble_vs_loop']:.2f}", f"{r['vmap_vs_loop']:.2f}"] for r in data["rows"]]  # fmt: skip
    lines = [f"## {TITLES['ensemble']}", "", provenance(envelope), "",
             f"Gradient updates per CPU second of N Q(s, a) critics (Pendulum's {data['inputs']} inputs, batch {data['batch']}, "
             "MSE to a target, one fused Adam, one torch thread): called one after another as rlplug's skrl cells call them "
             "(`loop`), as one `EnsembleMlp` (stacked weights, one `torch.baddbmm` per layer), and through `torch.func` "
             "(`stack_module_state` + `vmap` over `functional_call`, as TorchRL's losses call stacked critics); rounds "
             "alternate in one process, medians shown (benchmarks/ensemble_critics.py). The three compute the same values "
             "(tests/test_ensemble_mlp.py).", ""]
    lines += table(["hidden", "critics", "loop /s", "EnsembleMlp /s", "vmap /s", "EnsembleMlp ÷ loop", "vmap ÷ loop"], rows)
    return lines + [""]


def render_compile(envelope: dict[str, Any]) -> list[str]:
    rows = []
    for cell, r in envelope["data"].items():
        breaks_even = r.get("break_even_updates")
        rows.append([cell, f"{statistics.mean(r['eager_cpu']):.0f}", f"{statistics.mean(r['compiled_cpu']):.0f}",
                     spread(r["ratio_cpu"]), spread(r["ratio_wall"]), f"{r['compile_seconds_cold']:.0f}",
                     f"{r['compile_seconds_warm']:.0f}", f"{breaks_even:,}" if breaks_even else "never",
                     f"{r['budget_updates']:,}", "yes" if r.get("pays_back") else "no"])
    lines = [f"## {TITLES['compile']}", "", provenance(envelope), "",
             "Gradient updates per CPU second of each cell built with `compile = false` and `compile = true` (torch.compile, "
             "inductor, `fullgraph=False`), interleaved rounds in one process after the compile; compile seconds cold (empty "
             "inductor cache) and warm (a second process on the same cache); the updates after which the compile has paid "
             "for itself (from the CPU rates) against the recipe's own budget. `compile` stays off by default where it does not pay back "
             "(benchmarks/compile_gains.py).", ""]
    lines += table(["cell", "eager /s", "compiled /s", "compiled ÷ eager (CPU)", "compiled ÷ eager (wall)",
                    "compile s cold", "compile s warm", "break-even updates", "recipe updates", "pays back"], rows)
    note = envelope.get("note")
    return lines + (["", note] if note else []) + [""]


def render_vector_modes(envelope: dict[str, Any]) -> list[str]:
    rows = []
    for r in envelope["data"]["rows"]:
        sync = [x["steps_per_s"] for x in r["sync"]]
        asyn = [x["steps_per_s"] for x in r["async"]]
        env = r["env"] + (f" ({', '.join(r['overrides'])})" if r.get("overrides") else "")
        rows.append([r["recipe"], env, r["backend"], str(r["num_envs"]), f"{r['steps']:,}", f"{statistics.mean(sync):.0f}",
                     f"{statistics.mean(asyn):.0f}", spread(r["async_vs_sync"])])
    lines = [f"## {TITLES['vector_modes']}", "", provenance(envelope), "",
             "Environment steps per second of the training loop with `vector_mode = \"sync\"` (the copies stepped in the "
             "training process) and `\"async\"` (gymnasium `AsyncVectorEnv`, one worker process per copy; both backends wrap "
             f"the same vector env), fresh processes alternating sync and async, on a {envelope['data'].get('cpu_count', '?')}-core "
             "machine (benchmarks/vector_modes.py).", ""]
    lines += table(["recipe", "env", "backend", "envs", "steps", "sync steps/s", "async steps/s", "async ÷ sync"], rows)
    return lines + (["", envelope["data"]["note"]] if envelope["data"].get("note") else []) + [""]


def render_env_steps(envelope: dict[str, Any]) -> list[str]:
    data = envelope["data"]
    by_cell: dict[tuple[str, int], dict[str, float]] = {}
    for r in data["rows"]:
        by_cell.setdefault((r["task"], r["num_envs"]), {})[r["mode"]] = r["steps_per_s"]
    rows = []
    for (task, envs), rates in by_cell.items():
        sync = rates.get("sync")
        rows.append([task, str(envs)] + [f"{rates[m]:,.0f}" if m in rates else "-" for m in ("sync", "async", "envpool")]
                    + [f"{rates['envpool'] / sync:.2f}x" if sync and "envpool" in rates else "-"])
    lines = [f"## {TITLES['env_steps']}", "", provenance(envelope), "",
             "Environment steps per second of the vector env alone (uniform random actions, no learner): gymnasium's sync "
             "and async vector envs as rlplug builds them against EnvPool's C++ pool, on a "
             f"{data.get('cpu_count', '?')}-core machine (benchmarks/env_steps.py). MuJoCo's EnvPool row is `vector_mode = "
             "\"envpool\"`; Atari's is EnvPool's own `Pong-v5` with the same preprocessing, for comparison (rlplug refuses "
             "`atari = true` with EnvPool).", ""]
    lines += table(["task", "envs", "sync steps/s", "async steps/s", "envpool steps/s", "envpool ÷ sync"], rows)
    return lines + [""]


def render_torch_envs(envelope: dict[str, Any]) -> list[str]:
    import importlib.util

    # loaded by path under its own name: the tests' helper module tests/torch_envs.py is also called torch_envs
    spec = importlib.util.spec_from_file_location("rlplug_bench_torch_envs", Path(__file__).resolve().parent / "torch_envs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    render_result = module.render

    lines = [f"## {TITLES['torch_envs']}", "", provenance(envelope), "",
             "PPO on CartPole-v1 through a torch-native batched env (`env = \"torch:rlplug.envs.torch_cartpole:cartpole\"`: "
             "tensors on the env's device end to end) against gymnasium's vector env of the same task, same recipe and "
             "network (benchmarks/torch_envs.py), on this machine's CPU and on a lent GPU.", ""]
    for name, result in envelope["data"].items():
        lines += [f"**{name}**", "", render_result(result), ""]
    return lines


def render_wide_envs(envelope: dict[str, Any]) -> list[str]:
    data = envelope["data"]
    backends = [b for b in data["rows"][0]["runs"] if b != "plain"] if data["rows"] else []
    goal = data.get("goal", {})
    rows = []
    for r in data["rows"]:
        def rate(name: str, key: str) -> str:
            return f"{statistics.mean(x[key] for x in r['runs'][name]):,.0f}"
        cells = [str(r["num_envs"]), f"{r['steps']:,}", f"{rate('plain', 'steps_per_cpu_s')} ({rate('plain', 'steps_per_s')})"]
        for backend in backends:
            met = None if r["num_envs"] != goal.get("num_envs") else statistics.mean(r["ratios"][backend]) >= goal["ratio"]
            cells += [f"{rate(backend, 'steps_per_cpu_s')} ({rate(backend, 'steps_per_s')})",
                      spread(r["ratios"][backend]) + ("" if met is None else f" {verdict(met)}")]
        rows.append(cells)
    header = ["envs", "steps", "plain steps/CPU s (steps/s)"]
    for backend in backends:
        header += [f"{backend} steps/CPU s (steps/s)", f"{backend} ÷ plain"]
    lines = [f"## {TITLES['wide_envs']}", "", provenance(envelope), "",
             f"PPO with {data['rollout_steps']}-step rollouts, {data['epochs']} epochs × {data['minibatches']} minibatches: "
             f"`{data['recipe']}` with `{' '.join(data['overrides'])}` against benchmarks/plain_batched_ppo.py (plain PyTorch, "
             "the same gymnasium SyncVectorEnv), fresh processes alternating, one torch thread each, on a "
             f"{data.get('cpu_count', '?')}-core machine. Rates are the training loop's steps per CPU second (wall steps/s in "
             f"brackets); the ratio is per repeat on CPU rates; goal: ≥ {goal.get('ratio')} at {goal.get('num_envs')} envs.", ""]
    return lines + table(header, rows) + [""]


def spread_from(summary: dict[str, float]) -> str:
    return f"{summary['mean']:.3f} ({summary['min']:.3f}–{summary['max']:.3f})"


def render_sac_floor(envelope: dict[str, Any]) -> list[str]:
    floor, goal = envelope["data"]["floor"], GOALS["floor"]
    rows = []
    for name, r in floor["results"].items():
        judged = name.startswith("rlplug")
        met = statistics.mean(r["ratio"]) >= goal or statistics.mean(r["ratio_cpu"]) >= goal
        rows.append([name, f"{statistics.mean(r['plain']):.0f}", f"{statistics.mean(r['rlplug']):.0f}", spread(r["ratio"]),
                     spread(r["ratio_cpu"]), verdict(met) if judged else "-"])
    lines = [f"## {TITLES['sac_floor']}", "", provenance(envelope), "",
             "Gradient updates/s of SAC's whole update (critics, actor, temperature, targets) at SB3's sizes (256x256, batch "
             "256, one torch thread) against the fused floor: a plain PyTorch update with both critics and both targets "
             "as one batched module each (one `baddbmm` per layer for the pair), fused Adams and a `foreach` target "
             "update (benchmarks/sac_floor.py), rounds interleaved in one process. `plain (per-critic)` is the unfused "
             "textbook loop of the Update floor section; `SB3` is `SAC.train(gradient_steps=1)`; `fused+compile` is "
             f"the floor's update under `torch.compile`. Goal for rlplug's cells: ≥ {goal} of the floor.", ""]
    lines += table(["contender", "floor updates/s", "its updates/s", "÷ floor, wall", "÷ floor, CPU", f"≥ {goal}"], rows) + [""]
    for name, cost in floor.get("extra", {}).items():
        r = floor["results"][name]
        gain = 1 / statistics.mean(r["plain"]) - 1 / statistics.mean(r["rlplug"])
        payback = f"pays back after {cost['compile_s'] / gain:,.0f} updates" if gain > 0 else "never pays back: it is not faster"
        lines += [f"`{name}`: {cost['compile_s']:.0f} s to compile; {payback}.", ""]
    sb3 = floor["results"].get("SB3")
    timed = envelope["data"].get("time_to_target", {}).get("sac-pendulum")
    if sb3 and timed:
        wall, time_goal = timed["wall"], GOALS["sac_floor_time"]
        bound = statistics.mean(sb3["rlplug"]) / statistics.mean(sb3["plain"])
        ratio = wall.get("ratio_of_means")
        shown = "-" if ratio is None else f"{ratio:.3f}"
        lines += [f"Time to sac-pendulum's target at these sizes ({', '.join(timed.get('overrides') or [])}; "
                  f"benchmarks/sb3_time_to_target.py, seeds {', '.join(str(s) for s in timed.get('seeds') or [])}): rlplug ÷ SB3 "
                  f"{shown} (ratio of the mean times; goal ≤ {time_goal}: {verdict(ratio is not None and ratio <= time_goal)}). "
                  f"A learner updating at the floor's rate needs {bound:.2f} of SB3's time for the same number of updates, "
                  "so below that only fewer updates to the target (sample efficiency), not a faster update, can bring the "
                  "ratio.", ""]
    return lines


def render_time_to_target(envelope: dict[str, Any]) -> list[str]:
    goal = GOALS["time_to_target"]
    rows = []
    for recipe, r in envelope["data"].items():
        def reach(runs: list[dict[str, Any]]) -> str:
            return ", ".join(f"{x['wall_s']:.1f} s @ {x['steps']:,}" if x["reached"] else "not reached" for x in runs)
        wall = r["wall"]
        ratio = "-" if wall["ratio_mean"] is None else (
            f"{wall['ratio_mean']:.3f}" if len(wall["ratios"]) == 1 else f"{wall['ratio_mean']:.3f} ({wall['ratio_min']:.3f}–{wall['ratio_max']:.3f})")
        cpu = r["cpu"]
        cpu_ratio = "-" if cpu["ratio_mean"] is None else spread(cpu["ratios"])
        pooled = f"{wall['ratio_of_means']:.3f}" if wall.get("ratio_of_means") is not None else "-"
        seeds = ", ".join(str(s) for s in r["seeds"]) if r.get("seeds") else f"{r['repeats']} repeats"
        variant = f" ({', '.join(r['overrides'])})" if r.get("overrides") else ""
        rows.append([recipe + variant, f"{r['target']:g}", seeds, reach(r["sb3"]), reach(r["rlplug"]), ratio, cpu_ratio, pooled,
                     verdict(wall["met"])])
    lines = [f"## {TITLES['time_to_target']}", "", provenance(envelope), "",
             "Training wall seconds until the deterministic evaluation (10 episodes, separate env seeded 10000+i, clock "
             "paused while evaluating) first reaches the recipe's target: rlplug's skrl backend with the recipe vs SB3 with "
             f"RL Zoo hyperparameters, run one after the other in one process, the same seed on both sides per repeat "
             f"(benchmarks/sb3_time_to_target.py). Goal: rlplug ÷ SB3 ≤ {goal}, judged on the ratio of the mean times over "
             "seeds (each library learns sooner on some seeds than others, so per-seed ratios scatter).", ""]
    return lines + table(["recipe", "target", "seeds", "SB3 (s @ env steps)", "rlplug skrl (s @ env steps)",
                          "wall ratio per seed", "CPU ratio per seed", "ratio of mean times", f"≤ {goal}"], rows) + [""]


def render_scaling(envelope: dict[str, Any]) -> list[str]:
    data = envelope["data"]
    rows = [[r["recipe"], r["backend"], f"{r['steps_per_rank']:,}", f"{r['one_process_steps_per_second']:.0f}",
             f"{r['n_process_steps_per_second']:.0f}", spread([r["ratio_mean"], r["ratio_min"], r["ratio_max"]]),
             "yes" if r["ranks_in_sync"] else "NO"] for r in data["rows"]]
    lines = [f"## {TITLES['scaling']}", "", provenance(envelope), "",
             f"Environment steps per second over all ranks, `rlplug train` on one process and on `--nproc {data['nproc']}` "
             "(gloo, data-parallel: each rank runs the recipe's per-rank budget, gradients averaged every optimiser step), "
             f"{data['repeats']} interleaved repeat(s). No goal: on two shared cores the point is correctness "
             "(`ranks in sync`: every parameter and buffer hashed identical across ranks at the end).", ""]
    return lines + table(["recipe", "backend", "steps per rank", "1 process steps/s", f"{data['nproc']} processes steps/s",
                          "ratio mean (min–max)", "ranks in sync"], rows) + [""]


def render_eval_speed(envelope: dict[str, Any]) -> list[str]:
    rows = [[f"{r['recipe']} {r['backend']}", f"{r['episodes']} ({r['env_steps']})", f"{r['command_seconds']:.2f}",
             f"{r['plain_script_seconds']:.2f}", f"**{r['command_over_plain_script']:.2f}**",
             verdict(r["command_over_plain_script"] <= GOALS["eval_speed"]),
             f"{r['command_checkpoint_seconds']:.2f} ({r['command_checkpoint_over_plain_script']:.2f})",
             f"{r['evaluate_over_plain']:.2f}"] for r in envelope["data"]]  # fmt: skip
    lines = [f"## {TITLES['eval_speed']}", "", provenance(envelope), "",
             "Wall seconds (median of 5, fresh interpreters, one torch thread) of `rlplug eval RUN_DIR --episodes 10 --json` "
             "on a 5,000-step ppo-cartpole run, which plays the policy training left beside its checkpoint "
             "(`checkpoints/latest.policy.pt`) with torch alone, against a plain script of the same TorchScript policy over "
             "the same episodes (import torch and gymnasium, load the file, play; the returns are checked equal); the same "
             "command on a copy of the run without that file opens the checkpoint and builds the trainer. `evaluate ÷ plain "
             f"loop`: the trainer's own evaluation loop against the plain loop, in one process. Goal: at most {GOALS['eval_speed']}x "
             "the plain script. The phases of the checkpoint's path: `benchmarks/results/eval_speed.json`.", ""]
    lines += table(["run", "episodes (steps)", "`rlplug eval` s", "plain script s", "eval ÷ script", "met",
                    "from the checkpoint s (÷ script)", "evaluate ÷ plain loop"], rows)  # fmt: skip
    return lines + [""]


# ---- the page -----------------------------------------------------------------------------------


def render(results: dict[str, dict[str, Any]], row_cells: Callable[[dict[str, Any]], list[str]], columns: Iterable[str],
           command: str = "python benchmarks/all.py", *, curves: Mapping[str, str] | None = None,
           random_returns: dict[str, Any] | None = None, references: Mapping[str, Mapping[str, Any]] | None = None,
           baselines: Mapping[str, str] | None = None) -> str:
    """BENCHMARKS.md from the stored section envelopes (any may be missing); ``curves``, ``random_returns``,
    ``references`` (recipe ref -> the registry's reference, for rows stored without one) and ``baselines`` as
    ``render_bench`` takes them."""
    lines = ["# rlplug benchmarks", "",
             f"Produced by `{command}`: each section below is rendered from its stored result in `benchmarks/results/` "
             "(its own command and date are given); `python benchmarks/all.py --only SECTION` reruns one section. "
             "Measured on a shared 2-core machine while other work ran part of the time: read wall-clock figures "
             "as indicative, ratios (measured interleaved) as the result.", ""]
    if "bench" in results:
        lines += render_bench(results["bench"], row_cells, columns, curves, random_returns, references, baselines)
    else:
        lines += [f"## {TITLES['bench']}", ""] + missing("bench")
    renderers = {
        "overhead": render_overhead,
        "startup": render_startup,
        "backend_ratio": render_backend_ratio,
        "floor": render_floor,
        "sac_floor": render_sac_floor,
        "optimizer": render_optimizer,
        "ensemble": render_ensemble,
        "ensemble_cells": render_ensemble_cells,
        "compile": render_compile,
        "time_to_target": render_time_to_target,
        "scaling": render_scaling,
        "vector_modes": render_vector_modes,
        "wide_envs": render_wide_envs,
        "env_steps": render_env_steps,
        "torch_envs": render_torch_envs,
        "eval_speed": render_eval_speed,
    }
    for section, fn in renderers.items():
        if section == "backend_ratio" and "bench" in results:
            lines += render_backend_ratio(results["bench"], results.get("backend_ratio"))
        elif section == "backend_ratio" and section in results:
            lines += render_interleaved_ratio(results[section])
        elif section in results:
            lines += fn(results[section])
        else:
            lines += [f"## {TITLES[section]}", ""] + missing(section)
    return "\n".join(lines).rstrip() + "\n"


def combined_json(results: dict[str, dict[str, Any]], random_returns: dict[str, Any] | None = None,
                  references: Mapping[str, Mapping[str, Any]] | None = None,
                  baselines: Mapping[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    """BENCHMARKS.json: the bench table's machine/command/rows at the top (as ``rlplug bench`` writes
    them) and every section's envelope, plus the computed backend ratios and, with the random returns,
    the aggregate over rows."""
    bench = dict(results.get("bench", {}).get("data", {}))
    bench["rows"] = with_baselines(bench.get("rows", []), baselines or {})
    out: dict[str, Any] = {"machine": bench.get("machine"), "command": results.get("bench", {}).get("command"),
                           "rows": bench["rows"], "sections": results}
    if bench.get("rows"):
        out["backend_ratio"] = backend_ratios(bench["rows"])
        if random_returns is not None:
            out["random_returns"] = random_returns
            out["aggregate"] = aggregate_rows(bench["rows"], random_returns["data"], references)
    return out
