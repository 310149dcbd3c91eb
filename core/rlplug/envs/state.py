"""The state of a gymnasium (vector) environment as tensors, numbers and strings, so a resumed run
steps on exactly where the checkpointed one was: mid-episode, same RNG draws.

Gymnasium has no state API. What works for environments whose state is plain Python data (the
classic-control family, most pure-Python envs): walk each wrapper's and the base env's attributes
and keep the plain ones (numbers, strings, ``None``, numpy arrays, torch tensors, deques of arrays such
as a frame stack's), numpy ``Generator`` and legacy ``RandomState`` states, and the running statistics
of ``NormalizeReward``. Base envs whose state lives elsewhere get their own capture (``native_state``):

* MuJoCo: the physics (``mj_getState`` with ``mjSTATE_INTEGRATION``: time, qpos, qvel, act, history,
  warm start, control, applied forces, mocap, user data, plugin state) plus every array of ``MjData``
  whose size the model fixes (positions, inertias, forces computed in the last step, which some envs
  read before stepping again), so the next ``mj_step`` and the env's reward are bit for bit those of an
  uninterrupted run; the env's RNG and step counters are plain attributes;
* MinAtar: the game object (plain Python data and a ``RandomState``), deep-copied;
* Box2D and the ALE keep their state in C objects that cannot be read back: a resumed run starts new
  episodes there (``load_vector_env_state`` says so by returning ``True``), and the run layer prints a note.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

_SCALARS = (bool, int, float, str, type(None))
# wall-clock readings (gymnasium's RecordEpisodeStatistics): another process's clock, not env state
_WALL_CLOCK = frozenset({"episode_start_time", "time_queue"})


def _encode(value: Any) -> Any:
    """A plain value as checkpoint data, or ``_SKIP``."""
    import torch

    if isinstance(value, np.random.Generator):
        return {"__generator__": value.bit_generator.state}
    if isinstance(value, np.random.RandomState):
        name, keys, position, has_gauss, cached = value.get_state()
        return {"__randomstate__": [name, torch.from_numpy(keys.astype(np.int64)), int(position), int(has_gauss), float(cached)]}
    if isinstance(value, deque):
        items = [_encode(item) for item in value]
        if any(item is _SKIP for item in items):
            return _SKIP
        return {"__deque__": items, "maxlen": value.maxlen}
    if type(value).__name__ == "RunningMeanStd" and type(value).__module__.startswith("gymnasium."):
        return {"__running__": snapshot(value)}
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
    if isinstance(saved, dict) and "__randomstate__" in saved:
        name, keys, position, has_gauss, cached = saved["__randomstate__"]
        state = (name, keys.numpy().astype(np.uint32), position, has_gauss, cached)
        if isinstance(current, np.random.RandomState):  # in place: MinAtar's game and its env share one
            current.set_state(state)
            return current
        generator = np.random.RandomState()
        generator.set_state(state)
        return generator
    if isinstance(saved, dict) and "__deque__" in saved:
        items = [_decode(None, item) for item in saved["__deque__"]]
        if isinstance(current, deque) and current.maxlen == saved["maxlen"]:
            current.clear()
            current.extend(items)
            return current
        return deque(items, maxlen=saved["maxlen"])
    if isinstance(saved, dict) and "__running__" in saved:
        if current is not None:
            restore(current, saved["__running__"])
        return current
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
        if name in _WALL_CLOCK:
            continue
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


def _in_workers(vector_env: Any) -> bool:
    """Whether the sub-envs live out of reach: in worker processes (``vector_mode = "async"``: ``AsyncVectorEnv``) or in
    EnvPool's C++ pool (``"envpool"``)."""
    import gymnasium as gym

    return isinstance(vector_env, gym.vector.AsyncVectorEnv) or getattr(vector_env, "state_out_of_reach", False)


def vector_env_state(vector_env: Any) -> dict[str, Any]:
    """The state of a gymnasium vector env (its wrappers, then each sub-env's wrappers and base env).

    An ``AsyncVectorEnv``'s sub-envs live in its worker processes, out of reach: only its wrappers are
    saved, with ``"workers": True``, and a resume starts new episodes (``load_vector_env_state``)."""
    chain = _chain(vector_env)
    workers = _in_workers(chain[-1])
    envs = [] if workers else getattr(chain[-1], "envs", [])
    return {
        "chain": [snapshot(layer) for layer in (chain[:-1] if workers else chain)],
        "envs": [[snapshot(layer) for layer in _chain(env)] for env in envs],
        "native": [native_state(_chain(env)[-1]) for env in envs],
        "workers": workers,
    }


def load_vector_env_state(vector_env: Any, state: dict[str, Any]) -> bool:
    """Undo ``vector_env_state``. Returns whether the sub-envs must start new episodes: their base env
    keeps state in C that the checkpoint could not hold (Box2D, ALE); the caller resets the vector env."""
    chain = _chain(vector_env)
    if state.get("workers") or _in_workers(chain[-1]):
        # vector_mode = "async" on either side: the sub-envs' state was (or would be) in worker processes;
        # the resumed run starts new episodes, as for envs whose state lives in C (Box2D, ALE)
        return True
    if len(chain) != len(state["chain"]) or len(getattr(chain[-1], "envs", [])) != len(state["envs"]):
        raise ValueError("the checkpoint's environment state does not fit this environment (other wrappers or env count)")
    for layer, saved in zip(chain, state["chain"]):
        restore(layer, saved)
    restart = False
    natives = state.get("native") or [None] * len(state["envs"])  # checkpoints written before native states
    for env, saved_chain, native in zip(chain[-1].envs, state["envs"], natives):
        layers = _chain(env)
        if len(layers) != len(saved_chain):
            raise ValueError("the checkpoint's environment state does not fit this environment (other wrappers)")
        for layer, saved in zip(layers, saved_chain):
            restore(layer, saved)
        if native is not None:
            load_native_state(layers[-1], native)
        restart = restart or not resumes_mid_episode(layers[-1])
    return restart


