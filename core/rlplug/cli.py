"""``rlplug`` command line. Bad input exits 2 with one line on stderr; nothing else is printed for it."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from .distributed import finish_worker, world
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
        env = table.get("env") + (f" ({table['dataset']})" if table.get("dataset") else "")
        rows.append([f"{name}@{ver}", table.get("algorithm"), env, backends, table.get("steps"), table.get("target")])
        data.append({"name": name, "version": ver, "algorithm": table.get("algorithm"), "env": table.get("env"),
                     "dataset": table.get("dataset", ""),
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
    unit = "gradient updates" if summary.get("step_unit") == "updates" else "steps"
    score = ""
    if summary.get("normalised_score") is not None:
        score = f", normalised score {summary['normalised_score']:.1f} (dataset mean return {summary['dataset_return_mean']})"
    target = f"score {summary['target']:g}" if summary.get("target_metric") == "normalised_score" else f"{summary['target']:g}"
    line = (f"{summary['recipe']} on {summary['backend']}: eval return {summary['eval_return_mean']:.1f} "
            f"± {summary['eval_return_std']:.1f} over {summary['eval_episodes']} episodes{score} "
            f"(target {target}, {verdict}); {summary['steps']} {unit} in {summary['wall_seconds']:.1f} s")
    if summary.get("world_size", 1) > 1:
        line += (f" on {summary['world_size']} processes ({summary['steps_all_ranks']} {unit} over all ranks, "
                 f"{summary['steps_per_second_all_ranks']:.0f}/s)")
        if not summary.get("ranks_in_sync"):
            line += "\nwarning: the ranks' networks differ after training; report this as a bug"
    if summary.get("run_dir"):
        line += f"\nrun directory: {summary['run_dir']}"
    return line


def _report(args: argparse.Namespace, summary: dict[str, Any]) -> int:
    if args.json:
        _emit_json(summary)
    else:
        print(_finish_line(summary))
    return 0


def _device(args: argparse.Namespace) -> str:
    """This process's device: joins the process group first when torchrun started it (a worker)."""
    from .distributed import init_worker, rank_device, world

    device = getattr(args, "device", None) or "cpu"
    return init_worker(device) if world().distributed else rank_device(device, 0)


def _launching(args: argparse.Namespace) -> bool:
    """Whether this process is the launcher of a multi-process run (workers never see --nproc)."""
    if args.nproc is None and (args.nnodes != 1 or args.rdzv_endpoint):
        args.nproc = 1
    return args.nproc is not None


def cmd_train(args: argparse.Namespace) -> int:
    from .distributed import world
    from .runs import default_run_dir, join_ranks, train

    overrides = list(args.set or ())
    if args.steps is not None:
        overrides.append(f"steps={args.steps}")
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    device = args.device if _launching(args) else _device(args)
    here = world()
    session = _session(args)
    recipe = session.resolve(args.name, overrides)
    if here.is_main:
        _ensure_dataset(session, recipe, quiet=args.json)
    build = session.prepare(recipe, args.backend, device=device)
    run_dir = None
    if not args.no_write:
        run_dir = Path(args.run_dir) if args.run_dir else default_run_dir(build.recipe, build.backend)
        if here.is_main and run_dir.exists() and any(run_dir.iterdir()):
            raise RlplugError(f"run directory {run_dir} already exists and is not empty; choose another --run-dir")
    if args.nproc is not None:  # the launcher: everything above is checked once, before any process starts
        from .runs import check_distributed
        from .distributed import launch, worker_argv

        check_distributed(build.algorithm, build.backend, session.host.algorithms.values())
        return launch(worker_argv(args.argv, None if run_dir is None else str(run_dir)), args.nproc, args.nnodes, args.rdzv_endpoint)
    join_ranks(build, session)
    session.construct(build)
    try:
        summary = train(build, run_dir=run_dir, progress=not (args.json or args.no_progress), checkpoint_every=args.checkpoint_every)
    finally:
        build.trainer.close()
    return _report(args, summary) if here.is_main else 0


def _load_run(args: argparse.Namespace, device: str = "cpu"):
    from .runs import open_run

    run_dir = Path(args.run_dir)
    return run_dir, open_run(_session(args), run_dir, device)


