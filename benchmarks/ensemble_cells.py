"""``batched_critics`` inside the cells (issue 48): gradient steps per CPU second of each cell with its critics called
one after another (the default) and as one batched ensemble (``batched_critics = true``), at N = 2, 5, 10 critics.

Each cell is built twice from its recipe (the same seed, ``hidden_sizes`` set, ``batched_critics`` false and true),
its replay filled with the random warm-up by its own trainer, then rounds of ``--updates`` of the cell's own gradient
step alternate between the two in one process (one torch thread), so machine load hits both alike. Reported: the
median updates per CPU second of each and their ratio. REDQ carries the N (its recipe's ``n_critics``, a subset of 2
in the target); SAC and TD3 have their twin critics. On TorchRL, REDQ's and TQC's own losses call their stacked
critics through ``vmap`` either way: their rows are not here.

    python benchmarks/ensemble_cells.py [--updates 100] [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

WARMUP = 512
# (recipe, backend, critics): critics = None keeps the cell's own pair
CELLS = [("redq-pendulum", "skrl", n) for n in (2, 5, 10)] + [
    ("sac-pendulum", "skrl", None), ("sac-pendulum", "torchrl", None), ("td3-pendulum", "skrl", None), ("td3-pendulum", "torchrl", None),
]  # fmt: skip
SIZES = {"64x64": "[64, 64]", "256x256": "[256, 256]"}


def gradient_step(recipe: str, backend: str, critics: int | None, hidden: str, batched: bool):
    import rlplug

    overrides = [f"hidden_sizes={hidden}", f"batched_critics={str(batched).lower()}", f"learning_starts={WARMUP}", f"log_every={WARMUP}"]
    if critics is not None:
        overrides += [f"n_critics={critics}", "critic_subset=2"]
    build = rlplug.build(recipe, backend=backend, overrides=overrides)
    trainer = build.trainer
    trainer.train(WARMUP)  # random actions only: fills the replay, takes no gradient step
    if backend == "skrl":
        agent = trainer.agent
        return lambda: agent.gradient_step(timestep=WARMUP, timesteps=build.recipe.steps)
    return trainer.gradient_step


def rate(step, updates: int) -> float:
    start = time.process_time()
    for _ in range(updates):
        step()
    return updates / max(time.process_time() - start, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")
    import torch

    torch.set_num_threads(1)
    rows = []
    for size, hidden in SIZES.items():
        for recipe, backend, critics in CELLS:
            steps = {batched: gradient_step(recipe, backend, critics, hidden, batched) for batched in (False, True)}
            for step in steps.values():
                rate(step, 5)  # Adam's state, first-call allocations
            rates: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.rounds):
                for batched, step in steps.items():
                    rates[batched].append(rate(step, args.updates))
            loop, batched = statistics.median(rates[False]), statistics.median(rates[True])
            row = {"cell": f"{recipe.split('-')[0]}/{backend}", "hidden": size, "critics": critics or 2,
                   "loop_per_cpu_s": round(loop, 1), "batched_per_cpu_s": round(batched, 1),
                   "batched_vs_loop": round(batched / loop, 2), "rounds": {"loop": rates[False], "batched": rates[True]}}  # fmt: skip
            rows.append(row)
            print(f"{row['cell']:>13} {size:>8} N={row['critics']:<3} loop {loop:7.1f}/s  batched {batched:7.1f}/s "
                  f"({row['batched_vs_loop']:.2f}x)", flush=True)
    result = {"command": f"python benchmarks/ensemble_cells.py --updates {args.updates} --rounds {args.rounds}",
              "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
                          "load_average": os.getloadavg()},
              "updates": args.updates, "rows": rows}  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
