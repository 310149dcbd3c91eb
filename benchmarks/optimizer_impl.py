"""Which Adam implementation pays on CPU: gradient updates/s of rlplug's off-policy and offline cells
with torch's three Adam code paths, interleaved in one process.

On a CPU torch's ``Adam()`` default is the per-parameter loop (``foreach`` kernels are enabled by
default only on accelerators); ``foreach=True`` batches the element-wise maths over all parameters,
``fused=True`` runs one fused kernel (CPU fused Adam exists since torch 2.4). Each cell is built
from its recipe, its replay or dataset ready, and each variant gets its own copies of the cell's
Adam optimisers (same parameter groups and learning rates) swapped in before its timed round;
rounds cycle loop, foreach, fused so machine load hits all alike. Reported per cell: updates/s per
variant (per second of process CPU time) and the ratio to the default loop, with its spread.

    RLPLUG_DATA_DIR=/work/data nice -n 5 python benchmarks/optimizer_impl.py --updates 200 --rounds 3
    ... --cells sac/skrl,sac/torchrl --compile   # also time torch.compile of TorchRL's SACLoss
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

import torch

os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")  # skrl's INFO lines

VARIANTS = {"loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
RECIPES = {"sac": "sac-pendulum@1",  # the measured (stored) sizes: 256x256
           "td3": "td3-pendulum", "iql": "iql-pendulum-medium", "cql": "cql-pendulum-medium"}
CELLS = [f"{alg}/{backend}" for alg in RECIPES for backend in ("skrl", "torchrl")]


def adam_holders(trainer) -> list[tuple[object, str, torch.optim.Adam]]:
    """Every (object, attribute, Adam) on the trainer or its skrl agent."""
    found = []
    for holder in (trainer, getattr(trainer, "agent", None)):
        if holder is None:
            continue
        for name, value in vars(holder).items():
            if isinstance(value, torch.optim.Adam):
                found.append((holder, name, value))
    return found


def clone_adam(optimizer: torch.optim.Adam, **flags) -> torch.optim.Adam:
    groups = [{k: v for k, v in group.items() if k not in ("foreach", "fused")} for group in optimizer.param_groups]
    return torch.optim.Adam(groups, **flags)


def cell_step(cell: str) -> tuple[Callable[[], object], object]:
    """A zero-argument gradient step of ``cell`` (``alg/backend``) built from its recipe, and its trainer."""
    import rlplug

    alg, backend = cell.split("/")
    if alg in ("iql", "cql"):
        build = rlplug.build(RECIPES[alg], backend=backend)
        return build.trainer.gradient_step, build.trainer
    warmup = 512
    build = rlplug.build(RECIPES[alg], backend=backend, overrides=[f"learning_starts={warmup}", f"log_every={warmup}"])
    trainer = build.trainer
    trainer.train(warmup)  # random actions only: fills the replay, takes no gradient step
    if backend == "skrl":
        agent = trainer.agent
        agent.enable_models_training_mode(True)
        return (lambda: agent.gradient_step(timestep=warmup, timesteps=build.recipe.steps)), trainer
    return trainer.gradient_step, trainer


def rate(step: Callable[[], object], updates: int) -> float:
    """Updates per second of process CPU time: one torch thread, so this is what the update costs,
    much less disturbed than the wall clock by other jobs on a shared machine."""
    for _ in range(5):
        step()
    started = time.process_time()
    for _ in range(updates):
        step()
    return updates / (time.process_time() - started)


def measure_cell(cell: str, updates: int, rounds: int) -> dict:
    step, trainer = cell_step(cell)
    holders = adam_holders(trainer)
    if not holders:
        raise SystemExit(f"{cell}: no Adam optimiser found on the trainer or its agent")
    per_variant = {name: [clone_adam(opt, **flags) for _, _, opt in holders] for name, flags in VARIANTS.items()}
    rates: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(rounds):
        for name, optimizers in per_variant.items():
            for (holder, attribute, _), optimizer in zip(holders, optimizers):
                setattr(holder, attribute, optimizer)
            rates[name].append(rate(step, updates))
    trainer.close()
    result = {"optimisers": [attribute for _, attribute, _ in holders], "updates_per_s": {k: [round(x, 1) for x in v] for k, v in rates.items()}}
    for name in ("foreach", "fused"):
        ratios = [a / b for a, b in zip(rates[name], rates["loop"])]
        result[f"{name}_vs_loop"] = {"mean": round(statistics.mean(ratios), 3), "min": round(min(ratios), 3), "max": round(max(ratios), 3)}
    print(f"{cell:12s} " + "  ".join(f"{k} {statistics.mean(v):6.1f}/s" for k, v in rates.items())
          + "  " + "  ".join(f"{n}/loop {result[f'{n}_vs_loop']['mean']:.3f}" for n in ("foreach", "fused")), file=sys.stderr, flush=True)
    return result


def measure_compile(updates: int, rounds: int) -> dict:
    """torch.compile of TorchRL's SACLoss forward in the sac/torchrl cell: compile time and updates/s."""
    step, trainer = cell_step("sac/torchrl")
    eager = rate(step, updates)
    started = time.perf_counter()
    trainer.loss = torch.compile(trainer.loss)
    try:
        step()
        compile_s = time.perf_counter() - started
    except Exception as err:  # noqa: BLE001 - a failed compile is a result
        trainer.close()
        return {"error": f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"}
    compiled_rates, eager_rates = [], [eager]
    compiled_loss = trainer.loss
    for _ in range(rounds):
        compiled_rates.append(rate(step, updates))
        trainer.loss = compiled_loss._orig_mod
        eager_rates.append(rate(step, updates))
        trainer.loss = compiled_loss
    trainer.close()
    gain = statistics.mean(compiled_rates) / statistics.mean(eager_rates)
    per_update_saving = 1 / statistics.mean(eager_rates) - 1 / statistics.mean(compiled_rates)
    result = {
        "compile_s": round(compile_s, 1),
        "eager_updates_per_s": [round(x, 1) for x in eager_rates],
        "compiled_updates_per_s": [round(x, 1) for x in compiled_rates],
        "compiled_vs_eager": round(gain, 3),
        "break_even_updates": round(compile_s / per_update_saving) if per_update_saving > 0 else None,
    }
    print(f"compile sac/torchrl: {result}", file=sys.stderr, flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default=",".join(CELLS))
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compile", action="store_true", help="also time torch.compile of the sac/torchrl loss")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    results = {"cells": {cell: measure_cell(cell, args.updates, args.rounds) for cell in args.cells.split(",") if cell}}
    if args.compile:
        results["compile"] = measure_compile(args.updates, args.rounds)
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
