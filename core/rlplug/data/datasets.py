"""Offline datasets: directories of transitions that rlplug collects itself, and how they are read back.

A dataset is a directory::

    NAME/
      metadata.json   env id, spaces, how it was made, episode count, return statistics, reference
                      returns (random and expert policy) and a sha256 per data file
      data/           a TensorDict memmap: observation, action, reward, next_observation,
                      terminated, truncated (one row per transition, episodes contiguous)

Datasets live under ``$RLPLUG_DATA_DIR`` (default ``$XDG_DATA_HOME/rlplug/datasets``, i.e.
``~/.local/share/rlplug/datasets``); a name with a path separator is a directory anywhere. Both
backends read the same directory. Writing goes to a temporary sibling that is renamed into place, so
a dataset is either complete or absent. Reading checks the metadata, every file's shape and checksum,
that every value is finite (and every Discrete action in range), and the spaces against the env the
recipe evaluates on; each failure is one ``DatasetError`` line.

This module imports numpy only; tensordict and torch are imported by the functions that read or write
data, so ``rlplug dataset list`` and recipe validation stay cheap.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FormatVersionError, RlplugError
from ..util.formats import other_format
from ..util.jsonfiles import read_json_object
from ..util.outputs import DATASET, check_output, swap_in_dir, temporary_sibling, writing

FORMAT = 1
KEYS = ("observation", "action", "reward", "next_observation", "terminated", "truncated")
METADATA = "metadata.json"
DATA = "data"


class DatasetError(RlplugError):
    """A dataset is missing, truncated, corrupt, or does not fit the environment it is used with."""


class DatasetVersionError(DatasetError, FormatVersionError):
    """A dataset whose ``metadata.json`` is of another dataset format version."""


# ---- where datasets live ------------------------------------------------------------------------


def data_root() -> Path:
    """``$RLPLUG_DATA_DIR``, else ``$XDG_DATA_HOME/rlplug/datasets``, else ``~/.local/share/rlplug/datasets``."""
    explicit = os.environ.get("RLPLUG_DATA_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "rlplug" / "datasets"


def dataset_path(name: str) -> Path:
    """A bare name is a directory under ``data_root()``; anything with a path separator is a path."""
    if os.sep in name or (os.altsep and os.altsep in name) or name.startswith("."):
        return Path(name).expanduser()
    return data_root() / name


# ---- spaces as plain data -----------------------------------------------------------------------


def describe_space(space: Any) -> dict[str, Any]:
    """A gymnasium Box or Discrete space as JSON-able data (what the metadata stores and compares)."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n)}
    if isinstance(space, gym.spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": str(space.dtype),
            "low": np.asarray(space.low, dtype=np.float64).reshape(-1).tolist(),
            "high": np.asarray(space.high, dtype=np.float64).reshape(-1).tolist(),
        }
    raise DatasetError(f"space {space} cannot be stored in a dataset (Box or Discrete only)")


def same_space(stored: dict[str, Any], space: Any) -> bool:
    current = describe_space(space)
    if stored.get("type") != current["type"]:
        return False
    if current["type"] == "Discrete":
        return stored.get("n") == current["n"]
    return stored.get("shape") == current["shape"] and np.allclose(stored.get("low", []), current["low"]) and np.allclose(
        stored.get("high", []), current["high"]
    )


def space_text(stored: dict[str, Any]) -> str:
    if stored.get("type") == "Discrete":
        return f"Discrete({stored.get('n')})"
    return f"Box(shape={tuple(stored.get('shape', ()))})"


# ---- reading ------------------------------------------------------------------------------------


