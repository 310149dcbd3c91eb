"""``bench``: train recipes on their backends, once per seed, and check each row's target; optionally a
Markdown report.

A row is a (recipe, backend); a unit is a row on one seed. ``--jobs 1`` (the default) trains the units one
after the other in this process; ``--jobs N`` runs them in N ``rlplug train --json`` processes at once (each
with one torch thread), under one progress bar over the units. A row's verdict and figures come from
``rlplug.results.seeded``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import OutputError, RecipeError, RlplugError, RunDirError, RunInterrupted, UnknownNameError
from ..recipes.fields import file_stem
from ..results.seeded import (aggregate, check_jobs, ci_text, is_baseline, parse_seeds, pass_count, reference_text, result_text, seeds_text,
                              target_text, verdict_text, wall_text)
from ..util.suggest import did_you_mean
from .tables import format_table
from .common import note, open_session, print_json
from .dataset import ensure_dataset
from .training import option_override

COLUMNS = ["recipe", "backend", "seeds", "steps", "wall s/seed", "eval (mean ± std over seeds)", "95% CI", "target", "reference", "result"]


@dataclass
class Row:
    """One (recipe, backend) of the bench and its per-seed results as they arrive."""

    ref: str
    name: str
    backend: str
    seeds: list[int]
    tier: str
    reference: dict[str, Any]
    target: float
    baseline_of: str = ""
    results: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return len(self.results) == len(self.seeds)

    def aggregated(self) -> dict[str, Any]:
        return aggregate([self.results[s] for s in self.seeds], recipe=self.ref, backend=self.backend, seeds=self.seeds,
                         tier=self.tier, reference=self.reference, target=self.target, baseline_of=self.baseline_of)  # fmt: skip


def cmd_bench(args: argparse.Namespace) -> int:
    if args.from_runs:
        return bench_from_runs(args)
    jobs = check_jobs(args.jobs)
    if args.seeds is not None and args.seed is not None:
        raise RlplugError("bench: give --seed S (one seed) or --seeds (several: 0,1,2 or a count), not both")
    seeds = parse_seeds(args.seeds) if args.seeds is not None else None
    # the output paths first: a --report or --runs-dir that cannot be written is refused before a recipe is
    # resolved, a dataset collected or a step trained
    report = Path(args.report) if args.report else (Path("BENCHMARKS.md") if args.all else None)
    if report is not None:
        from ..results.report import check_report_paths

        check_report_paths(report)
    if args.runs_dir:
        check_runs_dir(Path(args.runs_dir))
    elif args.continue_runs:
        raise RlplugError("bench --continue goes on with the runs under --runs-dir; give the --runs-dir of the bench to continue")
    session = open_session(args)
    overrides = list(args.set or ())
    if args.steps is not None:  # checked by the recipe's own domain, as --set steps=N is
        overrides.append(option_override("steps", args.steps))
    if args.seed is not None:
        overrides.append(option_override("seed", args.seed))
    rows = plan_rows(session, args, overrides, seeds)
    finished: dict[int, dict[str, Any]] = {}

    def row_done(index: int) -> None:
        finished[index] = rows[index].aggregated()
        if report is not None:  # rewritten after each row: a long bench leaves a partial report
            write_bench_report(report, [finished[i] for i in sorted(finished)], jobs, getattr(args, "argv", None))

    units = [(i, s) for i, row in enumerate(rows) for s in row.seeds]
    running: set[tuple[int, int]] = set()  # the units under way, for the lines an interrupt prints
    try:
        if jobs == 1:
            run_here(session, args, rows, units, overrides, row_done, running)
        else:
            run_in_processes(args, rows, units, jobs, row_done, running)
    except KeyboardInterrupt as err:
        raise bench_interrupted(args, rows, sorted(running), err) from None
    return print_rows(args, [finished[i] for i in range(len(rows))])


def bench_interrupted(args: argparse.Namespace, rows: list[Row], units: list[tuple[int, int]], err: KeyboardInterrupt) -> RunInterrupted:
    """One line per run the interrupt stopped (its directory, the step of its last checkpoint), and the
    command that goes on: the same bench with ``--continue``, which counts the finished runs, resumes these
    and trains the rest."""
    for index, seed in units:
        row, run_dir = rows[index], unit_run_dir(args, rows[index], seed)
        kept = f"{run_dir}, {last_checkpoint(run_dir)}" if run_dir is not None else "nothing kept (no --runs-dir)"
        print(f"rlplug: interrupted: {row.ref} on {row.backend}, seed {seed}: {kept}", file=sys.stderr)
    signum = getattr(err, "signum", signal.SIGINT)
    if not args.runs_dir:
        return RunInterrupted("bench interrupted; nothing was kept: give --runs-dir DIR to keep its runs and go on with "
                              "--continue", signum)  # fmt: skip
    argv = list(getattr(args, "argv", sys.argv[1:]))
    if "--continue" not in argv:
        argv.append("--continue")
    return RunInterrupted(f"bench interrupted; continue with: {shlex.join(['rlplug', *argv])}", signum)


def last_checkpoint(run_dir: Path) -> str:
    """``last checkpoint at env step N`` (``update N`` offline), or why there is none to resume from."""
    from ..runs.checkpoint_io import load_checkpoint
    from ..runs.rundir import CHECKPOINT

    path = run_dir / CHECKPOINT
    if not path.is_file():
        return "no checkpoint yet (it resumes from step 0)"
    try:
        header = load_checkpoint(path, mmap=True).get("rlplug", {})
    except RlplugError as problem:
        return f"its checkpoint cannot be read ({problem})"
    if "updates" in header:
        return f"last checkpoint at update {header['updates']}"
    return f"last checkpoint at env step {header.get('env_steps', '?')}"


def unit_state(args: argparse.Namespace, row: Row, seed: int) -> str:
    """``train`` (nothing there), ``finished`` (its summary is there: ``--continue`` counts it) or ``resume``."""
    from ..runs.rundir import SUMMARY_FILE

    run_dir = unit_run_dir(args, row, seed)
    if run_dir is None or not args.continue_runs or not run_dir.exists():
        return "train"
    return "finished" if (run_dir / SUMMARY_FILE).is_file() else "resume"


def print_rows(args: argparse.Namespace, data: list[dict[str, Any]]) -> int:
    """The table; exit 0 when every real recipe's row passes (a baseline's row, built to miss, counts neither way)."""
    if args.json:
        print_json(data)
    else:
        print(format_table(COLUMNS, [table_row(row) for row in data]))
        if len(data) > 1 or any(is_baseline(row) for row in data):
            print(pass_count(data))
    return 0 if all(row["passed"] or is_baseline(row) for row in data) else 1


def write_bench_report(report: Path, data: list[dict[str, Any]], jobs: int, argv: list[str] | None = None) -> None:
    from ..results.report import write_report
    from ..util.commands import portable_command, repository_root

    # as a reader re-runs it: paths inside the repository relative to it, scratch folders as SCRATCH/...
    argv = sys.argv[1:] if argv is None else argv  # the command's own words (main keeps them), not the interpreter's
    write_report(report, data, portable_command(["rlplug", *argv], repository_root()), jobs)


# ---- from finished runs -----------------------------------------------------------------------------

TRAINING_OPTIONS = ("steps", "set", "seed", "seeds", "tier", "runs_dir", "all")


def bench_from_runs(args: argparse.Namespace) -> int:
    """The seeded table from run directories trained anywhere (a Hydra sweep, a cluster): every finished run
    (``summary.json``) under the folders given is one seed of its (recipe, backend) row; a run without a
    summary (still training, or killed) is left out with a note."""
    from ..util.jsonfiles import read_json_object
    from ..runs.rundir import RECIPE_FILE, SUMMARY_FILE

    given = [o for o in TRAINING_OPTIONS if getattr(args, o) not in (None, False, [], ())]
    if given or args.jobs != 1:
        flags = ", ".join(f"--{o.replace('_', '-')}" for o in given) or "--jobs"
        raise RlplugError(f"bench --from-runs reads finished runs and trains nothing: {flags} cannot apply")
    backends = [b for b in (args.backend or "").split(",") if b]
    grouped: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for folder in map(Path, args.from_runs):
        if not folder.is_dir():
            raise RlplugError(f"bench --from-runs: {folder} is not a directory")
        for recipe_file in sorted(folder.rglob(RECIPE_FILE)):
            run_dir = recipe_file.parent
            if not (run_dir / SUMMARY_FILE).is_file():
                note(f"left out: {run_dir} has no {SUMMARY_FILE} (not finished)")
                continue
            summary = read_json_object(run_dir / SUMMARY_FILE, RunDirError)
            recipe = read_json_object(recipe_file, RunDirError).get("recipe", {})
            name = str(summary.get("recipe", "")).partition("@")[0]
            if (args.names and name not in args.names) or (backends and summary.get("backend") not in backends):
                continue
            grouped.setdefault((str(summary.get("recipe")), str(summary.get("backend"))), []).append((summary, recipe))
    if not grouped:
        raise RlplugError(f"bench --from-runs: no finished run directories under {', '.join(args.from_runs)}"
                          + (" for the recipes and backends asked for" if args.names or backends else ""))
    data = []
    for (ref, backend), runs in sorted(grouped.items()):
        for label, variant in variants(runs):
            variant.sort(key=lambda run: run[0].get("seed", 0))
            seeds = [summary.get("seed") for summary, _ in variant]
            if len(set(seeds)) < len(seeds):
                note(f"{ref}{label} on {backend}: seeds {seeds} repeat; each run counts once")
            summaries, target, reference = judged_by(ref, variant)
            data.append(aggregate(summaries, recipe=ref + label, backend=backend, seeds=seeds,
                                  tier=variant[0][1].get("tier"), reference=reference, target=target,
                                  baseline_of=variant[0][1].get("baseline_of", "")))
    if args.report:
        from ..results.report import check_report_paths

        check_report_paths(Path(args.report))
        write_bench_report(Path(args.report), data, 1, getattr(args, "argv", None))
    return print_rows(args, data)


def judged_by(ref: str, runs: list[tuple[dict[str, Any], dict[str, Any]]]) -> tuple[list[dict[str, Any]], Any, Any]:
    """The runs' summaries and the target and reference their row is judged by: the trained recipe's, except
    for a ``zoo:`` pair, whose target and Zoo reference come from its verification record
    (``rlplug/zoo/verified.toml``) as it is now (they judge the training, they are not part of it): each
    seed's return is then judged against that target."""
    from ..recipes.fields import is_zoo_name
    from ..results.seeded import _value

    summaries, recipe = [summary for summary, _ in runs], runs[0][1]
    name = ref.partition("@")[0]
    if not is_zoo_name(name):
        return summaries, recipe.get("target"), recipe.get("reference")
    from ..interop.zoo import recipe_table

    table, _ = recipe_table(name)
    target = table.get("target")
    rejudged = [{**s, "target": target, "passed": _value(s) is not None and float(_value(s)) >= float(target)} for s in summaries]
    return rejudged, target, table.get("reference")


