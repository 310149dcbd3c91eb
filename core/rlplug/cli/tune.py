"""``rlplug tune``: a hyperparameter search whose result is a recipe (``rlplug.tuning``), and
``rlplug show NAME --space``. Cheap to import: Optuna and torch are imported when a study runs."""

from __future__ import annotations

import argparse
import contextlib
import copy
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import RecipeError
from .common import open_session, print_json

DEFAULT_EVALUATIONS = 5
DEFAULT_EVAL_SEEDS = 3


def add_tune_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``tune`` on the command parser (``show``'s ``--space``, answered by ``cmd_show_space``, is declared
    with ``show`` in ``cli.parser``: `rlplug show` does not import this module to build its options)."""
    tune = sub.add_parser("tune", parents=[common], help="search a recipe's hyperparameters (Optuna) and write the best as a recipe",
                          description="Search a recipe's hyperparameters with Optuna (TPE sampler, median pruner) and write "
                          "the best trial, re-evaluated on fresh seeds, as a recipe that extends the original. Needs "
                          "pip install 'rlplug[tune]'.")  # fmt: skip
    tune.add_argument("name", help="the recipe to tune (NAME or NAME@VERSION)")
    tune.add_argument("--backend", help="skrl or torchrl (default: the recipe's backend)")
    tune.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a recipe field or hyperparameter in every trial")
    tune.add_argument("--trials", type=int, metavar="N", help="trials the study should hold (a rerun continues it up to N)")
    tune.add_argument("--jobs", type=int, default=1, metavar="J", help="worker processes sharing the study (default: 1)")
    tune.add_argument("--seeds", type=int, default=1, metavar="S", help="seeds each trial trains on; the objective is their mean (default: 1)")
    tune.add_argument("--steps", type=int, metavar="N", help="steps each trial trains per seed (default: the recipe's budget)")
    tune.add_argument("--evaluations", type=int, default=DEFAULT_EVALUATIONS, metavar="E",
                      help=f"evaluations per seed for the pruner, the last being the final one (default: {DEFAULT_EVALUATIONS})")
    tune.add_argument("--storage", metavar="URL", help="Optuna RDB URL (default: sqlite:///rlplug-tune.db here; "
                      "postgresql://user:pass@host/db lets several machines share a study)")  # fmt: skip
    tune.add_argument("--study", metavar="NAME", help="study name (default: RECIPE-BACKEND)")
    tune.add_argument("--timeout", type=float, metavar="SECONDS", help="start no trial after this many seconds")
    tune.add_argument("--max-seconds-per-trial", type=float, metavar="SECONDS", help="the cost budget of a trial: one "
                      "still training after this many seconds (all its seeds) is pruned, so slow values cannot win")  # fmt: skip
    tune.add_argument("--export", action="store_true", help="run no trial: re-evaluate and export the best of an existing study")
    tune.add_argument("--eval-seeds", type=int, default=DEFAULT_EVAL_SEEDS, metavar="K",
                      help=f"fresh seeds the best trial and the recipe as written are re-evaluated on (default: {DEFAULT_EVAL_SEEDS}; 0: none)")
    tune.add_argument("--out", metavar="FILE", help="where the tuned recipe goes (default: ./NAME-tuned.toml); replaces only an earlier tuned recipe")
    tune.add_argument("--as", dest="as_ref", metavar="NAME[@N]", help="name (and version) of the tuned recipe "
                      "(default: NAME-tuned; NAME alone: its next version)")  # fmt: skip
    tune.add_argument("--report", metavar="FILE.md", help="write a Markdown summary with Optuna's plots (PNGs next to it)")
    tune.add_argument("--no-progress", action="store_true", help="hide the progress bar and the line per trial")
    tune.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # a process started by --jobs
    tune.set_defaults(func=cmd_tune)


# ---- rlplug show NAME --space ---------------------------------------------------------------------


def cmd_show_space(args: argparse.Namespace) -> int:
    from ..recipes.search_space import nothing_to_search, pinned_by, recipe_space, space_rows
    from .tables import format_table

    session = open_session(args)
    recipe = session.resolve(args.name, args.set or ())
    spec = session.host.algorithm(recipe.algorithm)
    space = recipe_space(spec, recipe, pinned_by(args.set or (), spec.param_map))
    rows = space_rows(spec, recipe, space)
    if args.json:
        print_json({"recipe": recipe.ref, "algorithm": spec.name, "space": rows})
        return 0
    if not rows:
        print(nothing_to_search(spec, recipe))
        return 0
    from ..schema import choice_text

    print(f"# search space of {recipe.ref} ({spec.name}, from {spec.plugin or 'its plugin'}'s declarations"
          f"{' and the recipe' if recipe.search else ''}); `rlplug tune {recipe.name}` searches it")  # fmt: skip
    print(format_table(["parameter", "search", "recipe value", "from"],
                       [[r["parameter"], r["search"], choice_text(r["value"]), r["from"]] for r in rows]))  # fmt: skip
    return 0


# ---- rlplug tune ----------------------------------------------------------------------------------


def cmd_tune(args: argparse.Namespace) -> int:
    from ..tuning import require_optuna

    require_optuna()
    _check_options(args)
    quiet = args.json or args.no_progress or args.worker is not None
    session = open_session(args)
    if args.worker is None:  # before the storage or any trial: a refused --out would otherwise come after the study
        _check_outputs(session, args)
    context = _Context(args, session)
    if args.worker is not None:
        return _work(context, args)
    if not args.export:
        from .dataset import ensure_dataset

        ensure_dataset(session, context.recipe, quiet=quiet)
    study = context.study(create=not args.export)
    if not args.export:
        try:
            with _signals_stop_trials():
                _search(context, study, args, quiet)
        except KeyboardInterrupt:
            print(f"rlplug: interrupted; study '{context.study_name}' keeps its trials (the running ones are recorded as "
                  "failed): run the same command again to continue it", file=sys.stderr)  # fmt: skip
            return 130
    return _export(context, study, args, quiet)


@contextlib.contextmanager
def _signals_stop_trials() -> Iterator[None]:
    """Ctrl-C and SIGTERM stop the running trial as an interrupt, which Optuna records as a failed trial; a
    second signal while that is written is ignored, so the study never keeps a trial that runs nowhere."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return

    def ignore(signum: int, frame: Any) -> None:  # not SIG_IGN: a signal already pending would raise OSError
        pass

    def stop(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, ignore)
        signal.signal(signal.SIGTERM, ignore)
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGINT, stop), signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])


