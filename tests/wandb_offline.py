"""Reading back what W&B wrote offline: the ``run-ID.wandb`` files of its ``offline-run-*-ID`` folders.

wandb 0.31 has no Python reader of its own; the file is a LevelDB log (32 KiB blocks, each record a
7-byte header: CRC, length, type FULL/FIRST/MIDDLE/LAST) after a 7-byte ``:W&B`` header, and each record
is a ``wandb_internal_pb2.Record``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BLOCK = 32 * 1024
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def _chunks(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B run file"
    out, pending, offset = [], b"", 7
    while offset + 7 <= len(data):
        left_in_block = BLOCK - offset % BLOCK
        if left_in_block < 7:  # the block's tail is padding
            offset += left_in_block
            continue
        _, length, kind = struct.unpack("<IHB", data[offset:offset + 7])
        if kind == 0 and length == 0:
            break
        chunk = data[offset + 7:offset + 7 + length]
        offset += 7 + length
        if kind == FULL:
            out.append(chunk)
        elif kind == FIRST:
            pending = chunk
        elif kind == MIDDLE:
            pending += chunk
        elif kind == LAST:
            out.append(pending + chunk)
            pending = b""
    return out


def _records(wandb_dir: Path, run_id: str, kind: str) -> Iterator[Any]:
    """The records of one kind of run ``run_id``, over all its offline folders (a resumed run writes another)."""
    from wandb.proto import wandb_internal_pb2

    folders = sorted(wandb_dir.glob(f"offline-run-*-{run_id}"))
    assert folders, f"no offline run {run_id} under {wandb_dir}"
    for folder in folders:
        for raw in _chunks(folder / f"run-{run_id}.wandb"):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(raw)
            if record.WhichOneof("record_type") == kind:
                yield getattr(record, kind)


def history(wandb_dir: Path, run_id: str) -> list[tuple[int, dict[str, Any]]]:
    """Every history row, in order: (step, {key: value}) without W&B's own ``_`` keys."""
    rows = []
    for row in _records(wandb_dir, run_id, "history"):
        items = {"/".join(item.nested_key) or item.key: json.loads(item.value_json) for item in row.item}
        rows.append((row.step.num, {k: v for k, v in items.items() if not k.startswith("_")}))
    return rows


def config(wandb_dir: Path, run_id: str) -> dict[str, Any]:
    """The run's config as its first record gave it (later ``config`` records update it)."""
    items = [item for run in _records(wandb_dir, run_id, "run") for item in run.config.update]
    items += [item for update in _records(wandb_dir, run_id, "config") for item in update.update]
    return {item.key: json.loads(item.value_json) for item in items if not item.key.startswith("_")}


def artifact_files(wandb_dir: Path, run_id: str) -> list[str]:
    return [entry.path for artifact in _records(wandb_dir, run_id, "artifact") for entry in artifact.manifest.contents]