def variants(runs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[tuple[str, list[Any]]]:
    """Runs of one (recipe, backend) split by the recipe fields that differ between them, the seed aside (a
    sweep over a learning rate is one row per value); each labelled by those fields, `` [lr=0.001]``."""
    flat = [dict(flatten(recipe)) for _, recipe in runs]
    varying = sorted({k for f in flat for k in f if k != "seed" and len({repr(g.get(k)) for g in flat}) > 1})
    split: dict[str, list[Any]] = {}
    for run, fields in zip(runs, flat):
        label = ", ".join(f"{k.rpartition('.')[2]}={fields.get(k)}" for k in varying)
        split.setdefault(f" [{label}]" if label else "", []).append(run)
    return sorted(split.items())


def flatten(table: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for key, value in table.items():
        items += flatten(value, f"{prefix}{key}.") if isinstance(value, dict) else [(prefix + key, value)]
    return items


def select_names(session: Any, args: argparse.Namespace, overrides: list[str]) -> list[str]:
    """The recipes asked for: the names given, every first-party one (``--all``) or every known one; with
    ``--tier``, those of that tier."""
    if args.all:
        if args.names:
            raise RlplugError("bench --all runs every first-party recipe; give recipe names or --all, not both")
        names = [n for n, v in session.book.refs() if session.book.raw(f"{n}@{v}")[1].source.endswith("registry.toml")]
    else:
        names = args.names or [n for n, _ in session.book.refs()]
    names = list(dict.fromkeys(names))
    if args.tier:
        kept = [n for n in names if session.resolve(n, overrides).tier == args.tier]
        if not kept:
            raise RlplugError(f"bench --tier {args.tier}: none of the recipes asked for is of tier '{args.tier}'")
        if args.names:  # a name given and left out is said; every known recipe's tier is not
            for name in names:
                if name not in kept:
                    print(f"rlplug: note: skipping {name}: its tier is not {args.tier}", file=sys.stderr)
        names = kept
    return names


def plan_rows(session: Any, args: argparse.Namespace, overrides: list[str], seeds: list[int] | None) -> list[Row]:
    """Every row checked before anything trains (a bad name, backend or seed fails here, in one line); the
    datasets the offline rows need are made here, once, before any process reads them."""
    backends = [b for b in (args.backend or "").split(",") if b]
    check_backend_names(session, backends)
    rows = []
    for name in select_names(session, args, overrides):
        recipe = session.resolve(name, overrides)
        if recipe.target is None:  # a benchmark checks a target; the recipe's was set on another task
            raise RecipeError(f"bench: recipe '{recipe.name}' on {recipe.env} has no target (its task was changed); "
                              f"give one with --set target=R")
        spec = session.host.algorithm(recipe.algorithm)
        ensure_dataset(session, recipe, quiet=args.json)
        own = [recipe.backend if b == "default" else b for b in backends]  # "default": the recipe's own backend
        for backend in list(dict.fromkeys(own)) or list(spec.backends):
            session.prepare(recipe, backend)  # validates the cell (spaces, encoder, dataset) without building it
            rows.append(Row(recipe.ref, recipe.name, backend, list(seeds) if seeds is not None else [recipe.seed],
                            recipe.tier, recipe.reference, recipe.target, recipe.baseline_of))  # fmt: skip
            if args.runs_dir and not args.continue_runs:
                for seed in rows[-1].seeds:
                    if unit_run_dir(args, rows[-1], seed).exists():
                        raise RlplugError(f"{unit_run_dir(args, rows[-1], seed)} already exists; choose another --runs-dir, "
                                          "or add --continue to go on with an interrupted bench")  # fmt: skip
    return rows


def check_runs_dir(path: Path) -> None:
    """``--runs-dir``: a directory, or a path a directory can be made at (its nearest existing parent is a
    directory this process can write); else one line, before anything trains."""
    from ..util.outputs import describe

    if path.exists() and not path.is_dir():
        raise OutputError(f"bench --runs-dir: {path} is {describe(path)}, not a directory; choose another --runs-dir")
    parent = path
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"bench --runs-dir: {parent} is {describe(parent)}, not a directory, so {path} cannot be "
                          "made; choose another --runs-dir")  # fmt: skip
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"bench --runs-dir: {parent} is not writable here; choose another --runs-dir")


