"""Minari datasets (Farama's successor of D4RL), both ways: reading one from the local Minari root as an
offline recipe's ``dataset = "minari:NAMESPACE/NAME-vN"``, and writing an rlplug dataset as a Minari one.

Reading goes through ``minari.load_dataset`` (never a download: a dataset absent from the local root,
``$MINARI_DATASETS_PATH`` or Minari's default ``~/.minari/datasets``, is refused in one line). Each
episode's ``observations`` (one more row than its actions), ``actions``, ``rewards``, ``terminations``
and ``truncations`` become rlplug's transition arrays as Minari stores them; TorchRL 0.14.1's own
``MinariExperienceReplay`` is not used, since it yields all-zero data (reference §9.4). Minari's
``ref_min_score`` / ``ref_max_score`` (D4RL's reference returns, for the ported D4RL datasets) are the
dataset's reference returns, so scores on it are D4RL-normalised.

Writing uses Minari's own writer (``minari.create_dataset_from_buffers``, no ``jax`` needed): one
``EpisodeBuffer`` per episode, rlplug's random and expert returns as ``ref_min_score`` / ``ref_max_score``.

``minari`` (and ``h5py``) come with the ``rlplug[minari]`` extra and are imported only here, when used.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .datasets import KEYS, DatasetError, DatasetInfo, _dtype, describe_space, episode_returns, return_stats, values_problem

PREFIX = "minari:"
EXPORTED_BY = "rlplug "
"""How ``export_minari`` begins the ``algorithm_name`` it records (``rlplug policy``, ``rlplug random``)."""
FORMAT_NAME = "minari"


def is_minari(name: str) -> bool:
    return name.startswith(PREFIX)


def _minari() -> Any:
    if importlib.util.find_spec("minari") is None or importlib.util.find_spec("h5py") is None:
        raise DatasetError("Minari datasets need the minari extra, which is not installed: pip install 'rlplug[minari]'")
    import minari

    return minari


def minari_root() -> Path:
    """Where Minari keeps local datasets: ``$MINARI_DATASETS_PATH``, else ``~/.minari/datasets`` (Minari's rule)."""
    explicit = os.environ.get("MINARI_DATASETS_PATH")
    return Path(explicit).expanduser() if explicit else Path.home() / ".minari" / "datasets"


def _local_ids() -> list[str]:
    root = minari_root()
    if not root.is_dir():
        return []
    return sorted(str(p.parent.parent.relative_to(root)) for p in root.glob("**/data/metadata.json"))


def local_minari_rows() -> list[dict[str, Any]]:
    """Each dataset in the local Minari root as ``dataset list`` shows it, read from Minari's plain
    ``metadata.json`` (no import of minari, so listing stays cheap): name, env, transitions, episodes, references."""
    rows = []
    for dataset_id in _local_ids():
        try:
            meta = json.loads((minari_root() / dataset_id / "data" / "metadata.json").read_text())
            spec = json.loads(meta["env_spec"]) if isinstance(meta.get("env_spec"), str) else meta.get("env_spec") or {}
            rows.append({"name": PREFIX + dataset_id, "env": spec.get("id", "?"), "transitions": meta.get("total_steps"),
                         "episodes": meta.get("total_episodes"), "random_return": meta.get("ref_min_score"),
                         "expert_return": meta.get("ref_max_score")})  # fmt: skip
        except (OSError, ValueError, TypeError, KeyError) as err:
            rows.append({"name": PREFIX + dataset_id, "error": f"unreadable Minari metadata: {err}"})
    return rows


def _open(name: str) -> Any:
    """The ``MinariDataset`` ``name`` (``minari:ID``) from the local root, or one ``DatasetError``."""
    from ..util.suggest import did_you_mean

    dataset_id = name[len(PREFIX):]
    if not dataset_id:
        raise DatasetError(f"dataset '{name}' names no Minari dataset id (minari:NAMESPACE/NAME-vN)")
    minari = _minari()
    local = _local_ids()
    if dataset_id not in local:
        raise DatasetError(
            f"Minari dataset '{dataset_id}' is not in the local Minari root {minari_root()} (set MINARI_DATASETS_PATH; "
            f"rlplug never downloads)" + did_you_mean(dataset_id, local)
        )
    try:
        return minari.load_dataset(dataset_id, download=False)
    except Exception as err:  # minari and h5py raise assorted errors for damaged datasets
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DatasetError(f"Minari dataset '{dataset_id}' cannot be read: {first}") from None


def _env_id(dataset: Any, name: str) -> str:
    spec = dataset.spec.env_spec
    if spec is None:
        raise DatasetError(f"dataset '{name}' records no environment (its env_spec is empty), so it cannot be evaluated")
    return spec.id


def _file_records(dataset_dir: Path) -> dict[str, Any]:
    """A sha256 of each of the dataset's files: what pins a checkpoint to the data it was trained on."""
    records = {}
    for file in sorted((dataset_dir / "data").iterdir()):
        if file.is_file():
            digest = hashlib.sha256()
            with file.open("rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
            records[file.name] = {"sha256": digest.hexdigest(), "shape": [file.stat().st_size]}
    return records


def read_minari_info(name: str) -> DatasetInfo:
    """The metadata of Minari dataset ``name`` in rlplug's terms (no episode data is read)."""
    dataset = _open(name)
    meta = dataset.storage.metadata
    try:
        observation_space, action_space = describe_space(dataset.observation_space), describe_space(dataset.action_space)
    except DatasetError as err:
        raise DatasetError(f"dataset '{name}': {err}") from None
    reference: dict[str, Any] = {}
    # a dataset rlplug exported carries rlplug's own random and expert returns there, not D4RL's
    exported = str(meta.get("algorithm_name") or "").startswith(EXPORTED_BY)
    if meta.get("ref_min_score") is not None and meta.get("ref_max_score") is not None:
        reference = {"random_return": float(meta["ref_min_score"]), "expert_return": float(meta["ref_max_score"]),
                     "expert": "rlplug's random and expert returns, exported with the dataset" if exported else
                     "Minari's ref_min_score / ref_max_score (D4RL's reference returns)"}  # fmt: skip
    path = minari_root() / name[len(PREFIX):]
    metadata = {
        "format": FORMAT_NAME,
        "name": name,
        "env": _env_id(dataset, name),
        "env_kwargs": dict(dataset.spec.env_spec.kwargs or {}),
        "observation_space": observation_space,
        "action_space": action_space,
        "transitions": int(meta["total_steps"]),
        "episodes": int(meta["total_episodes"]),
        "source": {"kind": "minari", "dataset_id": meta.get("dataset_id"), "algorithm": meta.get("algorithm_name"),
                   "minari_version": meta.get("minari_version"), "data_format": meta.get("data_format")},  # fmt: skip
        "reference": reference,
        "d4rl_reference": bool(reference) and not exported,
        "files": _file_records(path),
    }
    return DatasetInfo(name=name, path=path, metadata=metadata)


def load_minari_data(info: DatasetInfo) -> dict[str, Any]:
    """The transitions of every episode as torch tensors by key (``KEYS``), as ``load_data`` returns them;
    the episodes' return statistics are recorded into ``info.metadata["returns"]``."""
    import torch

    dataset = _open(info.name)
    space = info.metadata["action_space"]
    columns: dict[str, list[np.ndarray]] = {key: [] for key in KEYS}
    for episode in dataset.iterate_episodes():
        observations = np.asarray(episode.observations)
        steps = len(episode.actions)
        if not isinstance(observations, np.ndarray) or observations.dtype == object or len(observations) != steps + 1:
            raise DatasetError(f"dataset '{info.name}': episode {episode.id} has {len(observations)} observations for {steps} "
                               "actions (Minari stores one more); only Box observations are read")  # fmt: skip
        columns["observation"].append(observations[:-1])
        columns["next_observation"].append(observations[1:])
        columns["action"].append(np.asarray(episode.actions))
        columns["reward"].append(np.asarray(episode.rewards, dtype=np.float64).reshape(steps, 1))
        columns["terminated"].append(np.asarray(episode.terminations, dtype=bool).reshape(steps, 1))
        columns["truncated"].append(np.asarray(episode.truncations, dtype=bool).reshape(steps, 1))
    if not columns["reward"]:
        raise DatasetError(f"dataset '{info.name}' holds no episodes")
    arrays = {key: np.concatenate(parts) for key, parts in columns.items()}
    count = len(arrays["reward"])
    tensors = {}
    for key in KEYS:
        value = torch.as_tensor(arrays[key]).to(_dtype(key, space))
        tensors[key] = value if key in ("observation", "next_observation") else value.reshape(count, -1)
    for key in KEYS:
        problem = values_problem(key, tensors[key], space)
        if problem:
            raise DatasetError(f"dataset '{info.name}' cannot be trained on: {problem}")
    returns = episode_returns(arrays["reward"], arrays["terminated"], arrays["truncated"])
    info.metadata["returns"] = return_stats(returns)
    return tensors


# ---- writing ------------------------------------------------------------------------------------


def default_minari_id(name: str) -> str:
    return f"rlplug/{Path(name).name}-v0"


def export_minari(info: DatasetInfo, data: dict[str, Any], dataset_id: str) -> Path:
    """Write the rlplug dataset ``info`` (its loaded ``data``) as Minari dataset ``dataset_id`` under the local
    Minari root, one episode per run of rows ending in a terminated or truncated flag; the new dataset's directory.

    Minari stores each episode's observations once (``T + 1`` rows), so every step's next observation must be
    the following step's observation within an episode; rlplug's collections and replay exports keep that.
    """
    minari = _minari()
    import gymnasium as gym
    from minari.data_collector import EpisodeBuffer

    if dataset_id in _local_ids():
        raise DatasetError(f"Minari dataset '{dataset_id}' already exists in {minari_root()}; choose another --id or delete it")
    arrays = {key: value.cpu().numpy() for key, value in data.items()}
    count = len(arrays["reward"])
    ends = np.flatnonzero((arrays["terminated"] | arrays["truncated"]).reshape(-1))
    if len(ends) == 0 or ends[-1] != count - 1:
        raise DatasetError(f"dataset '{info.name}' cannot be exported: its last transition ends no episode")
    discrete = info.metadata["action_space"]["type"] == "Discrete"
    buffers, start = [], 0
    for number, end in enumerate(ends):
        rows = slice(start, end + 1)
        observations, following = arrays["observation"][rows], arrays["next_observation"][rows]
        if len(observations) > 1 and not np.array_equal(observations[1:], following[:-1]):
            row = start + int(np.flatnonzero(~np.all(observations[1:] == following[:-1], axis=tuple(range(1, observations.ndim))))[0])
            raise DatasetError(f"dataset '{info.name}' cannot be exported to Minari: the next observation of row {row} is not "
                               "the observation of the row after it, within one episode")  # fmt: skip
        actions = arrays["action"][rows]
        buffers.append(EpisodeBuffer(
            id=number,
            observations=np.concatenate([observations, following[-1:]]),
            actions=actions.reshape(-1) if discrete else actions,
            rewards=arrays["reward"][rows].reshape(-1).astype(np.float64),
            terminations=arrays["terminated"][rows].reshape(-1),
            truncations=arrays["truncated"][rows].reshape(-1),
            infos={},
        ))  # fmt: skip
        start = end + 1
    reference = info.reference
    refs = {}
    if reference.get("random_return") is not None and reference.get("expert_return") is not None:
        refs = {"ref_min_score": float(reference["random_return"]), "ref_max_score": float(reference["expert_return"])}
    import warnings

    from .. import __version__

    env = gym.make(info.env, **info.metadata.get("env_kwargs", {}))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Minari asks for an author, an email and a code link: rlplug has none
            minari.create_dataset_from_buffers(
                dataset_id, buffers, env=env.spec, algorithm_name=f"{EXPORTED_BY}{info.metadata.get('source', {}).get('kind', '?')}",
                description=f"rlplug {__version__} dataset '{Path(info.name).name}' ({info.env}, {count} transitions)",
                observation_space=env.observation_space, action_space=env.action_space, data_format="hdf5", **refs,
            )  # fmt: skip
    finally:
        env.close()
    return minari_root() / dataset_id


def minari_summary(path: Path) -> dict[str, Any]:
    """The Minari metadata of the dataset written at ``path`` (what ``dataset export --json`` prints)."""
    return json.loads((path / "data" / "metadata.json").read_text())