# ---- base envs whose state is not (only) their attributes ----------------------------------------


def _suite_of_env(env: Any) -> str:
    """``mujoco``, ``minatar``, ``box2d``, ``ale``, ``minigrid``, ``dm_control`` or ``""`` (plain Python state), from the
    base env's class."""
    module = type(env).__module__
    for prefix, suite in (("gymnasium.envs.mujoco", "mujoco"), ("gymnasium.envs.box2d", "box2d"), ("ale_py", "ale"),
                          ("minatar", "minatar"), ("minigrid", "minigrid"), ("shimmy", "dm_control")):
        if module == prefix or module.startswith(prefix + "."):
            return suite
    if hasattr(env, "model") and type(getattr(env, "data", None)).__name__ == "MjData":  # a user's MujocoEnv
        return "mujoco"
    return ""


def resumes_mid_episode(env: Any) -> bool:
    """Whether a checkpoint of this base env captures a running episode (``False`` for Box2D and the ALE, whose state
    is in C, and MiniGrid and DeepMind Control, whose grid objects and physics are not plain attributes)."""
    return _suite_of_env(env) not in ("box2d", "ale", "minigrid", "dm_control")


def native_state(env: Any) -> dict[str, Any] | None:
    """What ``snapshot`` misses of a base env: MuJoCo physics, a MinAtar game; ``None`` for the rest."""
    suite = _suite_of_env(env)
    if suite == "mujoco":
        return {"mujoco": mujoco_state(env.model, env.data)}
    if suite == "minatar" and hasattr(env, "game"):
        return {"minatar": deep_snapshot(env.game)}
    return None


def load_native_state(env: Any, state: dict[str, Any]) -> None:
    if "mujoco" in state:
        load_mujoco_state(env.model, env.data, state["mujoco"])
    if "minatar" in state:
        deep_restore(env.game, state["minatar"])


_MUJOCO_SKIP = ("plugin", "plugin_data")
"""MjData arrays that hold addresses (plugin instances), never copied between processes."""


def _mujoco_fixed_fields(model: Any, data: Any) -> list[str]:
    """The ``MjData`` arrays whose shape the model fixes (a fresh ``MjData`` has them at the same shape), by
    name; the others live in the arena (contacts, constraint rows) and are rebuilt by the next ``mj_step``."""
    import mujoco

    fresh = mujoco.MjData(model)
    names = []
    for name in dir(fresh):
        if name.startswith("_") or name in _MUJOCO_SKIP:
            continue
        value = getattr(fresh, name, None)
        if isinstance(value, np.ndarray) and getattr(data, name).shape == value.shape:
            names.append(name)
    return names


def mujoco_state(model: Any, data: Any) -> dict[str, Any]:
    """A MuJoCo simulation's state: ``mj_getState(mjSTATE_INTEGRATION)`` and the model-sized arrays."""
    import mujoco
    import torch

    spec = int(mujoco.mjtState.mjSTATE_INTEGRATION)
    integration = np.empty(mujoco.mj_stateSize(model, spec), dtype=np.float64)
    mujoco.mj_getState(model, data, integration, spec)
    fields = {}
    for name in _mujoco_fixed_fields(model, data):
        value = getattr(data, name)
        if value.dtype.kind in "biuf":
            fields[name] = torch.from_numpy(np.array(value, copy=True))
    return {"spec": spec, "integration": torch.from_numpy(integration), "fields": fields}


def load_mujoco_state(model: Any, data: Any, state: dict[str, Any]) -> None:
    """Undo ``mujoco_state`` on a simulation of the same model: the arrays first, then the integration
    state over them, so that state is authoritative."""
    import mujoco

    fixed = _mujoco_fixed_fields(model, data)
    for name, saved in state["fields"].items():
        if name in fixed:
            target = getattr(data, name)
            array = saved.numpy()
            if target.shape == array.shape:
                target[...] = array
    integration = state["integration"].numpy()
    if integration.shape[0] != mujoco.mj_stateSize(model, int(state["spec"])):
        raise ValueError("the checkpoint's MuJoCo state does not fit this environment's model")
    mujoco.mj_setState(model, data, np.ascontiguousarray(integration, dtype=np.float64), int(state["spec"]))


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
            attributes = {k: value_of(v, depth + 1) for k, v in vars(value).items() if k not in _WALL_CLOCK}
            return {"__object__": {k: v for k, v in attributes.items() if v is not _SKIP}}
        return _SKIP

    seen.add(id(root))
    return {k: v for k, v in ((k, value_of(v, 1)) for k, v in vars(root).items() if k not in _WALL_CLOCK) if v is not _SKIP}


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
