"""The cheap commands: ``list``, ``recipes``, ``show``, ``losses``, ``doctor``, ``guide``. They read plugin
declarations and recipes only; no torch, numpy or backend module is imported (tests check it)."""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

from .tables import format_table, to_toml
from .common import note, open_session, print_json


def cmd_list(args: argparse.Namespace) -> int:
    session = open_session(args)
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
        for name in (record.declared or [record.name]) if record.status != "ok" else ():
            rows.append([name, "-", "-", "-", record.dist, record.version, f"{record.status}: {record.error}"])
            data.append({"algorithm": name, "plugin": record.dist, "version": record.version,
                         "status": record.status, "error": record.error})
    if args.json:
        print_json(data)
    else:
        print(format_table(["algorithm", "backend", "kind", "actions", "plugin", "version", "status"], rows))
        for name, records in host.conflicts.items():
            print(f"conflict: algorithm '{name}' is claimed by " + " and ".join(r.label for r in records))
    return 0


def cmd_recipes(args: argparse.Namespace) -> int:
    session = open_session(args)
    if getattr(args, "zoo", False):
        return zoo_recipes(args, session)
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
        print_json(data)
    else:
        print(format_table(["recipe", "algorithm", "env", "backends", "steps", "target"], rows))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from ..pipeline.session import backend_settings, check_backend
    from ..recipes.fields import field_domains

    if getattr(args, "space", False):  # `rlplug show NAME --space`: the search space `rlplug tune` searches
        from .tune import cmd_show_space

        return cmd_show_space(args)
    session = open_session(args)
    recipe = session.resolve(args.name, args.set or ())
    spec = session.host.algorithm(recipe.algorithm)
    backend = args.backend or recipe.backend
    check_backend(spec, backend, f"recipe '{recipe.name}'")
    table = recipe.to_table()
    table["hyperparameters"] = {**spec.defaults(), **recipe.hyperparameters}
    for name in list(recipe.backend_settings):
        table.pop(name, None)
    settings = backend_settings(spec, backend, table["hyperparameters"], recipe)
    if args.format == "hydra":
        return show_torchrl_hydra(recipe, backend, settings, args.out)
    if args.out:
        from ..interop.torchrl_hydra import ExportError

        raise ExportError("--out writes the --format hydra config; without --format hydra, show prints")
    table["backend"] = backend
    table["loss"] = recipe.loss or spec.loss_for(backend)
    domains = {"": field_domains(), "hyperparameters": spec.domains()}
    zoo = zoo_translation(recipe.name)
    if args.json:
        extra = {"zoo": {"entry": zoo.entry, "file": zoo.file,
                         "translated": [{"key": r.key, "value": r.value, "to": r.text, "origin": r.origin} for r in zoo.translated],
                         "dropped": [{"key": r.key, "value": r.value, "reason": r.text, "origin": r.origin} for r in zoo.dropped]}
                 } if zoo else {}  # fmt: skip
        print_json({"recipe": table, "backend_settings": {backend: settings},
                    "domains": {"fields": domains[""], "hyperparameters": domains["hyperparameters"]}, **extra})
        return 0
    print(f"# {recipe.ref} from {recipe.source}, resolved for the {backend} backend; each value's domain after it")
    for line in zoo.lines() if zoo else ():
        print(f"# {line}")
    print(to_toml(table, comments=domains))
    print(f"\n# {backend}'s own settings, translated from the hyperparameters (raw overrides applied)")
    print(to_toml({backend: settings}))
    return 0


def zoo_recipes(args: argparse.Namespace, session: Any) -> int:
    """``rlplug recipes --zoo``: the Zoo's pairs; those of algorithms not installed are listed as such."""
    from ..interop.zoo import pairs

    installed = session.host.algorithms
    rows, data = [], []
    for pair in pairs():
        if pair.algorithm in installed:
            algorithm = pair.algorithm
        else:
            algorithm = f"{pair.algorithm} (its plugin is not installed)"
        rows.append([pair.name, algorithm, pair.env_status, pair.verified])
        data.append({"name": pair.name, "algorithm": pair.algorithm, "algorithm_installed": pair.algorithm in installed,
                     "env": pair.env, "env_status": pair.env_status, "verified": pair.verified})
    if args.json:
        print_json(data)
    else:
        print(format_table(["recipe", "algorithm", "environment here", "verified"], rows))
        usable = sum(1 for d in data if d["algorithm_installed"] and d["env_status"] == "installed")
        print(f"{usable} of {len(data)} pairs can be trained here; `rlplug show NAME` lists what each translates and drops")
    return 0


