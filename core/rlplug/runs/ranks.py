"""Distributed runs as the run layer sees them: which cells may train across processes, each rank's
seed, and what changes when a run resumes on another number of processes."""

from __future__ import annotations

from typing import Any

from ..pipeline.distributed import rank_seed, world
from ..errors import RlplugError
from ..contract.hookspecs import Build


def join_ranks(build: Build, session: Any) -> None:
    """In a distributed worker: refuse a cell that cannot train data-parallel, and give this rank its
    seed (rank ``r``'s environment ``i`` gets ``seed + r * num_envs + i``). Nothing in one process."""
    here = world()
    if not here.distributed:
        return
    check_distributed(build.algorithm, build.backend, session.host.algorithms.values())
    build.seed = rank_seed(build.recipe.seed, build.num_envs, here.rank)


def check_distributed(spec: Any, backend: str, installed: Any = ()) -> None:
    if spec.backends[backend].distributed:
        return
    able = sorted({s.name for s in installed if any(b.distributed for b in s.backends.values())})
    raise RlplugError(
        f"{spec.name} on {backend} does not train across processes (--nproc); "
        f"installed algorithms that do: {', '.join(able) or 'none'}"
    )


def resume_note(saved_world_size: int, world_size: int) -> str | None:
    """What changes when a run resumes on another number of processes (``None``: nothing)."""
    if saved_world_size == world_size:
        return None
    trained = f"run was trained on {saved_world_size} process{'es' if saved_world_size != 1 else ''}"
    if world_size < saved_world_size:
        lost = f"rank {world_size}" if saved_world_size - world_size == 1 else f"ranks {world_size}-{saved_world_size - 1}"
        return (f"{trained} and resumes on {world_size}: {lost}'s environments and replay memory are left behind; "
                f"the networks and optimisers carry on")
    new = f"rank {saved_world_size} starts" if world_size - saved_world_size == 1 else f"ranks {saved_world_size}-{world_size - 1} start"
    return f"{trained} and resumes on {world_size}: {new} from rank 0's environments and memory with their own random streams"