@dataclass
class DatasetInfo:
    """A dataset's directory and parsed metadata (its data is read by ``load_data``)."""

    name: str
    path: Path
    metadata: dict[str, Any]

    @property
    def env(self) -> str:
        return self.metadata["env"]

    @property
    def transitions(self) -> int:
        return int(self.metadata["transitions"])

    @property
    def reference(self) -> dict[str, Any]:
        return self.metadata.get("reference", {})

    def normalised_score(self, episode_return: float) -> float | None:
        """100 * (R - R_random) / (R_expert - R_random), D4RL's normalisation; ``None`` without references."""
        random_return = self.reference.get("random_return")
        expert_return = self.reference.get("expert_return")
        if random_return is None or expert_return is None or expert_return == random_return:
            return None
        return 100.0 * (episode_return - random_return) / (expert_return - random_return)

    def d4rl_score(self, episode_return: float) -> float | None:
        """The normalised score against D4RL's reference returns, where the dataset carries them (a Minari
        dataset's ``ref_min_score`` / ``ref_max_score``); ``None`` for rlplug's own references."""
        return self.normalised_score(episode_return) if self.metadata.get("d4rl_reference") else None

    def check_env(self, env_id: str, observation_space: Any, action_space: Any, where: str) -> None:
        """Refuse a dataset recorded on another env or with other spaces than ``env_id`` has now."""
        meta = self.metadata
        if meta["env"] != env_id:
            raise DatasetError(f"{where}: dataset '{self.name}' was recorded on {meta['env']}, not {env_id}")
        for label, stored, space in (
            ("observation", meta["observation_space"], observation_space),
            ("action", meta["action_space"], action_space),
        ):
            if not same_space(stored, space):
                raise DatasetError(
                    f"{where}: dataset '{self.name}' has {label} space {space_text(stored)}, "
                    f"but {env_id} has {space}; recollect it for this environment"
                )


def read_info(name: str) -> DatasetInfo:
    """Parse ``metadata.json`` (no data is read); every way it can be wrong is one ``DatasetError``.
    ``minari:ID`` names a Minari dataset in the local Minari root (``rlplug.data.minari``)."""
    if name.startswith("minari:"):
        from .minari import read_minari_info

        return read_minari_info(name)
    path = dataset_path(name)
    if not path.is_dir():
        raise DatasetError(f"dataset '{name}' not found ({path} does not exist); see `rlplug dataset list`")
    meta_file = path / METADATA
    if not meta_file.is_file():
        raise DatasetError(f"{path} is not an rlplug dataset (no {METADATA})")
    try:
        metadata = read_json_object(meta_file, DatasetError)
    except DatasetError as err:
        raise DatasetError(f"dataset '{name}': {err}") from None
    if "format" in metadata and metadata["format"] != FORMAT:  # before the fields: another format may name them otherwise
        writer = metadata.get("rlplug")
        raise DatasetVersionError(other_format(f"dataset '{name}' ({meta_file})", metadata["format"],
                                               str(writer) if writer is not None else None, FORMAT, "dataset format",
                                               "read it with that rlplug, or collect it again with this one"))
    required = ("format", "env", "observation_space", "action_space", "transitions", "files")
    missing = [k for k in required if k not in metadata]
    if missing:
        raise DatasetError(f"dataset '{name}': {meta_file} lacks {', '.join(missing)}")
    problem = _metadata_problem(metadata)
    if problem:
        raise DatasetError(f"dataset '{name}': {meta_file} is unreadable: {problem}")
    problem = _arrays_problem(metadata)
    if problem:
        raise DatasetError(f"dataset '{name}' cannot be trained on: {problem}")
    return DatasetInfo(name=name, path=path, metadata=metadata)


def _flat_size(space: dict[str, Any]) -> int:
    return int(np.prod(space["shape"])) if space["type"] == "Box" else 1


def _arrays_problem(meta: dict[str, Any]) -> str | None:
    """What training would trip over in the arrays the metadata records (names, lengths, per-row sizes),
    or ``None``: every key of ``KEYS``, each with one row per transition, observations and actions of the
    spaces' sizes, one reward and flag per row. ``load_data`` then checks the files hold these shapes."""
    files, count = meta["files"], meta["transitions"]
    missing = [key for key in KEYS if key not in files]
    if missing:
        return f"it has no {', '.join(missing)} array (a dataset holds {', '.join(KEYS)})"
    sizes = {"observation": _flat_size(meta["observation_space"]), "next_observation": _flat_size(meta["observation_space"]),
             "action": _flat_size(meta["action_space"]), "reward": 1, "terminated": 1, "truncated": 1}  # fmt: skip
    for key in KEYS:
        shape = files[key]["shape"]
        if not shape or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            return f"{key} has shape {shape!r}, not a list of sizes"
        if shape[0] != count:
            lengths = ", ".join(f"{k} {files[k]['shape'][0] if files[k]['shape'] else '?'}" for k in KEYS)
            return f"its arrays have unequal lengths ({lengths}; transitions {count})"
        if int(np.prod(shape[1:])) != sizes[key]:
            return f"{key} has {int(np.prod(shape[1:]))} values per row ({shape}), its space {sizes[key]}"
    return None