def zoo_translation(name: str) -> Any:
    """The key-by-key translation behind a ``zoo:`` recipe, or ``None`` for any other recipe."""
    from ..recipes.fields import is_zoo_name

    if not is_zoo_name(name):
        return None
    from ..interop.zoo import translation

    return translation(name)


def show_torchrl_hydra(recipe: Any, backend: str, settings: dict[str, Any], out: str | None) -> int:
    """``show --format hydra``: the recipe as TorchRL's own trainer config (rlplug.interop.torchrl_hydra), printed or written."""
    from pathlib import Path

    from ..interop.torchrl_hydra import ExportError, check_exportable, export_config

    check_exportable(recipe.algorithm, backend, recipe.name)
    path = Path(out) if out else None
    if path is not None and path.suffix not in (".yaml", ".yml"):
        raise ExportError(f"--out {out}: Hydra composes FILE.yaml (or .yml) files")
    if path is not None:  # an earlier export of this file (and the dataset beside it) is replaced, nothing else
        from ..errors import OutputError
        from ..util.outputs import TORCHRL_CONFIG, check_output, describe

        sources = [(Path(recipe.source), f"the file recipe {recipe.ref} comes from")] if recipe.source else []
        ours = check_output(path, TORCHRL_CONFIG, "show --out", sources)
        dataset = path.with_name(path.stem + ".dataset.pt")
        if dataset.exists() and not ours:
            raise OutputError(f"show --out: {dataset} is {describe(dataset)}, not the dataset of an earlier export of "
                              f"{path}; choose another --out or remove it yourself")
    text = export_config(recipe, settings, str(recipe.source), path)
    if path is None:
        print(text, end="")
        return 0
    from ..util.outputs import replace_atomically

    replace_atomically(path, lambda partial: partial.write_text(text), "TorchRL trainer config")
    note(f"wrote {path} (TorchRL trainer config: config_name={path.stem!r}, config_dir={str(path.parent.resolve())!r})")
    return 0


def cmd_losses(args: argparse.Namespace) -> int:
    session = open_session(args)
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
        print_json(data)
    else:
        print(format_table(["algorithm", "backend", "loss", "optimised", "reported", "estimator", "set_keys", "source"], rows))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from .extras import extra_lines
    from .pins import pin_lines
    from ..runs.versions import versions

    session = open_session(args)
    print("versions:")
    for name, ver in versions().items():
        print(f"  {name:<11} {ver}")
    print("environment suites:")
    for line in suite_lines():
        print(f"  {line}")
    off = pin_lines()
    flagged = {line.split(" ", 1)[0].lower() for line in off if " is o" in line}  # "is off" / "is outside"
    print("optional extras:")
    for line in extra_lines(flagged):
        print(f"  {line}")
    print("tested versions:")
    for line in off:
        print(f"  {line}")
    print("plugins:")
    for record in session.host.records:
        algos = ", ".join([s.name for s in record.algorithms] or record.declared) or "-"
        line = f"  {record.label:<24} {record.status:<12} algorithms: {algos}"
        if record.error:
            line += f"\n    reason: {record.error}"
        print(line)
    for name, records in session.host.conflicts.items():
        print(f"  conflict: algorithm '{name}' is claimed by " + " and ".join(r.label for r in records))
    return 0


def suite_lines() -> list[str]:
    """One line per optional environment suite: installed or the extra that installs it (nothing imported)."""
    from ..envs.suites import ATARI_PREPROCESSING_NEEDS, SUITES, suite_available
    from .pins import install_command

    lines = []
    for suite in SUITES.values():
        resume = "resumes mid-episode" if suite.resumes_mid_episode else "resume restarts episodes"
        status = f"available ({resume})" if suite_available(suite) else f"not installed: {install_command(suite.extra)}"
        if suite.name == "atari" and suite_available(suite) and importlib.util.find_spec(ATARI_PREPROCESSING_NEEDS[0]) is None:
            status = f"available without atari preprocessing (no OpenCV): {install_command(suite.extra)}"
        lines.append(f"{suite.name:<11} {status}")
    return lines


def cmd_guide(args: argparse.Namespace) -> int:
    from .guide import examples_path, guide_path, guide_text

    if args.examples:
        print(examples_path())
    elif args.path:
        print(guide_path(args.topic))
    else:
        print(guide_text(args.topic), end="")
    return 0
