"""``dataset collect | from-run | build | info | export | list``: offline datasets, and building a declared one
a recipe needs before ``train`` or ``bench`` uses it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import RlplugError
from ..recipes.overrides import check_option
from .tables import format_table
from .common import open_session, print_json


def cmd_dataset_collect(args: argparse.Namespace) -> int:
    from ..data.collect import collect

    if bool(args.policy) == bool(args.random):
        raise RlplugError("dataset collect: give exactly one of --policy RUN_DIR or --random")
    steps = check_option("transitions", args.steps, "--steps")
    seed = check_option("seed", args.seed, "--seed")
    noise = check_option("noise", args.noise, "--noise")
    envs = check_option("collect_envs", args.envs, "--envs")
    info = collect(open_session(args), args.name, args.env, policy_run=args.policy, expert_run=args.expert, noise=noise,
                   steps=steps, seed=seed, overwrite=args.overwrite, progress=not (args.json or args.no_progress), envs=envs)
    return _done(args, info)


def cmd_dataset_from_run(args: argparse.Namespace) -> int:
    from ..data.collect import from_run

    seed = check_option("seed", args.seed, "--seed")
    name = args.name or f"{Path(args.run_dir).resolve().name}-replay"
    info = from_run(open_session(args), args.run_dir, name, expert_run=args.expert, seed=seed, overwrite=args.overwrite)
    return _done(args, info)


def cmd_dataset_build(args: argparse.Namespace) -> int:
    from ..data.collect import build_declared

    log = (lambda line: print(line, file=sys.stderr)) if not args.json else (lambda line: None)
    info = build_declared(open_session(args), args.name, progress=not (args.json or args.no_progress), overwrite=args.overwrite, log=log)
    return _done(args, info)


def cmd_dataset_info(args: argparse.Namespace) -> int:
    from ..data.datasets import load_data, read_info, space_text

    info = read_info(args.name)
    if args.verify:
        load_data(info)  # checksums and shapes: raises on a corrupt or truncated dataset
    if args.json:
        print_json({"path": str(info.path), **info.metadata})
        return 0
    meta = info.metadata
    print(f"dataset {info.name} at {info.path}")
    for key in ("env", "transitions", "episodes", "rlplug", "created"):
        print(f"  {key:<18} {meta.get(key)}")
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


def cmd_dataset_export(args: argparse.Namespace) -> int:
    from ..data.datasets import load_data, read_info
    from ..data.minari import default_minari_id, export_minari, minari_summary

    info = read_info(args.name)
    data = load_data(info)  # checksums, shapes and finite values: a dataset is exported only if it could be trained on
    dataset_id = args.id or default_minari_id(args.name)
    path = export_minari(info, data, dataset_id)
    if args.json:
        print_json({"path": str(path), **minari_summary(path)})
    else:
        print(f"dataset {info.name} -> Minari dataset {dataset_id} at {path} (minari.load_dataset({dataset_id!r}))")
    return 0


def cmd_dataset_list(args: argparse.Namespace) -> int:
    from ..data.datasets import data_root, dataset_path, list_datasets

    session = open_session(args)
    rows, data = [], []
    for found in list_datasets():
        if isinstance(found, tuple):
            rows.append([found[0], "-", "-", "-", "-", "-", "-", f"unreadable: {found[1]}"])
            data.append({"name": found[0], "error": found[1]})
        else:
            rows.append(_row(found))
            data.append({"name": found.name, "path": str(found.path), **found.metadata})
    from ..data.minari import local_minari_rows, minari_root

    for row in local_minari_rows():  # read with `dataset = "minari:ID"`; needs the minari extra to train on
        if "error" in row:
            rows.append([row["name"], "-", "-", "-", "-", "-", "-", row["error"]])
        else:
            refs = [f"{row[k]:.1f}" if isinstance(row[k], (int, float)) else "-" for k in ("random_return", "expert_return")]
            rows.append([row["name"], row["env"], row["transitions"], row["episodes"], "-", *refs, f"minari ({minari_root()})"])
        data.append({**row, "minari": True})
    for name, table in sorted(session.book.datasets.items()):
        if not dataset_path(name).exists():
            rows.append([name, table.get("env", "?"), table.get("steps", "?"), "-", "-", "-", "-", "declared, not built"])
            data.append({"name": name, "declared": True, "built": False})
    if args.json:
        print_json(data)
    else:
        print(f"datasets in {data_root()} (set RLPLUG_DATA_DIR to move them)")
        print(format_table(["dataset", "env", "transitions", "episodes", "return", "random", "expert", "source"], rows))
    return 0


def ensure_dataset(session: Any, recipe: Any, quiet: bool) -> None:
    """Build a declared dataset a recipe needs when it is missing (``rlplug dataset build`` does the same;
    ``train`` and ``bench`` call this, so a first-party offline recipe runs on a fresh machine)."""
    from ..data.collect import build_declared
    from ..data.datasets import dataset_path

    spec = session.host.algorithms.get(recipe.algorithm)
    if spec is None or not spec.reads_dataset:
        return  # prepare() refuses a dataset on an online recipe before anything is trained
    if recipe.dataset and recipe.dataset in session.book.datasets and not dataset_path(recipe.dataset).exists():
        log = (lambda line: None) if quiet else (lambda line: print(line, file=sys.stderr))
        build_declared(session, recipe.dataset, progress=not quiet, log=log)


def _row(info: Any) -> list[Any]:
    meta = info.metadata
    stats = meta.get("returns") or {}
    ref = meta.get("reference", {})
    return [info.name, meta["env"], meta["transitions"], meta.get("episodes", ""),
            f"{stats['mean']:.1f}" if "mean" in stats else "-",
            f"{ref['random_return']:.1f}" if "random_return" in ref else "-",
            f"{ref['expert_return']:.1f}" if "expert_return" in ref else "-",
            meta.get("source", {}).get("kind", "?")]


def _done(args: argparse.Namespace, info: Any) -> int:
    if args.json:
        print_json({"path": str(info.path), **info.metadata})
    else:
        stats = info.metadata.get("returns") or {}
        mean = f", return mean {stats['mean']:.1f}" if "mean" in stats else ""
        print(f"dataset {info.name}: {info.transitions} transitions, {info.metadata.get('episodes')} episodes{mean} -> {info.path}")
    return 0