def _check_options(args: argparse.Namespace) -> None:
    from ..recipes.overrides import check_option

    if args.trials is None and not args.export:
        raise RecipeError("rlplug tune needs --trials N, the number of trials the study should hold (or --export "
                          "to export the best of an existing study)")  # fmt: skip
    for flag, value, low in (("--trials", args.trials, 1), ("--jobs", args.jobs, 1), ("--seeds", args.seeds, 1),
                             ("--evaluations", args.evaluations, 1), ("--eval-seeds", args.eval_seeds, 0)):  # fmt: skip
        if value is not None and not low <= value <= 10**6:
            raise RecipeError(f"{flag} = {value} is outside [{low}, 10**6]")
    if args.steps is not None:
        args.steps = check_option("steps", args.steps, "--steps")
    if args.timeout is not None and not args.timeout > 0:
        raise RecipeError(f"--timeout = {args.timeout:g} must be > 0 seconds")
    if args.max_seconds_per_trial is not None and not 0 < args.max_seconds_per_trial < float("inf"):
        raise RecipeError(f"--max-seconds-per-trial = {args.max_seconds_per_trial:g} must be a number of seconds > 0")
    if args.report is not None and not args.report.endswith(".md"):
        raise RecipeError(f"--report {args.report}: the report is a Markdown file, FILE.md")


