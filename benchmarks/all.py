"""One command for BENCHMARKS.md: run the benchmark sections, store each result, render the page.

Sections (each run in its own process; each writes ``benchmarks/results/<section>.json``):

  bench           ``rlplug bench --all --report``: every first-party recipe on every backend (~40 min)
  overhead        ``compare_plain.py``: rlplug ÷ plain skrl / TorchRL scripts, ppo-cartpole and sac-pendulum
  startup         ``startup.py``: cold start of the listing commands, `train` ready to step
  backend_ratio   ``backend_ratio.py``: TorchRL ÷ skrl seconds per step on every shared recipe, interleaved, profiled (~40 min)
  floor           ``sac_updates.py``, ``td3_updates.py``, ``iql_updates.py``, ``cql_updates.py``: updates/s ÷ a plain PyTorch loop
  sac_floor       ``sac_floor.py`` + ``sb3_time_to_target.py`` at 256x256: SAC against a fused plain floor and SB3 (~15 min)
  optimizer       ``optimizer_impl.py``: Adam loop / foreach / fused (and torch.compile) on the update cells
  ensemble        ``ensemble_critics.py``: N critics as one batched module (EnsembleMlp, vmap) against the per-critic loop
  ensemble_cells  ``ensemble_cells.py``: each cell's gradient steps/s with batched_critics false and true (N = 2, 5, 10)
  compile         ``compile_gains.py``: compile = true ÷ eager updates/s per cell, compile time cold and warm (~1 h)
  time_to_target  ``sb3_time_to_target.py``: seconds to the target ÷ Stable-Baselines3 (needs the bench extra)
  scaling         ``scaling.py``: steps/s of one process against ``rlplug train --nproc 2``
  vector_modes    ``vector_modes.py``: steps/s with vector_mode sync vs async (ppo-halfcheetah and Pong, 2 and 4 envs)
  wide_envs       ``wide_envs.py``: PPO steps/s at 8-1024 envs on both backends against a plain batched PyTorch PPO loop
  env_steps       ``env_steps.py``: env steps/s of gymnasium sync/async vector envs against EnvPool (MuJoCo, Atari; 8, 64 envs)
  torch_envs      ``torch_envs.py``: PPO steps/s through a torch-native CartPole against gymnasium's (1,024 and 4,096 envs)
  eval_speed      ``eval_speed.py``: `rlplug eval` of a 5,000-step ppo-cartpole run on each backend against a plain script

BENCHMARKS.md (and BENCHMARKS.json) at the repository root are then rendered from all stored results,
including the TorchRL ÷ skrl backend ratios the bench rows give beside the interleaved ones (``render.py``). Where they exist, the
page also uses ``results/random_returns.json`` (``random_returns.py``: the aggregate line, an IQM of normalised
scores against registry.toml's references) and ``docs/curves/<recipe>.png`` (``curves.py``; ``--curves`` draws
them first from the bench rows' run directories).

    RLPLUG_DATA_DIR=/work/data nice -n 5 python benchmarks/all.py                 # everything
    python benchmarks/all.py --only overhead,startup                              # rerun two, re-render all
    python benchmarks/all.py --only none                                          # re-render from stored results
    python benchmarks/all.py --only none --import-bench BENCHMARKS.json           # adopt an earlier bench table
    python benchmarks/all.py --only none --import-bench R.json --curves           # ... and draw its runs' curves

Run it on an otherwise idle machine where possible; every figure is a ratio measured interleaved
except the bench table's own wall times.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
RANDOM_RETURNS = RESULTS / "random_returns.json"  # random_returns.py; not a section: it changes only with the envs
ZOO_RANDOM_RETURNS = RESULTS / "random_returns_zoo.json"  # random_returns.py --zoo: the verified Zoo pairs' envs
sys.path.insert(0, str(HERE))

from curves import CURVES, existing_curves, write_curves  # noqa: E402
from render import STORED, combined_json, load_results, render  # noqa: E402

PY = sys.executable
FLOOR_RUNS = {  # workload -> command printing one JSON line (update_rates.report)
    "sac-pendulum": [PY, str(HERE / "sac_updates.py"), "--updates", "300", "--rounds", "3", "--json"],
    "td3-pendulum": [PY, str(HERE / "td3_updates.py"), "--updates", "400", "--rounds", "3", "--json"],
    "iql-pendulum-medium": [PY, str(HERE / "iql_updates.py"), "--updates", "300", "--rounds", "3", "--json"],
    "cql-pendulum-medium": [PY, str(HERE / "cql_updates.py"), "--recipe", "cql-pendulum-medium", "--updates", "200", "--rounds", "3", "--json"],
    "cql-cartpole-medium": [PY, str(HERE / "cql_updates.py"), "--recipe", "cql-cartpole-medium", "--updates", "300", "--rounds", "3", "--json"],
}


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def shown(command: list[str]) -> str:
    """A command as a reader would type it from the repository root."""
    parts = ["python" if part == PY else part for part in command]
    return " ".join(str(Path(p).relative_to(ROOT)) if p.startswith(str(ROOT)) else p for p in parts)


def run_json(command: list[str], out_file: Path | None = None) -> object:
    """Run a section's script (stderr passes through as progress); its JSON from ``out_file`` or stdout's last line."""
    print(f"$ {shown(command)}", file=sys.stderr, flush=True)
    stdout = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT).stdout.strip()
    if out_file is not None:
        return json.loads(out_file.read_text())
    return json.loads(stdout if stdout.startswith("{") else stdout.splitlines()[-1])


def store(section: str, command: str, data: object, date: str | None = None) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    envelope = {"section": section, "command": command, "date": date or now(), "data": data}
    (RESULTS / f"{section}.json").write_text(json.dumps(envelope, indent=2) + "\n")


def run_section(section: str, scratch: Path) -> None:
    if section == "bench":
        report = scratch / "bench.md"
        command = [PY, "-m", "rlplug.cli", "bench", "--all", "--report", str(report)]
        print(f"$ {shown(command)}", file=sys.stderr, flush=True)
        subprocess.run(command, check=True, cwd=ROOT)
        bench = json.loads(report.with_suffix(".json").read_text())
        store("bench", "rlplug bench --all", {"machine": bench["machine"], "rows": bench["rows"]}, bench["machine"]["date"])
    elif section == "overhead":
        out = scratch / "overhead.json"
        command = [PY, str(HERE / "compare_plain.py"), "--recipe", "ppo-cartpole,sac-pendulum", "--repeats", "3", "--json", str(out)]
        store(section, shown(command[:-2]), run_json(command, out))
    elif section == "startup":
        command = [PY, str(HERE / "startup.py"), "--repeats", "5", "--json"]
        store(section, shown(command), run_json(command))
    elif section == "floor":
        data = {workload: run_json(command) for workload, command in FLOOR_RUNS.items()}
        store(section, "; ".join(shown(c) for c in FLOOR_RUNS.values()), data)
    elif section == "sac_floor":
        floor_command = [PY, str(HERE / "sac_floor.py"), "--updates", "300", "--rounds", "3", "--compile", "--json"]
        out = scratch / "sac_floor_time.json"
        # the cells' default per-critic path: the floor table measures batched_critics = true slower at N = 2
        time_command = [PY, str(HERE / "sb3_time_to_target.py"), "--recipe", "sac-pendulum", "--seeds", "42,0,1", "--set",
                        "hidden_sizes=[256,256]", "--json", str(out)]  # fmt: skip
        data = {"floor": run_json(floor_command), "time_to_target": run_json(time_command, out)}
        store(section, f"{shown(floor_command)}; {shown(time_command[:-2])}", data)
    elif section == "optimizer":
        out = scratch / "optimizer.json"
        command = [PY, str(HERE / "optimizer_impl.py"), "--updates", "200", "--rounds", "3", "--compile", "--json", str(out)]
        store(section, shown(command[:-2]), run_json(command, out))
    elif section == "ensemble":
        out = scratch / "ensemble.json"
        command = [PY, str(HERE / "ensemble_critics.py"), "--updates", "200", "--rounds", "5", "--json", str(out)]
        store(section, shown(command[:-2]), run_json(command, out))
    elif section == "ensemble_cells":
        out = scratch / "ensemble_cells.json"
        command = [PY, str(HERE / "ensemble_cells.py"), "--updates", "100", "--rounds", "3", "--json", str(out)]
        store(section, shown(command[:-2]), run_json(command, out))
    elif section == "compile":
        out = scratch / "compile.json"
        command = [PY, str(HERE / "compile_gains.py"), "--updates", "60", "--rounds", "3", "--json", str(out)]
        store(section, shown(command[:-2]), run_json(command, out))
    elif section == "backend_ratio":
        out = scratch / "backend_ratio.json"
        command = [PY, str(HERE / "backend_ratio.py"), "--repeats", "2", "--profile", "--json", str(out)]
        store(section, shown(command[:-2]), run_json(command, out))
    elif section == "vector_modes":
        out = scratch / "vector_modes.json"
        command = [PY, str(HERE / "vector_modes.py"), "--steps", "8192", "--repeats", "2", "--json", str(out)]
        store(section, shown(command[:-2]), run_json(command, out))
    elif section == "wide_envs":
        out = scratch / "wide_envs.json"
        command = [PY, str(HERE / "wide_envs.py"), "--repeats", "2", "--json", str(out)]
        store(section, shown(command[:-2]), run_json(command, out))
    elif section == "env_steps":
        out = scratch / "env_steps.json"
        command = [PY, str(HERE / "env_steps.py"), "--repeats", "2", "--json", str(out)]
        store(section, shown(command[:-2]), run_json(command, out)["data"])
    elif section == "torch_envs":
        out = scratch / "torch_envs_cpu.json"
        command = [PY, str(HERE / "torch_envs.py"), "--num-envs", "1024,4096", "--iterations", "3", "--json", str(out)]
        store(section, shown(command[:-2]), {"CPU": run_json(command, out)})
    elif section == "time_to_target":
        out = scratch / "time_to_target.json"
        command = [PY, str(HERE / "sb3_time_to_target.py"), "--recipe", "ppo-cartpole,sac-pendulum", "--seeds", "42,0,1", "--json", str(out)]
        store(section, shown(command[:-2]), run_json(command, out))
    elif section == "eval_speed":
        runs = scratch / "eval-runs"
        run_dirs = [str(runs / f"ppo-cartpole-{backend}") for backend in ("skrl", "torchrl")]
        for backend, run_dir in zip(("skrl", "torchrl"), run_dirs):
            subprocess.run([PY, "-m", "rlplug.cli", "train", "ppo-cartpole", "--backend", backend, "--steps", "5000",
                            "--run-dir", run_dir, "--no-progress"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)  # fmt: skip
        out = scratch / "eval_speed.json"
        command = [PY, str(HERE / "eval_speed.py"), *run_dirs, "--episodes", "10", "--repeats", "5", "--json", str(out)]
        store(section, shown(command[:-2]).replace(str(runs), "SCRATCH"), run_json(command, out)["data"])
    elif section == "scaling":
        out = scratch / "scaling.json"
        command = [PY, str(HERE / "scaling.py"), "--nproc", "2", "--repeats", "2", "--json", str(out)]
        store(section, shown(command[:-2]), run_json(command, out))
    else:
        raise SystemExit(f"unknown section '{section}' (choose from {', '.join(STORED)})")


def import_bench(path: Path) -> None:
    """Adopt a table ``rlplug bench --report`` (or an earlier BENCHMARKS.json) wrote as the bench result."""
    bench = json.loads(path.read_text())
    from rlplug.util.commands import portable_text

    store("bench", portable_text(bench.get("command") or "rlplug bench --all"), {"machine": bench["machine"], "rows": bench["rows"]},
          bench["machine"]["date"])


def registry_references() -> dict[str, dict]:
    """The published reference each first-party recipe cites, by ``name@version``: the aggregate's 100 for bench
    rows stored before rows carried their recipe's reference."""
    from rlplug.recipes.book import RecipeBook
    from rlplug.recipes.files import first_party_registry

    book = RecipeBook()
    book.add_file(first_party_registry())
    recipes = (book.resolve(f"{name}@{version}") for name, version in book.refs())
    return {recipe.ref: recipe.reference for recipe in recipes if recipe.reference}