def check_backend_names(session: Any, backends: list[str]) -> None:
    """A name no algorithm runs on and not ``default`` fails here, with ``default`` among the suggestions (the
    pipeline's per-algorithm check knows only that algorithm's backends)."""
    known = {b for spec in session.host.algorithms.values() for b in spec.backends} | {"default"}
    for backend in backends:
        if backend not in known:
            close = did_you_mean(backend, known)  # only a close spelling: the line lists every known name itself
            hint = close if "did you mean" in close else ""
            raise UnknownNameError(f"bench --backend: no backend '{backend}'{hint}; known: {', '.join(sorted(known))}")


def unit_run_dir(args: argparse.Namespace, row: Row, seed: int) -> Path | None:
    """Each unit's run directory under ``--runs-dir`` (metrics, curve.png) for the report; none without it."""
    return Path(args.runs_dir) / f"{file_stem(row.name)}-{row.backend}-seed{seed}" if args.runs_dir else None


def unit_line(row: Row, seed: int, result: dict[str, Any]) -> str:
    if "error" in result:
        return f"{row.ref} on {row.backend}, seed {seed}: failed: {result['error']}"
    score = f" (score {result['normalised_score']:.1f})" if result.get("normalised_score") is not None else ""
    verdict = "meets the target" if result["passed"] else "below target"
    if row.baseline_of:  # built to miss: said as what it is
        verdict = f"{verdict}, the baseline of {row.baseline_of}"
    return (f"{row.ref} on {row.backend}, seed {seed}: {result['eval_return_mean']:.1f} ± {result['eval_return_std']:.1f}{score}, "
            f"{verdict}, {result['wall_seconds']:.0f} s")  # fmt: skip