class _Context:
    """What the command works with: the recipe with ``--set`` applied, its algorithm, backend, search space,
    the study's storage, name and configuration, and the plan every trial trains."""

    def __init__(self, args: argparse.Namespace, session: Any) -> None:
        from ..pipeline.session import check_backend, require_backend_libraries
        from ..recipes.search_space import nothing_to_search, pinned_by, recipe_space
        from ..tuning.storage import DEFAULT_STORAGE, open_storage

        self.session = session
        self.storage_url = args.storage or DEFAULT_STORAGE
        self.storage = open_storage(self.storage_url)
        self.original = session.resolve(args.name)
        probe = session.resolve(args.name, args.set or ())
        self.spec = session.host.algorithm(probe.algorithm)
        backend = args.backend or probe.backend
        check_backend(self.spec, backend, f"recipe '{probe.name}'")
        self.study_name = args.study or f"{probe.name}-{backend}"
        self.config = None
        if args.export or args.worker is not None:  # trained as the study says, whatever this command line says
            self.config = self._stored_config()
        if self.config is not None:
            backend, overrides = self.config["backend"], list(self.config["overrides"])
        else:
            overrides = list(args.set or ())
        require_backend_libraries(self.spec, backend)
        recipe = session.resolve(args.name, overrides)
        self.space = recipe_space(self.spec, recipe, pinned_by(overrides, self.spec.param_map))
        if not self.space.searched:
            raise RecipeError(nothing_to_search(self.spec, recipe))
        recipe.hyperparameters = {**recipe.hyperparameters, **self.space.fixed}
        recipe.backend = backend
        self.recipe = recipe
        if self.config is None:
            steps = args.steps or recipe.steps
            evaluations = min(args.evaluations, steps)
            self.config = {
                "recipe": recipe.ref, "backend": backend, "steps": steps,
                "seeds": [(recipe.seed + i) % 2**32 for i in range(args.seeds)], "overrides": overrides,
                "space": self.space.as_table(), "objective": recipe.target_metric, "evaluations": evaluations,
                "warmup_steps": steps // 3, "command": shlex.join(["rlplug", *args.argv]),
                "max_seconds_per_trial": args.max_seconds_per_trial,
            }  # fmt: skip
        self.plan = self._plan()

    def _stored_config(self) -> dict[str, Any]:
        from ..tuning import StudyError
        from ..tuning.storage import study_config, study_exists

        if not study_exists(self.storage, self.study_name):
            raise StudyError(f"no study '{self.study_name}' in {self.storage_url}; run `rlplug tune` without --export first")
        import optuna

        config = study_config(optuna.load_study(study_name=self.study_name, storage=self.storage))
        if config["recipe"].partition("@")[0] != self.original.name:
            raise StudyError(f"study '{self.study_name}' tuned {config['recipe']}, not {self.original.name}")
        return config

    def _plan(self) -> Any:
        from ..tuning.objective import TrialPlan

        c = self.config
        return TrialPlan(self.session, self.recipe, c["backend"], c["steps"], list(c["seeds"]), c["evaluations"], c["objective"],
                         c.get("max_seconds_per_trial"))  # fmt: skip

    def study(self, create: bool, worker: int = 0) -> Any:
        from ..tuning.storage import open_study

        return open_study(self.storage, self.study_name, self.config, seed=self.recipe.seed + worker, create=create)

    def objective(self) -> Any:
        from ..tuning.objective import Objective

        return Objective(self.plan, self.space, self.spec.param_map)


def _single_threaded() -> None:
    """Trials are small networks: one torch thread each, so --jobs processes do not fight over cores."""
    import torch

    torch.set_num_threads(1)


def _work(context: _Context, args: argparse.Namespace) -> int:
    """A worker started by ``--jobs``: run trials until the study holds ``--trials``; print nothing."""
    from ..tuning.loop import run_trials

    _single_threaded()
    study = context.study(create=False, worker=args.worker)
    try:
        with _signals_stop_trials():
            run_trials(study, context.objective(), args.trials, args.timeout)
    except KeyboardInterrupt:  # the process that started it says so, once
        return 130
    return 0


def _search(context: _Context, study: Any, args: argparse.Namespace, quiet: bool) -> None:
    from ..tuning.loop import Monitor, finished, run_trials, run_workers
    from ..tuning.objective import enqueue_values

    from optuna.trial import TrialState

    held = len(study.trials)
    kept = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING)
    if not any(t.user_attrs.get("baseline") and t.state in kept for t in study.trials):
        # the first trial of a study is the recipe as written (again, when an interrupt failed it)
        values = {**context.spec.defaults(), **context.recipe.hyperparameters}
        study.enqueue_trial(enqueue_values(context.space, values), user_attrs={"baseline": True})
    if not quiet:
        missing = max(0, args.trials - finished(study))
        print(f"study '{context.study_name}' in {context.storage_url}: {held} trial{'s' if held != 1 else ''} so far, {missing} to run"
              f"{f' on {args.jobs} processes' if args.jobs > 1 and missing else ''}", file=sys.stderr)  # fmt: skip
    monitor = Monitor(study, args.trials, progress=not quiet, lines=not quiet)
    try:
        if args.jobs == 1:
            _single_threaded()
            run_trials(study, context.objective(), args.trials, args.timeout, after_trial=monitor.update)
        else:
            codes = run_workers([_worker_command(context, args, i) for i in range(min(args.jobs, args.trials))], monitor)
            if any(codes):
                from ..tuning import StudyError

                raise StudyError(f"a worker process stopped with exit code {max(codes, key=abs)}; its error is above")
    finally:
        monitor.close()


def _worker_command(context: _Context, args: argparse.Namespace, index: int) -> list[str]:
    c = context.config
    command = [sys.executable, "-m", "rlplug.cli", "tune", args.name, "--backend", c["backend"], "--trials", str(args.trials),
               "--storage", context.storage_url, "--study", context.study_name, "--worker", str(index)]  # fmt: skip
    if args.timeout is not None:
        command += ["--timeout", str(args.timeout)]
    for flag, values in (("--plugin", args.plugin), ("--recipes", args.recipes)):
        for value in values or ():
            command += [flag, value]
    return command