def cmd_eval(args: argparse.Namespace) -> int:
    import numpy as np

    video_dir = None
    if args.video:
        import importlib.util

        if importlib.util.find_spec("moviepy") is None:
            raise RlplugError("eval --video records with gymnasium's RecordVideo, which needs moviepy: pip install moviepy")
        video_dir = str(Path(args.run_dir) / "videos")
    run_dir, build = _load_run(args)
    try:
        if video_dir is not None and build.extras.get("multiagent") is not None:
            raise RlplugError("eval --video records single-agent gymnasium environments only")
        returns = build.trainer.evaluate(args.episodes or build.recipe.eval_episodes, **({"video_dir": video_dir} if video_dir else {}))
    finally:
        build.trainer.close()
    mean = float(np.mean(returns))
    result = {"run_dir": str(run_dir), "recipe": build.recipe.ref, "backend": build.backend,
              "steps": build.trainer.progress, "step_unit": build.trainer.progress_unit, "eval_episodes": len(returns),
              "eval_return_mean": round(mean, 2), "eval_return_std": round(float(np.std(returns)), 2),
              "target": build.recipe.target}
    dataset = build.extras.get("dataset")
    if dataset is not None:
        score = dataset.normalised_score(mean)
        result["normalised_score"] = round(score, 1) if score is not None else None
    if video_dir is not None:
        result["videos"] = sorted(str(p) for p in Path(video_dir).glob("*.mp4"))
    if args.json:
        _emit_json(result)
    else:
        unit = "gradient updates" if result["step_unit"] == "updates" else "steps"
        score = f", normalised score {result['normalised_score']:.1f}" if result.get("normalised_score") is not None else ""
        print(f"{result['recipe']} on {result['backend']} after {result['steps']} {unit}: eval return "
              f"{result['eval_return_mean']:.1f} ± {result['eval_return_std']:.1f} over {result['eval_episodes']} episodes{score}")
        if video_dir is not None:
            print(f"videos: {video_dir} ({len(result['videos'])} files)")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    from .distributed import world
    from .runs import read_run, resume_note, train

    if _launching(args):  # checked once, before any process starts
        from .distributed import launch, worker_argv
        from .runs import check_distributed

        recipe, backend, _ = read_run(Path(args.run_dir))
        session = _session(args)
        check_distributed(session.host.algorithm(recipe.algorithm), backend, session.host.algorithms.values())
        return launch(worker_argv(args.argv, None), args.nproc, args.nnodes, args.rdzv_endpoint)
    here = world()
    run_dir, build = _load_run(args, _device(args))
    note = resume_note(build.extras.get("saved_world_size", 1), here.size)
    if note and here.is_main:  # stderr: --json output stays one document
        print(f"rlplug: note: {note}", file=sys.stderr)
    steps = args.steps or build.recipe.steps
    if build.trainer.progress >= steps:
        build.trainer.close()
        raise RlplugError(f"run {run_dir} already reached {build.trainer.progress} of {steps} steps; pass --steps to go further")
    try:
        summary = train(build, steps=steps, run_dir=run_dir, progress=not (args.json or args.no_progress), resume=True,
                        checkpoint_every=args.checkpoint_every)
    finally:
        build.trainer.close()
    return _report(args, summary) if here.is_main else 0


def _bench_row(summary: dict[str, Any]) -> list[Any]:
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


def _ensure_dataset(session: Any, recipe: Any, quiet: bool) -> None:
    """Build a declared dataset a recipe needs when it is missing (``rlplug dataset build`` does the same;
    ``train`` and ``bench`` call this, so a first-party offline recipe runs on a fresh machine)."""
    from .collect import build_declared
    from .datasets import dataset_path

    spec = session.host.algorithms.get(recipe.algorithm)
    if spec is None or spec.kind != "offline":
        return  # prepare() refuses a dataset on an online recipe before anything is trained
    if recipe.dataset and recipe.dataset in session.book.datasets and not dataset_path(recipe.dataset).exists():
        log = (lambda line: None) if quiet else (lambda line: print(line, file=sys.stderr))
        build_declared(session, recipe.dataset, progress=not quiet, log=log)


def cmd_bench(args: argparse.Namespace) -> int:
    from .runs import train

    session = _session(args)
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
        if args.steps:
            overrides.append(f"steps={args.steps}")
        if args.seed is not None:
            overrides.append(f"seed={args.seed}")
        recipe = session.resolve(name, overrides)
        spec = session.host.algorithm(recipe.algorithm)
        _ensure_dataset(session, recipe, quiet=args.json)
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
            rows.append(_bench_row(summary))
            if report is not None:  # rewritten after each row: a long bench leaves a partial report
                from .report import write_report

                write_report(report, data, "rlplug " + " ".join(sys.argv[1:]))
    if args.json:
        _emit_json(data)
    else:
        print(format_table(["recipe", "backend", "steps", "wall s", "steps/s", "eval return", "target", "result"], rows))
    return 0 if all(row["passed"] for row in data) else 1


# ---- dataset ---------------------------------------------------------------------------------------
def _dataset_row(info: Any) -> list[Any]:
    meta = info.metadata
    stats = meta.get("returns") or {}
    ref = meta.get("reference", {})
    return [info.name, meta["env"], meta["transitions"], meta.get("episodes", ""),
            f"{stats['mean']:.1f}" if "mean" in stats else "-",
            f"{ref['random_return']:.1f}" if "random_return" in ref else "-",
            f"{ref['expert_return']:.1f}" if "expert_return" in ref else "-",
            meta.get("source", {}).get("kind", "?")]


