"""Checkpoint I/O: atomic writes that keep the previous checkpoint, and safe loads (``weights_only=True``).

``save_checkpoint(path)`` writes a temporary file, fsyncs it, hard-links the current ``path`` to
``previous.pt`` (so the last complete checkpoint survives whatever happens next) and renames the
temporary file over ``path``. At every instant ``path`` is a complete checkpoint, old or new; a write
that fails (disk full, killed) leaves it untouched.
"""

from __future__ import annotations

import errno
import os
import pickle
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import CheckpointVersionError, CorruptCheckpointError, RunDirError
from ..util.formats import other_format, rlplug_version
from ..util.outputs import temporary_sibling

FORMAT = 1
PREVIOUS = "previous.pt"


def save_checkpoint(path: Path, payload: dict[str, Any], keep_previous: bool = True) -> None:
    """Write ``payload`` so that ``path`` is always either the old complete file or the new one.

    ``keep_previous=False``: the file replaced is not kept as ``previous.pt`` (``best.pt``, whose neighbour
    ``previous.pt`` belongs to ``latest.pt``)."""
    import torch

    existed = path.exists()
    try:
        tmp = temporary_sibling(path, ".tmp", prefix=f".{path.name}.")  # .latest.pt.XXXX.tmp: what a resume clears
    except OSError as err:
        raise RunDirError(_failed(path, err, existed)) from None
    try:
        with open(tmp, "wb") as handle:
            torch.save({"format": FORMAT, "written_by": rlplug_version(), **payload}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        if keep_previous and path.exists():
            keep = path.with_name(f".{PREVIOUS}.tmp")
            keep.unlink(missing_ok=True)
            os.link(path, keep)  # a second name for the current checkpoint, then moved into place
            os.replace(keep, path.with_name(PREVIOUS))
        os.replace(tmp, path)
        _fsync_directory(path.parent)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise RunDirError(_failed(path, err, existed)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _failed(path: Path, err: OSError, existed: bool) -> str:
    """One line: the checkpoint, the cause, and what the run keeps (the last complete checkpoint, untouched)."""
    reason = "disk full (no space left on device)" if err.errno == errno.ENOSPC else (err.strerror or type(err).__name__)
    kept = "the previous checkpoint there is intact" if existed else "no checkpoint was written"
    return f"cannot write checkpoint {path}: {reason}; {kept}"


def _fsync_directory(directory: Path) -> None:
    """Make the renames durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load_checkpoint(path: Path, mmap: bool = False) -> dict[str, Any]:
    """Load with ``weights_only=True``: a checkpoint can hold tensors, numbers and strings, never code.

    ``mmap``: tensors are mapped, not read, so reading a large checkpoint's header costs little."""
    import torch

    if not path.is_file():
        raise RunDirError(f"no checkpoint at {path}")
    try:
        if not zipfile.is_zipfile(path):  # what torch.save writes; a cut or overwritten file is not one
            size = path.stat().st_size
            raise CorruptCheckpointError(
                f"checkpoint {path} is corrupt or truncated: " + ("it is empty" if size == 0 else f"{size} bytes that are not a torch archive")
            )
        payload = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise RunDirError(f"refusing checkpoint {path}: it holds more than tensors, numbers and strings ({first})") from None
    except PermissionError as err:
        raise RunDirError(f"cannot read checkpoint {path}: {err.strerror}") from None
    except (RuntimeError, EOFError, OSError, ValueError) as err:
        raise CorruptCheckpointError(f"checkpoint {path} is corrupt or truncated: {str(err).splitlines()[0] if str(err) else err!r}") from None
    if not isinstance(payload, dict) or "format" not in payload:
        raise CorruptCheckpointError(f"checkpoint {path} is not an rlplug checkpoint (format {FORMAT})")
    if payload["format"] != FORMAT:
        raise CheckpointVersionError(other_format(f"checkpoint {path}", payload["format"], written_by(payload), FORMAT,
                                                  "checkpoint format", "continue or evaluate it with that rlplug"))
    return payload


def written_by(payload: dict[str, Any]) -> str | None:
    """The rlplug version that wrote a checkpoint: its top-level ``written_by``, or (format 1 before it had
    one) the header's ``rlplug``."""
    version = payload.get("written_by")
    if version is None and isinstance(payload.get("rlplug"), dict):
        version = payload["rlplug"].get("rlplug")
    return str(version) if version is not None else None


def non_finite_tensors(state: Any, prefix: str = "") -> Iterator[str]:
    """Dotted names of floating-point tensors in ``state`` holding a NaN or an infinity.

    Replay memories are skipped: skrl fills unused rows with NaN on purpose. So are environment
    snapshots (``rlplug.envs.state``'s ``__object__`` encoding): a space's bounds may be infinite.
    """
    import torch

    if isinstance(state, torch.Tensor):
        if state.is_floating_point() and state.numel() and not bool(torch.isfinite(state).all()):
            yield prefix or "tensor"
    elif isinstance(state, dict):
        for key, value in state.items():
            if key == "memory" or key == "__object__":
                continue
            yield from non_finite_tensors(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(state, (list, tuple)):
        for index, value in enumerate(state):
            yield from non_finite_tensors(value, f"{prefix}[{index}]")
