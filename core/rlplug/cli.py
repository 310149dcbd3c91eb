"""``rlplug`` command line. Bad input exits 2 with one line on stderr; nothing else is printed for it."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from .errors import RlplugError
from .tables import format_table, to_toml


def _session(args: argparse.Namespace):
    from .pipeline import Session

    return Session(plugins=args.plugin or (), recipe_files=args.recipes or ())


def _emit_json(data: Any) -> None:
    print(json.dumps(data, indent=2))


# ---- list / recipes / show / losses / doctor -------------------------------------------------------
def cmd_list(args: argparse.Namespace) -> int:
    session = _session(args)
    host = session.host
    rows, data = [], []
    for record in host.records:
        for spec in record.algorithms:
            status = "conflict" if spec.name in host.conflicts else "ok"
            for backend, bspec in spec.backends.items():
                rows.append([spec.name, backend, spec.kind, ", ".join(bspec.action_spaces), record.dist, record.version, status])
                data.append({"algorithm": spec.name, "backend": backend, "kind": spec.kind,
                             "action_spaces": list(bspec.action_spaces), "plugin": record.dist,
                             "version": record.version, "status": status})
        if record.status != "ok":
            rows.append([record.name, "-", "-", "-", record.dist, record.version, f"{record.status}: {record.error}"])
            data.append({"algorithm": record.name, "plugin": record.dist, "version": record.version,
                         "status": record.status, "error": record.error})
    if args.json:
        _emit_json(data)
    else:
        print(format_table(["algorithm", "backend", "kind", "actions", "plugin", "version", "status"], rows))
        for name, records in host.conflicts.items():
            print(f"conflict: algorithm '{name}' is claimed by " + " and ".join(r.label for r in records))
    return 0


def cmd_recipes(args: argparse.Namespace) -> int:
    session = _session(args)
    rows, data = [], []
    for name, ver in session.book.refs():
        table, entry = session.book.raw(f"{name}@{ver}")
        spec = session.host.algorithms.get(table.get("algorithm", ""))
        backends = ",".join(spec.backends) if spec else "(plugin not installed)"
        rows.append([f"{name}@{ver}", table.get("algorithm"), table.get("env"), backends, table.get("steps"), table.get("target")])
        data.append({"name": name, "version": ver, "algorithm": table.get("algorithm"), "env": table.get("env"),
                     "backends": list(spec.backends) if spec else [], "steps": table.get("steps"),
                     "target": table.get("target"), "source": entry.source})
    if args.json:
        _emit_json(data)
    else:
        print(format_table(["recipe", "algorithm", "env", "backends", "steps", "target"], rows))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from .pipeline import backend_settings, check_backend

    session = _session(args)
    recipe = session.resolve(args.name, args.set or ())
    spec = session.host.algorithm(recipe.algorithm)
    backend = args.backend or recipe.backend
    check_backend(spec, backend, f"recipe '{recipe.name}'")
    table = recipe.to_table()
    table["hyperparameters"] = {**spec.defaults(), **recipe.hyperparameters}
    for name in list(recipe.backend_settings):
        table.pop(name, None)
    settings = backend_settings(spec, backend, table["hyperparameters"], recipe)
    table["backend"] = backend
    table["loss"] = recipe.loss or spec.default_loss
    if args.json:
        _emit_json({"recipe": table, "backend_settings": {backend: settings}})
        return 0
    print(f"# {recipe.ref} from {recipe.source}, resolved for the {backend} backend")
    print(to_toml(table))
    print(f"\n# {backend}'s own settings, translated from the hyperparameters (raw overrides applied)")
    print(to_toml({backend: settings}))
    return 0


def cmd_losses(args: argparse.Namespace) -> int:
    session = _session(args)
    if args.algorithm:
        session.host.algorithm(args.algorithm)
    rows, data = [], []
    for entry in session.host.losses.entries(args.algorithm):
        extra: dict[str, Any] = {}
        if entry.describe is not None:
            try:
                extra = entry.describe()
            except ImportError as err:
                extra = {"note": f"backend not installed ({err.name})"}
        steppers = dict(entry.optimisers)
        optimised = " + ".join(f"{t} ({steppers[t]})" if t in steppers else t for t in entry.terms)
        rows.append([entry.algorithm, entry.backend, entry.name, optimised, ", ".join(entry.reported),
                     extra.get("value_estimator", ""), ", ".join(extra.get("set_keys", [])), entry.source])
        data.append({"algorithm": entry.algorithm, "backend": entry.backend, "name": entry.name,
                     "optimised": list(entry.terms), "optimisers": steppers, "reported": list(entry.reported), "doc": entry.doc,
                     "source": entry.source, **extra})
    if args.json:
        _emit_json(data)
    else:
        print(format_table(["algorithm", "backend", "loss", "optimised", "reported", "estimator", "set_keys", "source"], rows))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from .runs import versions

    session = _session(args)
    print("versions:")
    for name, ver in versions().items():
        print(f"  {name:<11} {ver}")
    print("plugins:")
    for record in session.host.records:
        algos = ", ".join(s.name for s in record.algorithms) or "-"
        line = f"  {record.label:<24} {record.status:<12} algorithms: {algos}"
        if record.error:
            line += f"\n    reason: {record.error}"
        print(line)
    for name, records in session.host.conflicts.items():
        print(f"  conflict: algorithm '{name}' is claimed by " + " and ".join(r.label for r in records))
    return 0


# ---- train / eval / resume / bench -------------------------------------------------------------------
def _finish_line(summary: dict[str, Any]) -> str:
    verdict = "passed" if summary["passed"] else "below target"
    line = (f"{summary['recipe']} on {summary['backend']}: eval return {summary['eval_return_mean']:.1f} "
            f"± {summary['eval_return_std']:.1f} over {summary['eval_episodes']} episodes "
            f"(target {summary['target']:g}, {verdict}); {summary['steps']} steps in {summary['wall_seconds']:.1f} s")
    if summary.get("run_dir"):
        line += f"\nrun directory: {summary['run_dir']}"
    return line


def _report(args: argparse.Namespace, summary: dict[str, Any]) -> int:
    if args.json:
        _emit_json(summary)
    else:
        print(_finish_line(summary))
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from .runs import default_run_dir, train

    overrides = list(args.set or ())
    if args.steps is not None:
        overrides.append(f"steps={args.steps}")
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    session = _session(args)
    build = session.prepare(args.name, args.backend, overrides)
    run_dir = None
    if not args.no_write:
        run_dir = Path(args.run_dir) if args.run_dir else default_run_dir(build.recipe, build.backend)
        if run_dir.exists() and any(run_dir.iterdir()):
            raise RlplugError(f"run directory {run_dir} already exists and is not empty; choose another --run-dir")
    session.construct(build)
    try:
        summary = train(build, run_dir=run_dir, progress=not (args.json or args.no_progress))
    finally:
        build.trainer.close()
    return _report(args, summary)


def _load_run(args: argparse.Namespace):
    from .runs import read_run

    run_dir = Path(args.run_dir)
    recipe, backend, payload = read_run(run_dir)
    session = _session(args)
    build = session.build(recipe, backend)
    build.trainer.load_state_dict(payload["trainer"])
    return run_dir, build


def cmd_eval(args: argparse.Namespace) -> int:
    import numpy as np

    run_dir, build = _load_run(args)
    try:
        returns = build.trainer.evaluate(args.episodes or build.recipe.eval_episodes)
    finally:
        build.trainer.close()
    result = {"run_dir": str(run_dir), "recipe": build.recipe.ref, "backend": build.backend,
              "steps": build.trainer.env_steps, "eval_episodes": len(returns),
              "eval_return_mean": round(float(np.mean(returns)), 2), "eval_return_std": round(float(np.std(returns)), 2),
              "target": build.recipe.target, "passed": bool(np.mean(returns) >= build.recipe.target)}
    if args.json:
        _emit_json(result)
    else:
        print(f"{result['recipe']} on {result['backend']} after {result['steps']} steps: eval return "
              f"{result['eval_return_mean']:.1f} ± {result['eval_return_std']:.1f} over {result['eval_episodes']} episodes")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    from .runs import train

    run_dir, build = _load_run(args)
    steps = args.steps or build.recipe.steps
    if build.trainer.env_steps >= steps:
        raise RlplugError(f"run {run_dir} already reached {build.trainer.env_steps} of {steps} steps; pass --steps to go further")
    try:
        summary = train(build, steps=steps, run_dir=run_dir, progress=not (args.json or args.no_progress), resume=True)
    finally:
        build.trainer.close()
    return _report(args, summary)


def cmd_bench(args: argparse.Namespace) -> int:
    from .runs import train

    session = _session(args)
    names = args.names or [n for n, _ in session.book.refs()]
    backends = [b for b in (args.backend or "").split(",") if b]
    rows, data = [], []
    for name in dict.fromkeys(names):
        overrides = list(args.set or ())
        if args.steps:
            overrides.append(f"steps={args.steps}")
        if args.seed is not None:
            overrides.append(f"seed={args.seed}")
        recipe = session.resolve(name, overrides)
        spec = session.host.algorithm(recipe.algorithm)
        for backend in backends or list(spec.backends):
            build = session.build(recipe, backend)
            if not args.json:
                print(f"training {recipe.ref} on {backend} ...", file=sys.stderr)
            try:
                summary = train(build, progress=not args.json)
            finally:
                build.trainer.close()
            data.append(summary)
            rows.append([summary["recipe"], backend, summary["steps"], f"{summary['wall_seconds']:.1f}",
                         f"{summary['steps_per_second']:.0f}", f"{summary['eval_return_mean']:.1f} ± {summary['eval_return_std']:.1f}",
                         f"{summary['target']:g}", "pass" if summary["passed"] else "FAIL"])
    if args.json:
        _emit_json(data)
    else:
        print(format_table(["recipe", "backend", "steps", "wall s", "steps/s", "eval return", "target", "result"], rows))
    return 0 if all(row["passed"] for row in data) else 1


# ---- parser ----------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--plugin", action="append", metavar="MODULE[:OBJ]", help="import a module (or an object in it) and register it as a plugin")
    common.add_argument("--recipes", action="append", metavar="FILE", help="add the recipes in a TOML file")
    common.add_argument("--json", action="store_true", help="machine-readable output")

    parser = argparse.ArgumentParser(prog="rlplug", description="Train RL algorithms from named recipes on skrl or TorchRL.")
    parser.add_argument("--version", action="version", version="rlplug 0.1.0")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("list", parents=[common], help="algorithms x backends, with plugin and version").set_defaults(func=cmd_list)
    sub.add_parser("recipes", parents=[common], help="known recipes").set_defaults(func=cmd_recipes)

    show = sub.add_parser("show", parents=[common], help="print a resolved recipe and its backend settings")
    show.add_argument("name")
    show.add_argument("--backend")
    show.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a recipe field or hyperparameter")
    show.set_defaults(func=cmd_show)

    losses = sub.add_parser("losses", parents=[common], help="registered losses per algorithm and backend")
    losses.add_argument("algorithm", nargs="?")
    losses.set_defaults(func=cmd_losses)

    train = sub.add_parser("train", parents=[common], help="train a recipe and write a run directory")
    train.add_argument("name")
    train.add_argument("--backend")
    train.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a recipe field or hyperparameter")
    train.add_argument("--steps", type=int)
    train.add_argument("--seed", type=int)
    train.add_argument("--run-dir")
    train.add_argument("--no-write", action="store_true", help="write nothing at all")
    train.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    train.set_defaults(func=cmd_train)

    evaluate = sub.add_parser("eval", parents=[common], help="evaluate a saved run")
    evaluate.add_argument("run_dir")
    evaluate.add_argument("--episodes", type=int)
    evaluate.set_defaults(func=cmd_eval)

    resume = sub.add_parser("resume", parents=[common], help="continue a saved run")
    resume.add_argument("run_dir")
    resume.add_argument("--steps", type=int, help="new total step budget")
    resume.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    resume.set_defaults(func=cmd_resume)

    bench = sub.add_parser("bench", parents=[common], help="train recipes and check their targets")
    bench.add_argument("names", nargs="*", metavar="NAME")
    bench.add_argument("--backend", help="comma-separated backends (default: every backend of the algorithm)")
    bench.add_argument("--steps", type=int, help="override every recipe's step budget")
    bench.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a field of every recipe")
    bench.add_argument("--seed", type=int)
    bench.set_defaults(func=cmd_bench)

    sub.add_parser("doctor", parents=[common], help="versions, plugins, and what failed to load").set_defaults(func=cmd_doctor)
    return parser


def main(argv: list[str] | None = None) -> int:
    # TorchRL logs INFO lines to stdout at import, which would break --json output
    os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except RlplugError as err:
        print(f"rlplug: error: {err}", file=sys.stderr)
        return err.exit_code
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stdout = None
        return 0
    except KeyboardInterrupt:
        print("rlplug: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