# ---- one process ------------------------------------------------------------------------------------


def run_here(session: Any, args: argparse.Namespace, rows: list[Row], units: list[tuple[int, int]], overrides: list[str],
             row_done: Any, running: set[tuple[int, int]]) -> None:  # fmt: skip
    from ..runs import train

    for number, (index, seed) in enumerate(units, 1):
        row = rows[index]
        state = unit_state(args, row, seed)
        if not args.json:
            doing = {"train": "training", "resume": "resuming", "finished": "counting the finished"}[state]
            print(f"[{number}/{len(units)}] {doing} {row.ref} on {row.backend}, seed {seed} ...", file=sys.stderr)
        running.add((index, seed))
        if state == "train":
            recipe = session.resolve(row.ref, [*overrides, option_override("seed", seed)])
            build = session.build(recipe, row.backend)
            try:
                summary = train(build, run_dir=unit_run_dir(args, row, seed), progress=not args.json)
            finally:
                build.trainer.close()
        elif state == "finished":
            summary = finished_summary(args, row, seed)
        else:  # its own process, as `rlplug resume` runs it (the run's recorded plugins and settings)
            process = subprocess.Popen(unit_command(args, row, seed), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, env=unit_environment())  # fmt: skip
            try:
                stdout, stderr = process.communicate()
            except BaseException:  # a Ctrl-C reaches it too: let it write its checkpoint (subprocess.run would kill it)
                _stop({process: None})
                raise
            if process.returncode >= 128:  # it was stopped
                raise RunInterrupted("interrupted", process.returncode - 128)
            summary = unit_result(seed, process.returncode, stdout, stderr)
        running.discard((index, seed))
        row.results[seed] = summary
        if not args.json and len(units) > 1:
            print(unit_line(row, seed, summary), file=sys.stderr)
        if row.done:
            row_done(index)


