"""The state of a gymnasium (vector) environment as tensors, numbers and strings, so a resumed run
steps on exactly where the checkpointed one was: mid-episode, same RNG draws.

Gymnasium has no state API. What works for environments whose state is plain Python data (the
classic-control family, most pure-Python envs): walk each wrapper's and the base env's attributes
and keep the plain ones (numbers, strings, ``None``, numpy arrays, torch tensors) and numpy
``Generator`` states. Environments that keep state in C (MuJoCo, Box2D) are not covered; their run
resumes with the environment as this module leaves it, which is stated by ``covers``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_SCALARS = (bool, int, float, str, type(None))


def _encode(value: Any) -> Any:
    """A plain value as checkpoint data, or ``_SKIP``."""
    import torch

    if isinstance(value, np.random.Generator):
        return {"__generator__": value.bit_generator.state}
    if isinstance(value, np.generic):  # before the scalars: np.float64 is a float subclass
        return value.item()
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        try:
            return {"__ndarray__": torch.from_numpy(np.ascontiguousarray(value).copy())}
        except TypeError:  # a dtype torch has no tensor for
            return _SKIP
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    return _SKIP


_SKIP = object()


def _decode(current: Any, saved: Any) -> Any:
    """The value to set; arrays and tensors of the same shape are copied in place instead, so whatever
    else holds a reference to them (VMAS entities share state tensors) sees the restored values."""
    if isinstance(saved, dict) and "__generator__" in saved:
        generator = current if isinstance(current, np.random.Generator) else np.random.Generator(np.random.PCG64())
        generator.bit_generator.state = saved["__generator__"]
        return generator
    if isinstance(saved, dict) and "__ndarray__" in saved:
        array = saved["__ndarray__"].numpy()
        if isinstance(current, np.ndarray) and current.shape == array.shape and current.dtype == array.dtype and current.flags.writeable:
            current[...] = array
            return current
        return array.copy()
    if hasattr(saved, "clone"):
        if hasattr(current, "copy_") and current.shape == saved.shape and current.dtype == saved.dtype:
            with _no_grad():
                current.copy_(saved)
            return current
        return saved.clone()
    return saved


def _no_grad() -> Any:
    import torch

    return torch.no_grad()


def snapshot(obj: Any) -> dict[str, Any]:
    """``obj``'s plain attributes (see the module doc) by name."""
    out = {}
    for name, value in vars(obj).items():
        encoded = _encode(value)
        if encoded is not _SKIP:
            out[name] = encoded
    return out


def restore(obj: Any, state: dict[str, Any]) -> None:
    for name, saved in state.items():
        setattr(obj, name, _decode(getattr(obj, name, None), saved))


def _chain(env: Any) -> list[Any]:
    """The wrapper chain down to the base env (gymnasium wrappers and vector wrappers keep ``.env``)."""
    chain = [env]
    while hasattr(chain[-1], "env") and chain[-1].env is not chain[-1]:
        chain.append(chain[-1].env)
    return chain


def vector_env_state(vector_env: Any) -> dict[str, Any]:
    """The state of a gymnasium vector env (its wrappers, then each sub-env's wrappers and base env)."""
    chain = _chain(vector_env)
    return {
        "chain": [snapshot(layer) for layer in chain],
        "envs": [[snapshot(layer) for layer in _chain(env)] for env in getattr(chain[-1], "envs", [])],
    }


def load_vector_env_state(vector_env: Any, state: dict[str, Any]) -> None:
    chain = _chain(vector_env)
    if len(chain) != len(state["chain"]) or len(getattr(chain[-1], "envs", [])) != len(state["envs"]):
        raise ValueError("the checkpoint's environment state does not fit this environment (other wrappers or env count)")
    for layer, saved in zip(chain, state["chain"]):
        restore(layer, saved)
    for env, saved_chain in zip(chain[-1].envs, state["envs"]):
        layers = _chain(env)
        if len(layers) != len(saved_chain):
            raise ValueError("the checkpoint's environment state does not fit this environment (other wrappers)")
        for layer, saved in zip(layers, saved_chain):
            restore(layer, saved)


# ---- deep snapshots: environments whose state lives in nested objects (MPE worlds, VMAS scenarios) ----


def _is_plain_object(value: Any) -> bool:
    """Objects whose attributes are state: anything with a ``__dict__`` that is not a function, class,
    module or torch module (those hold code and parameters, not environment state)."""
    import types

    import torch

    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType, torch.nn.Module, torch.device)):
        return False
    return hasattr(value, "__dict__")


def deep_snapshot(root: Any, max_depth: int = 12) -> dict[str, Any]:
    """The plain data reachable from ``root`` through attributes, lists and string-keyed dicts; each
    object is visited once (the first path that reaches it), so shared objects and cycles are fine."""
    seen: set[int] = set()

    def value_of(value: Any, depth: int) -> Any:
        encoded = _encode(value)
        if encoded is not _SKIP:
            return encoded
        if depth >= max_depth:
            return _SKIP
        if isinstance(value, (list, tuple)):
            items = [value_of(v, depth + 1) for v in value]
            return {"__list__": [None if i is _SKIP else i for i in items], "__skip__": [i is _SKIP for i in items]}
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            items = {k: value_of(v, depth + 1) for k, v in value.items()}
            return {"__dict__": {k: v for k, v in items.items() if v is not _SKIP}}
        if _is_plain_object(value):
            if id(value) in seen:
                return _SKIP
            seen.add(id(value))
            attributes = {k: value_of(v, depth + 1) for k, v in vars(value).items()}
            return {"__object__": {k: v for k, v in attributes.items() if v is not _SKIP}}
        return _SKIP

    seen.add(id(root))
    return {k: v for k, v in ((k, value_of(v, 1)) for k, v in vars(root).items()) if v is not _SKIP}


def deep_restore(root: Any, state: dict[str, Any]) -> None:
    """Undo ``deep_snapshot`` on an environment built the same way."""

    def restored(current: Any, saved: Any) -> Any:
        if isinstance(saved, dict) and "__object__" in saved:
            for name, value in saved["__object__"].items():
                setattr(current, name, restored(getattr(current, name, None), value))
            return current
        if isinstance(saved, dict) and "__list__" in saved:
            items = list(current) if isinstance(current, (list, tuple)) else []
            if len(items) != len(saved["__list__"]):
                raise ValueError("the checkpoint's environment state does not fit this environment (a list changed length)")
            for index, (value, skipped) in enumerate(zip(saved["__list__"], saved["__skip__"])):
                if not skipped:
                    items[index] = restored(items[index], value)
            if isinstance(current, list):
                current[:] = items  # in place: other holders of the list see it
                return current
            if hasattr(current, "_fields"):  # a namedtuple
                return type(current)(*items)
            return type(current)(items) if isinstance(current, tuple) else items
        if isinstance(saved, dict) and "__dict__" in saved:
            target = current if isinstance(current, dict) else {}
            for key, value in saved["__dict__"].items():
                target[key] = restored(target.get(key), value)
            return target
        return _decode(current, saved)

    for name, value in state.items():
        setattr(root, name, restored(getattr(root, name, None), value))