def _metadata_problem(meta: dict[str, Any]) -> str | None:
    """What is wrong with the shape of a parsed ``metadata.json`` (every value rlplug reads later), or ``None``."""

    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    if not isinstance(meta["env"], str):
        return f"'env' is {meta['env']!r}, not an environment id"
    if not count(meta["transitions"]):
        return f"'transitions' is {meta['transitions']!r}, not a whole number"
    if "episodes" in meta and meta["episodes"] is not None and not count(meta["episodes"]):
        return f"'episodes' is {meta['episodes']!r}, not a whole number"
    for key in ("observation_space", "action_space"):
        space = meta[key]
        if not isinstance(space, dict) or space.get("type") not in ("Box", "Discrete"):
            return f"'{key}' is {space!r}, not a Box or Discrete space"
        if space["type"] == "Discrete" and not count(space.get("n")):
            return f"'{key}' is a Discrete space without a whole-number 'n'"
        if space["type"] == "Box" and not (isinstance(space.get("shape"), list) and all(count(d) for d in space["shape"])):
            return f"'{key}' is a Box space without a 'shape' list"
    files = meta["files"]
    if not isinstance(files, dict) or not all(isinstance(r, dict) and isinstance(r.get("sha256"), str)
                                               and isinstance(r.get("shape"), list) for r in files.values()):
        return "'files' is not a table of {sha256, shape} records"
    for key in ("reference", "source"):
        if key in meta and not isinstance(meta[key], dict):
            return f"'{key}' is {meta[key]!r}, not a table"
    reference = meta.get("reference", {})
    for key in ("random_return", "expert_return"):
        if reference.get(key) is not None and not number(reference[key]):
            return f"'reference.{key}' is {reference[key]!r}, not a number"
    returns = meta.get("returns")
    if returns is not None and (not isinstance(returns, dict) or (returns and not all(
            number(returns.get(k)) for k in ("mean", "std", "min", "max")))):
        return f"'returns' is {returns!r}, not a table of mean, std, min and max"
    return None