# ---- N processes ------------------------------------------------------------------------------------


def unit_command(args: argparse.Namespace, row: Row, seed: int) -> list[str]:
    """``rlplug train`` for one unit, with this command's plugins, recipe files and overrides; JSON out. With
    ``--continue``, ``rlplug resume`` for a unit whose run directory is there unfinished."""
    run_dir = unit_run_dir(args, row, seed)
    if unit_state(args, row, seed) == "resume":
        return [sys.executable, "-m", "rlplug.cli", "resume", str(run_dir), "--json", "--no-progress"]
    command = [sys.executable, "-m", "rlplug.cli", "train", row.ref, "--backend", row.backend, "--seed", str(seed),
               "--json", "--no-progress"]  # fmt: skip
    command += ["--run-dir", str(run_dir)] if run_dir is not None else ["--no-write"]
    for module in args.plugin or ():
        command += ["--plugin", module]
    for path in args.recipes or ():
        command += ["--recipes", path]
    for item in args.set or ():
        command += ["--set", item]
    if args.steps is not None:
        command += ["--steps", option_override("steps", args.steps).partition("=")[2]]
    return command


def unit_environment() -> dict[str, str]:
    """One thread per process: N processes share the cores (torch is set to one thread by the cells too)."""
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = "1"
    env.setdefault("RL_LOGGING_LEVEL", "WARNING")
    return env