def _dataset_done(args: argparse.Namespace, info: Any) -> int:
    if args.json:
        _emit_json({"path": str(info.path), **info.metadata})
    else:
        stats = info.metadata.get("returns") or {}
        mean = f", return mean {stats['mean']:.1f}" if "mean" in stats else ""
        print(f"dataset {info.name}: {info.transitions} transitions, {info.metadata.get('episodes')} episodes{mean} -> {info.path}")
    return 0


def cmd_dataset_collect(args: argparse.Namespace) -> int:
    from .collect import collect

    if bool(args.policy) == bool(args.random):
        raise RlplugError("dataset collect: give exactly one of --policy RUN_DIR or --random")
    info = collect(_session(args), args.name, args.env, policy_run=args.policy, expert_run=args.expert, noise=args.noise,
                   steps=args.steps, seed=args.seed, overwrite=args.overwrite, progress=not (args.json or args.no_progress))
    return _dataset_done(args, info)


def cmd_dataset_from_run(args: argparse.Namespace) -> int:
    from .collect import from_run

    name = args.name or f"{Path(args.run_dir).resolve().name}-replay"
    info = from_run(_session(args), args.run_dir, name, expert_run=args.expert, seed=args.seed, overwrite=args.overwrite)
    return _dataset_done(args, info)


def cmd_dataset_build(args: argparse.Namespace) -> int:
    from .collect import build_declared

    log = (lambda line: print(line, file=sys.stderr)) if not args.json else (lambda line: None)
    info = build_declared(_session(args), args.name, progress=not (args.json or args.no_progress), overwrite=args.overwrite, log=log)
    return _dataset_done(args, info)


def cmd_dataset_info(args: argparse.Namespace) -> int:
    from .datasets import load_data, read_info

    info = read_info(args.name)
    if args.verify:
        load_data(info)  # checksums and shapes: raises on a corrupt or truncated dataset
    if args.json:
        _emit_json({"path": str(info.path), **info.metadata})
        return 0
    meta = info.metadata
    print(f"dataset {info.name} at {info.path}")
    for key in ("env", "transitions", "episodes", "rlplug", "created"):
        print(f"  {key:<18} {meta.get(key)}")
    from .datasets import space_text

    print(f"  {'observation space':<18} {space_text(meta['observation_space'])}")
    print(f"  {'action space':<18} {space_text(meta['action_space'])}")
    stats = meta.get("returns") or {}
    if stats:
        print(f"  {'returns':<18} mean {stats['mean']:.2f}, std {stats['std']:.2f}, min {stats['min']:.2f}, max {stats['max']:.2f}")
    ref = meta.get("reference", {})
    print(f"  {'random return':<18} {ref.get('random_return', '-')}")
    print(f"  {'expert return':<18} {ref.get('expert_return', '-')}  ({ref.get('expert', 'no expert reference')})")
    source = meta.get("source", {})
    print("  source             " + ", ".join(f"{k}={v}" for k, v in source.items()))
    if args.verify:
        print("  checksums          ok")
    return 0


def cmd_dataset_list(args: argparse.Namespace) -> int:
    from .datasets import data_root, dataset_path, list_datasets

    session = _session(args)
    rows, data = [], []
    for found in list_datasets():
        if isinstance(found, tuple):
            rows.append([found[0], "-", "-", "-", "-", "-", "-", f"unreadable: {found[1]}"])
            data.append({"name": found[0], "error": found[1]})
        else:
            rows.append(_dataset_row(found))
            data.append({"name": found.name, "path": str(found.path), **found.metadata})
    for name, table in sorted(session.book.datasets.items()):
        if not dataset_path(name).exists():
            rows.append([name, table.get("env", "?"), table.get("steps", "?"), "-", "-", "-", "-", "declared, not built"])
            data.append({"name": name, "declared": True, "built": False})
    if args.json:
        _emit_json(data)
    else:
        print(f"datasets in {data_root()} (set RLPLUG_DATA_DIR to move them)")
        print(format_table(["dataset", "env", "transitions", "episodes", "return", "random", "expert", "source"], rows))
    return 0


