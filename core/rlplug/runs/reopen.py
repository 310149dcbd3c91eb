"""Opening a run directory again (``eval``, ``resume``, dataset collection): rebuild its recipe on its
backend, with its plugin modules, and load its checkpoint into the trainer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..pipeline.distributed import world
from ..errors import RunDirError
from ..contract.hookspecs import Build
from .checkpoints import check_header, load_trainer_state
from .plugins import session_for_run
from .ranks import join_ranks
from .saved import saved_run


def open_run(session: Any, run_dir: Path, device: str = "cpu", need_checkpoint: bool = True, checkpoint: str = "latest") -> Build:
    """The run's ``Build`` with its checkpoint loaded.

    ``build.extras["saved_run"]`` says what was read (``note``: ``previous.pt`` stood in for ``latest.pt``).
    Without ``need_checkpoint`` a run stopped before its first checkpoint opens as built from its recorded
    recipe, at step 0 (``resume``). A distributed worker loads its own rank's state; a rank the run did not
    have (resuming on more processes than it was trained on) starts from rank 0's state with its own
    random streams. ``checkpoint="best"`` loads ``best.pt`` (``eval --checkpoint best``).
    """
    saved = saved_run(run_dir, need_checkpoint, checkpoint)
    recipe, backend, payload = saved.recipe, saved.backend, saved.payload
    if backend == "torchrl" and device != "cpu":
        # seen on an H200: the restored collector mixes CPU and GPU tensors in its first batch
        raise RunDirError(f"resuming a TorchRL run on {device} is not supported yet; resume {run_dir} with --device cpu")
    session = session_for_run(session, run_dir)
    build = session.prepare(recipe, backend, device=device)
    join_ranks(build, session)
    session.construct(build)
    build.extras["saved_run"] = saved
    if payload is None:
        build.extras["saved_world_size"] = world().size
        return build
    try:
        header = payload.get("rlplug", {})
        check_header(header, build, saved.checkpoint)
        build.extras["saved_world_size"] = int(header.get("world_size", 1))
        rank = world().rank
        saved_ranks = payload.get("ranks") or []
        state = saved_ranks[rank - 1] if 0 < rank <= len(saved_ranks) else payload["trainer"]
        load_trainer_state(build, state, saved.checkpoint)
        if rank > len(saved_ranks):
            from ..util.rng import seed_all

            seed_all(build.seed)  # else this rank would replay rank 0's actions step for step
    except BaseException:
        build.trainer.close()
        raise
    return build