def unit_result(seed: int, returncode: int, stdout: str, stderr: str) -> dict[str, Any]:
    """The unit's summary (``rlplug train --json``), or ``{"seed", "error"}`` naming why there is none."""
    if returncode == 0:
        text = stdout.strip()
        start = text.find("{")
        try:
            return json.loads(text[start:]) if start >= 0 else {"seed": seed, "error": "no summary on stdout"}
        except json.JSONDecodeError:
            return {"seed": seed, "error": "its summary was not JSON"}
    lines = [line for line in stderr.splitlines() if line.strip()]
    said = next((line for line in reversed(lines) if line.startswith("rlplug:")), lines[-1] if lines else "")
    return {"seed": seed, "error": f"exit code {returncode}" + (f": {said}" if said else "")}


def finished_summary(args: argparse.Namespace, row: Row, seed: int) -> dict[str, Any]:
    from ..runs.rundir import SUMMARY_FILE
    from ..util.jsonfiles import read_json_object

    return read_json_object(unit_run_dir(args, row, seed) / SUMMARY_FILE, RunDirError)


def run_in_processes(args: argparse.Namespace, rows: list[Row], units: list[tuple[int, int]], jobs: int, row_done: Any,
                     stopped: set[tuple[int, int]]) -> None:  # fmt: skip
    from tqdm import tqdm

    for index, seed in units:  # a --continue's finished runs are counted, not trained
        if unit_state(args, rows[index], seed) == "finished":
            rows[index].results[seed] = finished_summary(args, rows[index], seed)
            if rows[index].done:
                row_done(index)
    units = [(i, s) for i, s in units if s not in rows[i].results]
    pending = deque(units)
    running: dict[subprocess.Popen, tuple[int, int, Any, Any]] = {}
    env = unit_environment()
    bar = tqdm(total=len(units), unit="run", desc="bench", dynamic_ncols=True, disable=args.json, file=sys.stderr)
    previous = signal.signal(signal.SIGTERM, _terminate)  # so the processes started here are stopped too
    try:
        while pending or running:
            while pending and len(running) < jobs:
                index, seed = pending.popleft()
                out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
                process = subprocess.Popen(unit_command(args, rows[index], seed), stdin=subprocess.DEVNULL, stdout=out,
                                           stderr=err, env=env, text=True)  # fmt: skip
                running[process] = (index, seed, out, err)
                bar.set_postfix_str(f"running {len(running)}", refresh=True)
            for process in [p for p in running if p.poll() is not None]:
                index, seed, out, err = running.pop(process)
                if process.returncode in (128 + signal.SIGINT, 128 + signal.SIGTERM):  # a Ctrl-C reaches every process
                    stopped.add((index, seed))
                    out.close(), err.close()
                    raise RunInterrupted("interrupted", process.returncode - 128)
                out.seek(0), err.seek(0)
                result = unit_result(seed, process.returncode, out.read(), err.read())
                out.close(), err.close()
                row = rows[index]
                row.results[seed] = result
                if not args.json or "error" in result:
                    bar.write(unit_line(row, seed, result), file=sys.stderr)
                bar.update(1)
                if row.done:
                    row_done(index)
            time.sleep(0.2)
    except BaseException:
        stopped.update((index, seed) for index, seed, _, _ in running.values())
        _stop(running)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        bar.close()


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def _stop(running: dict[subprocess.Popen, Any]) -> None:
    """SIGTERM to this command's own training processes, then a kill for any still there after 30 s."""
    for process in running:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 30
    for process in running:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()


# ---- text -------------------------------------------------------------------------------------------


def table_row(row: dict[str, Any]) -> list[str]:
    unit = " upd" if row.get("step_unit") == "updates" else ""
    verdict = verdict_text(row)
    return [row["recipe"], row["backend"], seeds_text(row), f"{row['steps']}{unit}", wall_text(row), result_text(row),
            ci_text(row), target_text(row), reference_text(row.get("reference")), verdict]  # fmt: skip