def registry_baselines() -> dict[str, str]:
    """Each first-party baseline recipe's ``baseline_of``, by name: rows stored before rows carried it are marked."""
    from rlplug.recipes.book import RecipeBook
    from rlplug.recipes.files import first_party_registry

    book = RecipeBook()
    book.add_file(first_party_registry())
    recipes = (book.resolve(name) for name in book.names())
    return {recipe.name: recipe.baseline_of for recipe in recipes if recipe.baseline_of}


def write_page(command: str, draw_curves: bool = False) -> None:
    from rlplug.results.report import COLUMNS, _row  # the bench table's cells, as `rlplug bench --report` renders them

    results = load_results(RESULTS)
    rows = results.get("bench", {}).get("data", {}).get("rows", [])
    if draw_curves:
        written = write_curves([{"rows": rows}], CURVES)
        print(f"drew {len(written)} curve(s) in {CURVES.relative_to(ROOT)}", file=sys.stderr)
    random_returns = json.loads(RANDOM_RETURNS.read_text()) if RANDOM_RETURNS.exists() else None
    if random_returns is not None and ZOO_RANDOM_RETURNS.exists():  # first-party measurements win where both have an env
        zoo = json.loads(ZOO_RANDOM_RETURNS.read_text())["data"]
        random_returns["data"] = {**zoo, **random_returns["data"]}
    references, baselines = registry_references(), registry_baselines()
    page = render(results, _row, COLUMNS, command, curves=existing_curves(rows), random_returns=random_returns, references=references,
                  baselines=baselines)  # fmt: skip
    (ROOT / "BENCHMARKS.md").write_text(page)
    (ROOT / "BENCHMARKS.json").write_text(json.dumps(combined_json(results, random_returns, references, baselines), indent=2) + "\n")
    print(f"wrote BENCHMARKS.md and BENCHMARKS.json from {', '.join(results) or 'nothing'}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help=f"comma-separated sections to rerun ({', '.join(STORED)}; 'none' "
                        "re-renders only); the others are rendered from their stored results")
    parser.add_argument("--import-bench", type=Path, default=None, help="store this bench JSON as the bench section first")
    parser.add_argument("--curves", action="store_true", help="draw docs/curves/<recipe>.png from the bench rows' run "
                        "directories (curves.py) before rendering")
    args = parser.parse_args()
    if args.import_bench is not None:
        import_bench(args.import_bench)
    if args.only is None:
        sections = list(STORED)
    else:
        sections = [s for s in args.only.split(",") if s and s != "none"]
        unknown = [s for s in sections if s not in STORED]
        if unknown:
            parser.error(f"unknown section(s) {', '.join(unknown)} (choose from {', '.join(STORED)})")
    with tempfile.TemporaryDirectory() as scratch:
        for section in sections:
            run_section(section, Path(scratch))
    write_page("python benchmarks/all.py", draw_curves=args.curves)


if __name__ == "__main__":
    main()
