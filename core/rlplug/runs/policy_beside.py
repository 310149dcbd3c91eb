"""``checkpoints/latest.policy.pt``: the final checkpoint's deterministic policy as TorchScript, written beside it
when training ends, so that ``rlplug eval RUN_DIR`` evaluates it with torch alone: no skrl or TorchRL import, no
trainer built, no checkpoint read (issue 53: those were most of the command's seconds).

The file stands for the checkpoint only while ``latest.pt`` is the file it was exported from: the export's metadata
carries that file's size and modification time, and ``eval`` opens the checkpoint as before when they differ (a
resume that stopped before its end, a hand-copied checkpoint) and when there is no file (offline and multi-agent
runs, a cell that cannot export its policy). Its actions were checked equal to the trainer's ``act_deterministic``
when it was written, and ``eval`` plays it on the episodes and seeds ``Trainer.evaluate`` uses.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..errors import RlplugError
from .rundir import CHECKPOINT

LATEST_POLICY = CHECKPOINT.with_name("latest.policy.pt")
STAMP_KEY = "checkpoint_stamp"


def checkpoint_stamp(path: Path) -> list[int] | None:
    """``[size, modification time in ns]`` of a checkpoint file (kept by ``cp -p`` and ``rsync -a``), or ``None``."""
    try:
        info = path.stat()
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]


def export_beside_checkpoint(build: Any, run_dir: Path) -> None:
    """Write ``LATEST_POLICY`` for ``run_dir``'s ``latest.pt`` (the trainer's state now). Offline runs (scored against
    their dataset) and multi-agent ones are evaluated from the checkpoint, so get none; nor does a cell that cannot
    export; any other failure is one note on stderr: the run is complete either way, ``eval`` reads the checkpoint."""
    stamp = checkpoint_stamp(run_dir / CHECKPOINT)
    if stamp is None or build.recipe.dataset or build.extras.get("multiagent") is not None:
        (run_dir / LATEST_POLICY).unlink(missing_ok=True)
        return
    from ..results.export import export_policy

    path = run_dir / LATEST_POLICY
    try:
        export_policy(build, path, "torchscript", check=True, metadata={STAMP_KEY: stamp}, record_check=True)
    except RlplugError:
        path.unlink(missing_ok=True)  # (not exportable) no file is better than a stale one
    except Exception as err:  # noqa: BLE001 -- an optional file: training has finished and its checkpoint is written
        path.unlink(missing_ok=True)
        print(f"rlplug: note: the policy was not exported beside the checkpoint ({type(err).__name__}: {err}); "
              f"`rlplug eval {run_dir}` reads the checkpoint instead", file=sys.stderr)  # fmt: skip


def policy_beside_checkpoint(run_dir: Path) -> Any | None:
    """The ``ExportedFile`` standing for ``run_dir``'s ``latest.pt``, or ``None`` (missing, unreadable or stale)."""
    path = run_dir / LATEST_POLICY
    stamp = checkpoint_stamp(run_dir / CHECKPOINT)
    if stamp is None or not path.is_file():
        return None
    from ..results.export import load_exported

    try:
        exported = load_exported(path)
    except RlplugError:
        return None
    return exported if exported.metadata.get(STAMP_KEY) == stamp else None


def copy_beside_checkpoint(run_dir: Path, out: Path) -> dict[str, Any] | None:
    """``rlplug export RUN_DIR`` (TorchScript) without opening the checkpoint: ``LATEST_POLICY`` copied to ``out`` (as
    an export is written: atomically, only over nothing or an earlier export) while it stands for ``latest.pt``, with
    what ``export_policy`` returns; ``None`` when there is no such file (the caller exports from the checkpoint)."""
    from ..results.export import CHECKED_KEY
    from ..util.outputs import EXPORTED_POLICY, write_file

    exported = policy_beside_checkpoint(run_dir)
    if exported is None or CHECKED_KEY not in exported.metadata:
        return None
    data = (run_dir / LATEST_POLICY).read_bytes()
    write_file(out, EXPORTED_POLICY, "export --out", lambda partial: partial.write_bytes(data))
    metadata = {key: value for key, value in exported.metadata.items() if key not in (STAMP_KEY, CHECKED_KEY)}
    return {"path": str(out), "format": "torchscript", "metadata": metadata,
            "max_abs_difference": exported.metadata[CHECKED_KEY]}  # fmt: skip