# ---- parser ----------------------------------------------------------------------------------------
def _add_launch_options(command: argparse.ArgumentParser) -> None:
    group = command.add_argument_group("devices and processes (data-parallel through torchrun)")
    group.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="cuda: each process on its own GPU (default: cpu)")
    group.add_argument("--nproc", type=int, metavar="N", help="processes per node (ranks), launched by torch.distributed.run")
    group.add_argument("--nnodes", type=int, default=1, metavar="M", help="nodes taking part; run the same command on each (default: 1)")
    group.add_argument("--rdzv-endpoint", metavar="HOST:PORT", help="where the nodes meet (needed with --nnodes above 1)")


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
    train.add_argument("--checkpoint-every", type=int, metavar="N", help="steps between checkpoints (default: a tenth of the budget)")
    train.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    _add_launch_options(train)
    train.set_defaults(func=cmd_train)

    evaluate = sub.add_parser("eval", parents=[common], help="evaluate a saved run")
    evaluate.add_argument("run_dir")
    evaluate.add_argument("--episodes", type=int)
    evaluate.add_argument("--video", action="store_true", help="record the episodes to RUN_DIR/videos (needs moviepy)")
    evaluate.set_defaults(func=cmd_eval)

    resume = sub.add_parser("resume", parents=[common], help="continue a saved run")
    resume.add_argument("run_dir")
    resume.add_argument("--steps", type=int, help="new total step budget")
    resume.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    resume.add_argument("--checkpoint-every", type=int, metavar="N", help="steps between checkpoints (default: a tenth of the budget)")
    _add_launch_options(resume)
    resume.set_defaults(func=cmd_resume)

    bench = sub.add_parser("bench", parents=[common], help="train recipes and check their targets")
    bench.add_argument("names", nargs="*", metavar="NAME")
    bench.add_argument("--backend", help="comma-separated backends (default: every backend of the algorithm)")
    bench.add_argument("--steps", type=int, help="override every recipe's step budget")
    bench.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a field of every recipe")
    bench.add_argument("--seed", type=int)
    bench.add_argument("--runs-dir", metavar="DIR", help="write each row's run directory (metrics, curve.png) under DIR")
    bench.add_argument("--all", action="store_true", help="every first-party recipe on every backend; writes BENCHMARKS.md")
    bench.add_argument("--report", metavar="FILE.md", help="write the table as Markdown (and FILE.json) with the machine's details")
    bench.set_defaults(func=cmd_bench)

    dataset = sub.add_parser("dataset", help="offline datasets: collect, from-run, build, info, list")
    dsub = dataset.add_subparsers(dest="dataset_command", required=True, metavar="ACTION")
    collect = dsub.add_parser("collect", parents=[common], help="roll out a run's policy (or a random one) into a dataset")
    collect.add_argument("name")
    collect.add_argument("--env", required=True, help="Gymnasium environment id")
    collect.add_argument("--policy", metavar="RUN_DIR", help="behaviour policy: a run directory")
    collect.add_argument("--random", action="store_true", help="behaviour policy: uniformly random actions")
    collect.add_argument("--expert", metavar="RUN_DIR", help="run whose return is the expert reference (default: --policy)")
    collect.add_argument("--noise", type=float, default=0.0, help="epsilon (discrete) or Gaussian std as a fraction of the half action range")
    collect.add_argument("--steps", type=int, default=100_000, help="transitions to collect")
    collect.add_argument("--seed", type=int, default=0)
    collect.add_argument("--overwrite", action="store_true")
    collect.add_argument("--no-progress", action="store_true")
    collect.set_defaults(func=cmd_dataset_collect)
    from_run = dsub.add_parser("from-run", parents=[common], help="a training run's replay memory as a dataset")
    from_run.add_argument("run_dir")
    from_run.add_argument("--name", help="dataset name (default: RUN_DIR's name + '-replay')")
    from_run.add_argument("--expert", metavar="RUN_DIR", help="run whose return is the expert reference (default: the run itself)")
    from_run.add_argument("--seed", type=int, default=0)
    from_run.add_argument("--overwrite", action="store_true")
    from_run.set_defaults(func=cmd_dataset_from_run)
    build = dsub.add_parser("build", parents=[common], help="make a dataset declared in a recipe file ([datasets.NAME])")
    build.add_argument("name")
    build.add_argument("--overwrite", action="store_true")
    build.add_argument("--no-progress", action="store_true")
    build.set_defaults(func=cmd_dataset_build)
    info = dsub.add_parser("info", parents=[common], help="a dataset's metadata")
    info.add_argument("name")
    info.add_argument("--verify", action="store_true", help="also check every file's checksum")
    info.set_defaults(func=cmd_dataset_info)
    dsub.add_parser("list", parents=[common], help="datasets on this machine, and declared ones not built yet").set_defaults(func=cmd_dataset_list)

    sub.add_parser("doctor", parents=[common], help="versions, plugins, and what failed to load").set_defaults(func=cmd_doctor)
    return parser


def main(argv: list[str] | None = None) -> int:
    # TorchRL logs INFO lines to stdout at import, which would break --json output
    os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(argv) if argv is not None else sys.argv[1:]  # a launcher hands it on to torchrun
    try:
        code = args.func(args)
        if code == 0 and world().distributed:
            finish_worker(code)  # does not return
        return code
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
