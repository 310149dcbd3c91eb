"""Hook ops see TensorDicts in TorchRL's layout on both backends. A TorchRL loop's batches already are
one; a skrl loop's batches are dicts of tensors under skrl's names (``observations``, ``rewards``, a
multi-agent rollout one dict per agent), viewed here as a TensorDict under TorchRL's keys without a
copy (``rewards`` -> ``("next", "reward")``), and what an op returns is turned back into the dict the
skrl loop goes on with. Imported only when an op is registered at the point being called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import HookError

SKRL_KEYS: dict[str, Any] = {
    "observations": "observation",
    "states": "state",
    "actions": "action",
    "rewards": ("next", "reward"),
    "next_observations": ("next", "observation"),
    "next_states": ("next", "state"),
    "terminated": ("next", "terminated"),
    "truncated": ("next", "truncated"),
    "log_prob": "action_log_prob",
    "values": "state_value",
    "returns": "value_target",
    "advantages": "advantage",
}
"""skrl's memory tensor names -> TorchRL's keys; other names (loss terms) keep their own."""

_SIZED_BY = ("rewards", "actions", "terminated", "log_prob", "values")
"""skrl tensors whose leading dimensions are the batch's (each has one trailing feature dimension)."""


def as_tensordict(batch: Any) -> Any:
    """``batch`` as a TensorDict: itself when it is one (or ``None``), else a view of a dict of tensors."""
    from tensordict import TensorDict, TensorDictBase

    if batch is None or isinstance(batch, TensorDictBase):
        return batch
    if not isinstance(batch, Mapping):
        raise HookError(f"a hook point got a {type(batch).__name__}, not a batch (a TensorDict or a dict of tensors)")
    return TensorDict(_nested(batch), batch_size=_batch_dims(batch))


def _nested(batch: Mapping[str, Any]) -> dict[Any, Any]:
    import torch

    out: dict[Any, Any] = {}
    for name, value in batch.items():
        if isinstance(value, Mapping):  # one agent's tensors in a multi-agent rollout
            out[name] = _nested(value)
            continue
        if not isinstance(value, torch.Tensor):
            continue  # skrl's absent states (None), infos
        key = SKRL_KEYS.get(name, name)
        if isinstance(key, tuple):
            out.setdefault(key[0], {})[key[1]] = value
        else:
            out[key] = value
    return out


def _batch_dims(batch: Mapping[str, Any]) -> list[int]:
    for name in _SIZED_BY:
        value = batch.get(name)
        if value is not None and not isinstance(value, Mapping):
            return list(value.shape[:-1])
    for value in batch.values():
        if isinstance(value, Mapping):
            return _batch_dims(value)
    return []  # loss terms: scalars


def like_native(view: Any, native: Any) -> Any:
    """What an op left of ``view``, shaped as the loop's ``native`` batch: the TensorDict itself on TorchRL,
    a dict under skrl's names on skrl (entries the ops dropped keep their original tensors)."""
    from tensordict import TensorDictBase

    if view is None or not isinstance(native, Mapping) or isinstance(native, TensorDictBase):  # a TensorDict is a Mapping
        return view
    keys = set(view.keys(include_nested=True))
    out = dict(native)
    for name, value in native.items():
        if isinstance(value, Mapping):
            if name in keys:
                out[name] = like_native(view.get(name), value)
            continue
        key = SKRL_KEYS.get(name, name)
        if key in keys:
            out[name] = view.get(key)
    return out


def write_back(tensors: Mapping[str, Any], batch: Mapping[str, Any]) -> None:
    """Copy what hooks replaced in ``batch`` into the storage ``tensors`` it was viewed from (a skrl rollout
    memory, whose views the agent samples), in place."""
    if batch is tensors:
        return
    for name, value in batch.items():
        stored = tensors.get(name)
        if isinstance(value, Mapping):
            write_back(stored, value)
        elif value is not stored and stored is not None:
            if value.shape != stored.shape:
                raise HookError(
                    f"a hook changed the rollout's '{name}' from shape {tuple(stored.shape)} to {tuple(value.shape)}; "
                    "a skrl rollout memory keeps its shape: change values, not sizes"
                )
            stored.copy_(value)


def loss_means(metrics: Mapping[str, float]) -> Any:
    """An iteration's ``loss/<term>`` means as the TensorDict TorchRL hands ``post_optim_complete_log``."""
    import torch
    from tensordict import TensorDict

    terms = {name[len("loss/"):]: torch.tensor(value) for name, value in metrics.items() if name.startswith("loss/")}
    return TensorDict(terms, batch_size=[])
