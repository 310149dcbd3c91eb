"""Checkpoint I/O: atomic writes (temporary file, fsync, rename) and safe loads (``weights_only=True``)."""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from .errors import RunDirError

FORMAT = 1


def save_checkpoint(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` so that ``path`` is always either the old complete file or the new one."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            torch.save({"format": FORMAT, **payload}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Load with ``weights_only=True``: a checkpoint can hold tensors, numbers and strings, never code."""
    import torch

    if not path.is_file():
        raise RunDirError(f"no checkpoint at {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise RunDirError(f"refusing checkpoint {path}: it holds more than tensors, numbers and strings ({first})") from None
    except (RuntimeError, EOFError, OSError, ValueError) as err:
        raise RunDirError(f"checkpoint {path} is corrupt or truncated: {str(err).splitlines()[0] if str(err) else err!r}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise RunDirError(f"checkpoint {path} is not an rlplug checkpoint (format {FORMAT})")
    return payload
