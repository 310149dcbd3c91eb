"""Where a TorchRL cell's gradient step goes: cProfile of N updates, grouped into cost centres.

Each cell is built from its recipe with the loss named by ``--losses`` (upstream's class and the lean one
by default), its off-policy replay filled by the random warm-up, then ``N`` gradient steps (sample,
loss, backward, optimiser, target update) run under cProfile. Self time is grouped by where it is spent:
autograd's backward, the forward kernels (linear and the other aten ops called from Python), tensordict,
TorchRL's Python (losses, distributions, target updaters), the replay buffer's sampling, the optimiser,
``functional_call`` / ``nn.Module`` dispatch, and the rest; reported as shares of the profiled step.
cProfile inflates Python-heavy code, so read the shares as where the time goes, and the interleaved
``*_updates.py`` ratios as how fast it is.

    RLPLUG_DATA_DIR=... python benchmarks/profile_updates.py [--recipes sac-pendulum,td3-pendulum,...] [--updates 150]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time
from collections.abc import Callable

ALGOS = {"sac-pendulum@1": "sac", "sac-pendulum": "sac", "td3-pendulum": "td3", "dqn-cartpole": "dqn", "iql-pendulum-medium": "iql",
         "cql-pendulum-medium": "cql"}  # fmt: skip
WARMUP = 512


def category(filename: str, name: str) -> str:
    if "run_backward" in name:
        return "backward (autograd engine)"
    if "optim" in filename or "fused_adam" in name or "_foreach_" in name and "lerp" not in name:
        return "optimiser"
    if "replay_buffers" in filename or "storages" in filename or "samplers" in filename:
        return "replay sampling"
    if "lerp" in name or ("objectives/utils.py" in filename):
        return "target update"
    if "tensordict" in filename:
        return "tensordict"
    if "torchrl" in filename:
        return "torchrl python (loss, distributions)"
    if "functional_call" in filename or "stateless" in filename or "_named_member_accessor" in filename or "nn/modules/module.py" in filename:
        return "module dispatch / functional_call"
    if filename == "~" and ("built-in method torch" in name or "method '" in name and "Tensor" in name or "torch._C" in name):
        return "forward kernels (aten)"
    if "torch/distributions" in filename:
        return "torch.distributions"
    return "other python"


def grouped_self_time(stats: dict, group: Callable[[str, str], str], digits: int) -> tuple[float, dict[str, float]]:
    """A cProfile's self time (``pstats.Stats(...).stats``) summed by ``group(filename, function name)``: the
    whole in seconds, and each group's share of it, largest first (backend_ratio.py groups by library)."""
    totals: dict[str, float] = {}
    for (filename, _, name), (_, _, tottime, _, _) in stats.items():
        key = group(filename, name)
        totals[key] = totals.get(key, 0.0) + tottime
    whole = sum(totals.values()) or 1.0
    return whole, {k: round(v / whole, digits) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}


def step_of(recipe: str, loss: str):
    import rlplug
    from rlplug.pipeline.session import Session

    if recipe.endswith("-medium"):
        build = Session().build(recipe, backend="torchrl", overrides=[f"loss={loss}"])
        return build.trainer.gradient_step
    build = rlplug.build(recipe, backend="torchrl", overrides=[f"loss={loss}", f"learning_starts={WARMUP}", f"log_every={WARMUP}"])
    trainer = build.trainer
    trainer.train(WARMUP)
    return trainer.gradient_step


def profile(recipe: str, loss: str, updates: int) -> dict:
    step = step_of(recipe, loss)
    for _ in range(20):
        step()
    profiler = cProfile.Profile(time.process_time)  # CPU time: a busy machine's other jobs stay out
    profiler.enable()
    for _ in range(updates):
        step()
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    whole, shares = grouped_self_time(stats, category, digits=3)
    calls = sum(v[1] for v in stats.values())
    return {"cpu_ms_per_update_profiled": round(1000 * whole / updates, 2), "python_calls_per_update": round(calls / updates),
            "shares": shares}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", default="sac-pendulum@1,td3-pendulum,dqn-cartpole,iql-pendulum-medium,cql-pendulum-medium",
                        help="sac-pendulum@1: the update floor's 256x256 sizes (version 2 trains 64x64)")
    parser.add_argument("--losses", default="upstream,lean", help="upstream (sac, td3, ...), lean (sac-lean, ...)")
    parser.add_argument("--updates", type=int, default=150)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")
    out = {}
    for recipe in args.recipes.split(","):
        algo = ALGOS[recipe]
        for kind in args.losses.split(","):
            loss = algo if kind == "upstream" else f"{algo}-lean"
            out[f"{recipe} {loss}"] = r = profile(recipe, loss, args.updates)
            top = ", ".join(f"{k} {100 * v:.0f} %" for k, v in list(r["shares"].items())[:6])
            print(f"{recipe} [{loss}]: {r['cpu_ms_per_update_profiled']} CPU ms/update profiled, {r['python_calls_per_update']} "
                  f"Python calls/update; {top}", file=sys.stderr, flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