def load_data(info: DatasetInfo, verify: bool = True) -> dict[str, Any]:
    """The transitions as torch tensors by key (``KEYS``), checked against the metadata.

    ``verify`` compares every file's sha256 with the one recorded at collection, so a dataset whose
    bytes changed (a truncated copy, bit rot, an edit) is refused instead of trained on.
    """
    from tensordict import TensorDict

    if info.metadata.get("format") == "minari":
        from .minari import load_minari_data

        return load_minari_data(info)
    data_dir = info.path / DATA
    files = info.metadata["files"]
    for key in KEYS:
        record = files.get(key)
        file = data_dir / f"{key}.memmap"
        if record is None or not file.is_file():
            raise DatasetError(f"dataset '{info.name}' is incomplete: {key} is missing")
        if verify and _sha256(file) != record["sha256"]:
            raise DatasetError(f"dataset '{info.name}' is corrupt: {file.name} does not match its recorded checksum")
    try:
        td = TensorDict.load_memmap(data_dir)
    except Exception as err:  # tensordict raises assorted errors for damaged memmaps
        raise DatasetError(f"dataset '{info.name}' is corrupt: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
    tensors = {}
    for key in KEYS:
        tensor = td.get(key, None)
        if tensor is None:
            raise DatasetError(f"dataset '{info.name}' is incomplete: {key} is missing from {data_dir}")
        if list(tensor.shape) != files[key]["shape"]:
            raise DatasetError(
                f"dataset '{info.name}' is truncated: {key} has shape {list(tensor.shape)}, metadata says {files[key]['shape']}"
            )
        wanted = _dtype(key, info.metadata["action_space"])
        if tensor.dtype != wanted:
            raise DatasetError(
                f"dataset '{info.name}' cannot be trained on: {key} is {str(tensor.dtype).removeprefix('torch.')}, "
                f"training reads {str(wanted).removeprefix('torch.')}"
            )
        tensors[key] = tensor.clone()  # a plain tensor in memory, detached from the memmap file
        problem = values_problem(key, tensors[key], info.metadata["action_space"])
        if problem:
            raise DatasetError(f"dataset '{info.name}' cannot be trained on: {problem}")
    return tensors


def values_problem(key: str, tensor: Any, action_space: dict[str, Any]) -> str | None:
    """What would poison training in one array, or ``None``: a NaN or infinite float (a NaN action trains
    until the critic loss turns NaN a hundred updates later), a Discrete action outside ``[0, n)``.
    Named by the first bad row, as ``row`` indexes the dataset's transitions."""
    import torch

    if tensor.is_floating_point():
        bad = ~torch.isfinite(tensor.reshape(len(tensor), -1)).all(dim=1)
        if bool(bad.any()):
            rows = torch.nonzero(bad).reshape(-1)
            first = tensor.reshape(len(tensor), -1)[rows[0]]
            value = first[~torch.isfinite(first)][0].item()
            more = f" (and {len(rows) - 1} more row{'s' if len(rows) > 2 else ''})" if len(rows) > 1 else ""
            return f"{key} holds {value} at row {int(rows[0])}{more}; datasets must hold finite values"
    elif key == "action" and action_space["type"] == "Discrete":
        bad = (tensor < 0) | (tensor >= int(action_space["n"]))
        if bool(bad.any()):
            row = int(torch.nonzero(bad.reshape(len(tensor), -1).any(dim=1))[0])
            return f"action {int(tensor.reshape(len(tensor), -1)[row][0])} at row {row} is outside Discrete({action_space['n']})"
    return None


def _dtype(key: str, action_space: dict[str, Any]) -> Any:
    """The dtype ``write`` stores ``key`` in (and training reads): bool flags, int64 Discrete actions, else float32."""
    import torch

    if key in ("terminated", "truncated"):
        return torch.bool
    return torch.int64 if key == "action" and action_space["type"] == "Discrete" else torch.float32


def list_datasets() -> list[DatasetInfo | tuple[str, str]]:
    """Every dataset under ``data_root()``: its info, or ``(name, reason)`` for one that is unreadable."""
    root = data_root()
    found: list[DatasetInfo | tuple[str, str]] = []
    if not root.is_dir():
        return found
    for path in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        try:
            found.append(read_info(path.name))
        except DatasetError as err:
            found.append((path.name, str(err)))
    return found


# ---- writing ------------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def episode_returns(
    rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, partial: np.ndarray | None = None
) -> list[float]:
    """Returns of the episodes in contiguous transitions (an episode ends at a terminated or truncated
    flag). ``partial`` marks rows of episodes rlplug cut (the end of a collection, the oldest steps a
    wrapped replay memory lost); those episodes are left out, and so is a trailing piece without a flag."""
    ends = np.flatnonzero(np.logical_or(np.reshape(terminated, -1), np.reshape(truncated, -1)))
    sums = np.cumsum(np.asarray(rewards, dtype=np.float64).reshape(-1))
    cut = np.zeros(len(sums), bool) if partial is None else np.asarray(partial, bool).reshape(-1)
    cut_before = np.cumsum(cut)
    totals, start_sum, start = [], 0.0, 0
    for end in ends:
        if cut_before[end] - (cut_before[start - 1] if start else 0) == 0:
            totals.append(float(sums[end] - start_sum))
        start_sum, start = sums[end], end + 1
    return totals


def env_contiguous(columns: dict[str, np.ndarray], order: np.ndarray, env_of: np.ndarray, wrapped: bool) -> dict[str, np.ndarray]:
    """Transitions of a vectorised run's replay memory, reordered so each env's steps are contiguous.

    ``order`` lists the rows sorted by (env, time); ``env_of`` gives the env of each row in that
    order. The last step of each env's piece is marked truncated unless it terminated, so no episode
    runs into the next env's; ``partial`` marks the pieces' unfinished episodes (and, when the memory
    ``wrapped``, their first ones) so return statistics leave them out. Replay memories keep the true
    final observation of each episode, so the transitions themselves are complete.
    """
    out = {key: np.asarray(value)[order] for key, value in columns.items()}
    env_of = np.asarray(env_of)
    count = len(env_of)
    boundary = np.r_[env_of[1:] != env_of[:-1], True]
    last, first = np.flatnonzero(boundary), np.flatnonzero(np.r_[True, boundary[:-1]])
    terminated = out["terminated"].reshape(count).astype(bool)
    truncated = out["truncated"].reshape(count).astype(bool)
    partial = np.zeros(count, bool)
    partial[last] = ~(terminated[last] | truncated[last])
    if wrapped:
        partial[first] = True
    truncated[last] |= ~terminated[last]
    out["truncated"] = truncated
    out["partial"] = partial
    return out


def return_stats(returns: list[float]) -> dict[str, float] | None:
    if not returns:
        return None
    values = np.asarray(returns)
    return {"mean": float(values.mean()), "std": float(values.std()), "min": float(values.min()), "max": float(values.max())}


