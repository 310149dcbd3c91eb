"""TorchRL replay buffers: filling a lazy storage quietly, and storages whose writes skip tensordict's indexing."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict
from torchrl.data import LazyMemmapStorage, LazyTensorStorage

from ..common.nstep import lookahead_positions, nstep_returns
from .env import quiet_torchrl_info

STEPS_TO_NEXT_OBS = "steps_to_next_obs"
"""The key of an n-step batch's step counts: ``MultiStepTransform``'s, which TorchRL's TD(0) estimator raises gamma to."""


def extend_quietly(memory: Any, transitions: TensorDict) -> None:
    """``memory.extend(transitions)``; the first call, which sizes a lazy storage, without TorchRL's INFO line."""
    if len(memory):
        memory.extend(transitions)
    else:
        with quiet_torchrl_info():
            memory.extend(transitions)


def nstep_batch(memory: Any, batch: TensorDict, n: int, gamma: float, *, num_envs: int, steps_per_block: int) -> TensorDict:
    """``batch``, sampled from ``memory`` (its ``"index"`` the storage rows), with n-step returns under the keys
    TorchRL's ``MultiStepTransform`` writes: ``("next", "reward")`` the discounted sum of up to ``n`` rewards
    from each sampled step on in its env, every other ``"next"`` entry that of the last step summed, and
    ``"steps_to_next_obs"`` the number of steps summed, which TorchRL's TD(0) estimator raises gamma to.
    Rewards, steps and next observations are upstream's (a test compares them); the done flags are not:
    upstream leaves each step's own, so a window that reaches a termination would bootstrap from the
    terminal state, where here the last summed step's flags stop it.

    The buffer is written one ``[num_envs, steps_per_block]`` batch at a time, env-major (``common.nstep``);
    the sum stops after an episode's last step (``("next", "done")``) and at the newest stored step."""
    storage = memory._storage
    stored_next = storage._storage["next"]
    positions, stored = lookahead_positions(
        batch["index"], n, written=int(memory._writer._write_count), capacity=int(storage.max_size),
        num_envs=num_envs, steps_per_block=steps_per_block,
    )  # fmt: skip
    ended_at = stored_next["done"][positions].reshape(positions.shape)
    rewards = stored_next["reward"]
    last, returns, steps = nstep_returns(positions, stored, rewards[positions].reshape(positions.shape), ended_at, gamma)
    summed_next = _gathered(stored_next, last)
    summed_next["reward"] = returns.reshape(-1, *rewards.shape[1:])
    out = batch.copy()
    out["next"] = summed_next
    out[STEPS_TO_NEXT_OBS] = steps.reshape(-1, *rewards.shape[1:])
    return out


class LeafAccess:
    """Mixed into a TorchRL tensor storage: ``set`` and ``get`` go leaf by leaf on plain tensordicts.

    Upstream's ``set`` assigns ``self._storage[cursor] = data``, a tensordict ``__setitem__`` that checks and
    casts every entry: about 0.5 ms for one transition on the 2-core box, as long as the env step it stores.
    Here each of the data's tensors goes into the storage's tensor of the same key (``stored[cursor] =
    value``, the indexed copy that assignment ends in) around upstream's own bookkeeping (last cursor,
    length, mutation revision), so the storage's content and state are upstream's (a test compares them).
    Anything else (the first write, which sizes the storage; a key or dtype the storage does not hold; a
    lazy stack; an int or slice cursor) goes through upstream's ``set``. A locked storage (memmap) keeps
    the data's entries under its own keys only, as upstream's ``set`` selects them.

    ``get`` of a sampler's 1-D index: upstream's ``self._storage[:len][index]`` (two tensordict indexings)
    as one ``leaf[index]`` per tensor, into a tensordict of the same structure; other indices go upstream.
    """

    def get(self, index: Any) -> Any:
        storage = getattr(self, "_storage", None)
        if not (self.initialized and type(storage) is TensorDict and type(index) is torch.Tensor and index.ndim == 1
                and index.dtype == torch.long):
            return super().get(index)
        return _gathered(storage, index)

    def set(self, cursor: Any, data: Any, *, set_cursor: bool = True) -> None:
        pairs = self._leaf_pairs(cursor, data)
        if pairs is None:
            return super().set(cursor, data, set_cursor=set_cursor)
        if set_cursor:
            self._set_last_cursor(cursor)
            self._get_new_len(data, cursor)
        for stored, value in pairs:
            stored[cursor] = value
        self._bump_mutation_revision()

    def _leaf_pairs(self, cursor: Any, data: Any) -> list[tuple[torch.Tensor, torch.Tensor]] | None:
        storage = getattr(self, "_storage", None)
        if not (self.initialized and isinstance(cursor, torch.Tensor) and type(data) is TensorDict and type(storage) is TensorDict):
            return None
        kept = self._storage_keys  # a locked (memmap) storage keeps only its own keys of the data, as upstream's select
        leaves = self._leaves_of(storage)
        pairs = []
        for key, value in data.items(True, True):
            if kept is not None and not _selected(key, kept):
                continue
            stored = leaves.get(key)
            if stored is None or stored.dtype != value.dtype or stored.device != value.device:
                return None
            pairs.append((stored, value))
        return pairs

    def _leaves_of(self, storage: TensorDict) -> dict[Any, torch.Tensor]:
        """The storage's tensors by key, read once per storage tensordict (``load_state_dict`` may swap it)."""
        cached = self.__dict__.get("_rlplug_leaves")
        if cached is None or cached[0] is not storage:
            cached = (storage, dict(storage.items(True, True)))
            self.__dict__["_rlplug_leaves"] = cached
        return cached[1]


class TransitionStorage(LeafAccess, LazyTensorStorage):
    """``LazyTensorStorage`` with ``LeafAccess``."""


class TransitionMemmapStorage(LeafAccess, LazyMemmapStorage):
    """``LazyMemmapStorage`` with ``LeafAccess``."""


def _selected(key: Any, kept: Any) -> bool:
    """Whether ``TensorDict.select(*kept)`` keeps the leaf ``key``: it or one of its parents is listed."""
    if not isinstance(key, tuple):
        return key in kept
    return any((key[0] if i == 1 else key[:i]) in kept for i in range(1, len(key) + 1))


def _gathered(data: TensorDict, index: torch.Tensor) -> TensorDict:
    """``data[index]`` for a 1-D long index: each tensor indexed, nested tensordicts alike."""
    out = {key: _gathered(value, index) if type(value) is TensorDict else value[index] for key, value in data.items()}
    return TensorDict._new_unsafe(out, batch_size=index.shape, device=data.device)