def _export(context: _Context, study: Any, args: argparse.Namespace, quiet: bool) -> int:
    from ..tuning.export import (baseline_trial, best_trial, best_values, changes, export_ref, recipe_text, reevaluate,
                                 summary_comments, tuned_recipe, verdict_lines, write_recipe)  # fmt: skip

    log = (lambda line: None) if quiet else (lambda line: print(line, file=sys.stderr))
    best = best_trial(study)
    best_hp = best_values(best, context.space)
    original = copy.deepcopy(context.original)
    tuned = tuned_recipe(context.plan, best_hp)
    fields, hp, tables = changes(context.spec, original, tuned)
    if args.eval_seeds:
        _single_threaded()
    reeval = reevaluate(study, context.plan, original, best_hp, best.number, args.eval_seeds, bool(fields or hp or tables), log,
                        progress=not quiet)  # fmt: skip
    verdicts = verdict_lines(reeval, best, baseline_trial(study), original.ref)
    name, version = export_ref(context.session.book, original, args.as_ref)
    comments = summary_comments(study, context.config, best, context.space, reeval, original.ref, context.storage_url)
    description = f"{original.name} tuned by rlplug tune (study {context.study_name}, best of {len(study.trials)} trials)"
    out = _out(original, args)
    write_recipe(out, recipe_text(name, version, original.ref, description, fields, hp, tables, comments),
                 _inputs(context.session, original))  # fmt: skip
    # the file is read back as `rlplug show NAME --recipes FILE` reads it: what was written is a valid recipe
    from ..pipeline.session import Session

    Session(plugins=context.session.plugins, recipe_files=(*context.session.recipe_files, str(out))).resolve(f"{name}@{version}")
    written = [out]
    if args.report:
        from ..tuning.report import write_report

        values = {**context.spec.defaults(), **original.hyperparameters}
        written += write_report(Path(args.report), study, context.config, best, context.space, values, reeval,
                                original.ref, out, comments)  # fmt: skip
    result = {
        "study": context.study_name, "storage": context.storage_url, "trials": len(study.trials),
        "best_trial": best.number, "best_value": best.value, "best_values": best_hp,
        "reevaluation": None if reeval is None else {"seeds": reeval.seeds, "tuned": reeval.tuned, "original": reeval.original,
                                                     "tuned_steps_per_second": reeval.tuned_steps_per_second,
                                                     "original_steps_per_second": reeval.original_steps_per_second},
        "best_steps_per_second": best.user_attrs.get("steps_per_second"), "verdicts": verdicts,
        "recipe": f"{name}@{version}", "file": str(out), "changes": {**fields, "hyperparameters": hp, **tables},
        "report": args.report,
    }  # fmt: skip
    if args.json:
        print_json(result)
        return 0
    shown = ", ".join(f"{k} = {_short(v)}" for k, v in hp.items()) or "(no hyperparameter changed)"
    print(f"best: trial {best.number} of {len(study.trials)}, {best.value:.4g}: {shown}")
    if reeval is not None:
        print(reeval.line(original.ref))
    for line in verdicts:
        print(line)
    recipes = " ".join(f"--recipes {shlex.quote(f)}" for f in (*context.session.recipe_files, str(out)))
    print(f"recipe {name}@{version} written to {out}; train it with: rlplug train {name} {recipes}")
    if args.report:
        print(f"report: {args.report} (and {len(written) - 2} plots next to it)")
    return 0


def _out(recipe: Any, args: argparse.Namespace) -> Path:
    from ..recipes.fields import file_stem

    return Path(args.out or f"{file_stem(recipe.name)}-tuned.toml")


def _inputs(session: Any, recipe: Any) -> list[tuple[Path, str]]:
    """What tune reads and so must never write over: the recipe files, and the file its recipe comes from."""
    files = [(Path(f), "a recipe file given with --recipes") for f in session.recipe_files]
    if recipe.source:
        files.append((Path(recipe.source), f"the file recipe {recipe.ref} comes from"))
    return files


def _check_outputs(session: Any, args: argparse.Namespace) -> None:
    from ..util.outputs import TUNED_RECIPE, check_output

    recipe = session.resolve(args.name)
    inputs = _inputs(session, recipe)
    check_output(_out(recipe, args), TUNED_RECIPE, "tune --out", inputs)
    if args.report:
        from ..tuning.report import check_report_paths

        check_report_paths(Path(args.report), inputs)


def _short(value: Any) -> str:
    from ..schema import choice_text

    return f"{value:.4g}" if isinstance(value, float) else choice_text(value)