def check_target(name: str, overwrite: bool) -> None:
    """Refuse to write dataset ``name`` over anything but a dataset rlplug wrote (``rlplug.util.outputs``), and over
    that one without ``overwrite``."""
    path = dataset_path(name)
    if check_output(path, DATASET, "dataset --overwrite" if overwrite else "dataset", hint="choose another name") and not overwrite:
        raise DatasetError(f"dataset '{name}' already exists at {path}; pass --overwrite to replace it")


def writing_dataset(name: str) -> Any:
    """The lock on writing dataset ``name``: a second process collecting the same name is refused, not raced."""
    return writing(dataset_path(name), f"dataset '{name}' at")


def _write_partial(partial: Path, name: str, tensors: dict[str, Any], arrays: dict[str, np.ndarray], count: int, env_id: str,
                   env_kwargs: dict[str, Any], observation_space: Any, action_space: Any, source: dict[str, Any],
                   reference: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The data and ``metadata.json`` written into the empty directory ``partial``; the metadata."""
    from tensordict import TensorDict

    from .. import __version__

    TensorDict(tensors, batch_size=[count]).memmap_(prefix=partial / DATA)
    returns = episode_returns(arrays["reward"], arrays["terminated"], arrays["truncated"], arrays.get("partial"))
    metadata = {
        "format": FORMAT,
        "name": Path(name).name,
        "env": env_id,
        "env_kwargs": dict(env_kwargs),
        "observation_space": describe_space(observation_space),
        "action_space": describe_space(action_space),
        "transitions": count,
        "episodes": len(returns),
        "returns": return_stats(returns),
        "source": source,
        "reference": reference,
        "rlplug": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "files": {
            key: {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."), "sha256": _sha256(partial / DATA / f"{key}.memmap")}
            for key, t in tensors.items()
        },
    }
    (partial / METADATA).write_text(json.dumps(metadata, indent=2) + "\n")
    return metadata


def write(
    name: str,
    arrays: dict[str, np.ndarray],
    *,
    env_id: str,
    env_kwargs: dict[str, Any],
    observation_space: Any,
    action_space: Any,
    source: dict[str, Any],
    reference: dict[str, Any],
    overwrite: bool = False,
) -> DatasetInfo:
    """Write a dataset atomically: into a temporary sibling directory, then renamed into place.

    ``arrays`` holds ``KEYS`` as numpy arrays with one row per transition, episodes contiguous, and
    optionally ``partial`` (rows of episodes rlplug cut short, left out of the return statistics).
    """
    import torch

    path = dataset_path(name)
    check_target(name, overwrite)
    missing = [k for k in KEYS if k not in arrays]
    if missing:
        raise DatasetError(f"cannot write dataset '{name}': {', '.join(missing)} missing")
    count = len(arrays["reward"])
    if count == 0:
        raise DatasetError(f"cannot write dataset '{name}': no transitions")
    stored_action_space = describe_space(action_space)
    tensors = {}
    for key in KEYS:
        value = torch.as_tensor(np.asarray(arrays[key])).to(_dtype(key, stored_action_space))
        if key in ("reward", "terminated", "truncated"):
            value = value.reshape(count, 1)
        elif value.ndim == 1:
            value = value.reshape(count, 1) if key == "action" else value
        if len(value) != count:
            raise DatasetError(f"cannot write dataset '{name}': {key} has {len(value)} rows, reward has {count}")
        tensors[key] = value.contiguous()
        problem = values_problem(key, tensors[key], stored_action_space)
        if problem:
            raise DatasetError(f"cannot write dataset '{name}': {problem}")
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _write_failed(name, path, err, existed) from None
    with writing_dataset(name):
        check_target(name, overwrite)  # again under the lock: another process may have written it meanwhile
        partial: Path | None = None
        try:
            partial = temporary_sibling(path, ".partial", directory=True)
            metadata = _write_partial(partial, name, tensors, arrays, count, env_id, env_kwargs, observation_space,
                                      action_space, source, reference)  # fmt: skip
            swap_in_dir(partial, path)
        except OSError as err:  # disk full, permission denied, a read-only directory: the old dataset stays
            raise _write_failed(name, path, err, existed) from None
        finally:
            if partial is not None and partial.exists():
                shutil.rmtree(partial, ignore_errors=True)
    return DatasetInfo(name=name, path=path, metadata=metadata)


def _write_failed(name: str, path: Path, err: OSError, existed: bool) -> DatasetError:
    kept = "the dataset there is kept as it was" if existed else "nothing was written there"
    return DatasetError(f"cannot write dataset '{name}' at {path}: {err.strerror or type(err).__name__}; {kept}")
