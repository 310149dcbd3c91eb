"""Multi-process training: ``rlplug train NAME --nproc N`` relaunches itself through torchrun.

The launcher (the process the user started) checks the recipe, picks the run directory and hands
the same command, minus the launch options, to ``torch.distributed.run``: one worker process per
rank, each with ``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE`` in its environment. A worker joins the
process group (gloo on CPU, NCCL on GPUs) before any backend library is imported, so skrl finds a
group already there instead of initialising NCCL itself. Rank 0 alone writes the run directory.

Semantics: every rank runs the recipe as written on its own environments (rank ``r``'s environment
``i`` is seeded ``seed + r * num_envs + i``, as if one vector env held all ranks' envs) and gradients
are averaged over ranks before each optimiser step. So the step budget, ``rollout_steps``,
``batch_size`` and the number of updates are per rank, and the global batch is the per-rank batch
times the world size. This module imports no torch at the top: the CLI imports it for every command.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..errors import RlplugError

# the launch options: the launcher consumes them, workers never see them
LAUNCH_OPTIONS = ("--nproc", "--nnodes", "--rdzv-endpoint")
COMMAND_VARIABLE = "RLPLUG_LAUNCH_COMMAND"


@dataclass(frozen=True)
class World:
    rank: int = 0
    local_rank: int = 0
    size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1


def world() -> World:
    """This process's place, from the variables torchrun sets (one process: rank 0 of 1)."""
    return World(int(os.environ.get("RANK", 0)), int(os.environ.get("LOCAL_RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))


def rank_seed(seed: int, num_envs: int, rank: int) -> int:
    """The seed of rank ``rank``: its environments continue the numbering of the ranks before it."""
    return seed + rank * num_envs


def rank_device(device: str, local_rank: int) -> str:
    """``cuda`` means this rank's GPU (``cuda:LOCAL_RANK``, wrapped over the GPUs there are)."""
    if device != "cuda":
        return device
    import torch

    count = torch.cuda.device_count()
    if count == 0:
        raise RlplugError("--device cuda: this machine has no CUDA device")
    return f"cuda:{local_rank % count}"


def process_group_backend(device: str) -> str:
    """NCCL when every local rank has a GPU of its own, gloo otherwise (CPU, or ranks sharing a GPU)."""
    import torch

    local_size = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    if device.startswith("cuda") and torch.distributed.is_nccl_available() and torch.cuda.device_count() >= local_size:
        return "nccl"
    return "gloo"


def init_worker(device: str) -> str:
    """Join the process group torchrun set up and return this rank's device.

    Called first thing in a worker, before any backend import. skrl 2.1.1 reads ``WORLD_SIZE`` when it
    is imported and then calls ``init_process_group("nccl")`` and ``torch.cuda.set_device``, which fail
    on CPU (reference §10). The group rlplug made is already there, so while skrl is imported those two
    calls are answered by it: skrl keeps its distributed mode (parameter broadcast, gradient reduction,
    rank-0-only writes) over gloo, and no skrl file is touched.
    """
    import torch
    import torch.distributed as dist

    here = world()
    device = rank_device(device, here.local_rank)
    if not dist.is_initialized():
        backend = process_group_backend(device)
        if backend == "nccl":
            torch.cuda.set_device(torch.device(device))
        dist.init_process_group(backend, rank=here.rank, world_size=here.size)
    if "skrl" not in sys.modules and _installed("skrl"):
        import logging

        # skrl logs its distributed set-up and each parameter broadcast at INFO, once per rank
        logging.getLogger("skrl").addFilter(lambda record: record.levelno >= logging.WARNING)
        with _group_already_made():
            import skrl  # noqa: F401 - its config now reports this distributed run
    return device


def _installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


@contextlib.contextmanager
def _group_already_made() -> Iterator[None]:
    """While skrl is imported: its ``init_process_group`` and ``cuda.set_device`` calls are no-ops."""
    import torch
    import torch.distributed as dist

    init, set_device = dist.init_process_group, torch.cuda.set_device
    dist.init_process_group = lambda *args, **kwargs: None
    torch.cuda.set_device = lambda *args, **kwargs: None
    try:
        yield
    finally:
        dist.init_process_group, torch.cuda.set_device = init, set_device


def worker_argv(argv: Sequence[str], run_dir: str | None) -> list[str]:
    """The user's command without the launch options, with the run directory the launcher chose."""
    out: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        name = token.split("=", 1)[0]
        if name in LAUNCH_OPTIONS or name == "--run-dir":
            skip = "=" not in token
            continue
        out.append(token)
    if run_dir is not None:
        out += ["--run-dir", run_dir]
    return out


def launch(argv: Sequence[str], nproc: int, nnodes: int = 1, rdzv_endpoint: str | None = None) -> int:
    """Run ``python -m rlplug.cli ARGV`` on ``nproc`` processes per node through torchrun.

    One node: torchrun's ``--standalone`` (a local rendezvous on a free port). Several nodes: the
    same command on each, meeting at ``rdzv_endpoint`` (c10d rendezvous). Returns the exit code of
    the first rank that failed (its own one-line error is already on stderr), else 0.
    """
    if nproc < 1 or nnodes < 1:
        raise RlplugError(f"--nproc and --nnodes must be at least 1 (got {nproc} and {nnodes})")
    if nnodes > 1 and not rdzv_endpoint:
        raise RlplugError("--nnodes above 1 needs --rdzv-endpoint HOST:PORT, the address every node meets at")
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # else torchrun sets it and warns about it
    # what rank 0 records in the run's command.txt: the user's command, not the worker's
    os.environ.setdefault(COMMAND_VARIABLE, shlex.join(["rlplug", *sys.argv[1:]]))
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser, run

    launch_args = ["--nproc-per-node", str(nproc), "--max-restarts", "0"]
    if rdzv_endpoint:
        launch_args += ["--nnodes", str(nnodes), "--rdzv-backend", "c10d", "--rdzv-endpoint", rdzv_endpoint]
    else:
        launch_args.append("--standalone")
    options = get_args_parser().parse_args([*launch_args, "--module", "rlplug.cli", *argv])
    try:
        with _quiet_torchrun():
            run(options)
    except ChildFailedError as failed:
        failures = sorted(failed.failures.items())
        code = next((f.exitcode for _, f in failures if f.exitcode > 0), None)
        if code is not None:
            return code  # the rank's own one-line error is already on stderr
        rank, failure = failed.get_first_failure()  # the others were stopped because it failed
        print(f"rlplug: error: rank {rank} was killed by {failure.signal_name()}", file=sys.stderr)
        return 1
    return 0


def finish_worker(code: int) -> None:
    """End a worker that succeeded: leave the process group once every rank is done, then exit
    without the interpreter's teardown, during which gloo's worker threads can still abort the
    process ("terminate called without an active exception", seen here after long runs even with
    the group destroyed; pytorch/pytorch#190489). Everything rlplug writes is closed by then."""
    import torch.distributed as dist

    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@contextlib.contextmanager
def _quiet_torchrun() -> Iterator[None]:
    """torchrun logs its configuration and each failure's traceback at INFO/ERROR; the workers print
    their own one-line errors, so only its warnings stay."""
    import logging

    loggers = [logging.getLogger(n) for n in ("torch.distributed.elastic", "torch.distributed.run")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)

