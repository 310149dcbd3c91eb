"""A recipe's ``hooks`` in the TorchRL trainer config ``rlplug.interop.torchrl_hydra`` writes.

TorchRL 0.14.1's trainer configs take ``hooks``: hook objects its ``_register_trainer_hooks`` registers with
``hook.register(trainer)`` once the trainer is built. Each hook the file keeps is a node ``hookN`` that the
trainer's ``hooks`` list interpolates: the config of TorchRL's ``hook`` group for the class
(``hook@hook0: early_stopping``) where there is one that takes the entry's arguments, else the class by
``_target_`` (``_target_: torchrl.trainers.LogScalar``).
A list argument is written as a ``builtins.tuple`` node: rlplug passes a recipe's lists as tuples (nested keys,
``rlplug.hooks.recipe``), and TorchRL's hooks take keys as tuples (a TensorDict refuses a list or ListConfig key).

rlplug's named hooks become the TorchRL hook of the same meaning where there is one:

- ``log_scalar``: ``LogScalar`` with the same key, name and reduction and no std entry, at the same point
  (``pre_steps_log``, each collected batch);
- ``early_stopping``: ``EarlyStopping`` on the same metric when a hook in the file logs it (a ``log_scalar``, a
  TorchRL ``LogScalar``). rlplug counts ``patience`` in reports, TorchRL in frames since the last improvement, so
  the file writes ``patience`` times the frames of one rlplug iteration: exact on-policy (an iteration is one collected
  batch), approximated off-policy (TorchRL checks every collected batch, rlplug every ``log_every`` env steps).
  A metric only rlplug's loop reports (``train/episode_return``, ``loss/*``) is logged by no TorchRL trainer:
  dropped;
- ``reward_scaling``: none (TorchRL's ``RewardNormalizer`` standardises with a decayed mean and std): dropped.

Offline recipes drop both: TorchRL's offline trainers call ``pre_steps_log`` on the online frames they collect,
rlplug's offline loop on the sampled dataset batches. A hook built with its trainer (``UTDRHook``), a ``dest``
other than the hook's own and a registration name another hook took are dropped; a ``name`` is approximated
(the ``hooks`` list registers each hook under its own default name).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from ..hooks.recipe import RESERVED, TORCHRL_HOOKS, hook_factory, instantiate
from ..cli.tables import toml_value

ON_POLICY, OFF_POLICY, OFFLINE = "on-policy", "off-policy", "offline"
SCALAR_LOGGERS = ("LogScalar",)
"""TorchRL hook classes whose ``logname`` an ``early_stopping`` may monitor."""


class _Registrations:
    """Stands in for TorchRL's trainer to learn where a hook's ``register(trainer)`` puts it and under what name."""

    def __init__(self) -> None:
        self.dests: list[str] = []
        self.names: list[str] = []

    def register_op(self, dest: str, op: Any, **kwargs: Any) -> None:
        self.dests.append(dest)

    def register_module(self, name: str, module: Any) -> None:
        self.names.append(name)


Translation = tuple[type, dict[str, Any], str]
"""A recipe entry as TorchRL's hook class, its arguments and a note on what is approximated ("" if nothing)."""


def export_hooks(x: Any, family: str) -> None:
    """Write ``x.recipe.hooks`` into ``x`` (an ``Export``): nodes ``hookN``, the trainer's ``hooks`` list, and the
    header's dropped and approximated lines. ``family``: ``ON_POLICY``, ``OFF_POLICY`` or ``OFFLINE``."""
    entries = list(x.recipe.hooks or [])
    if not entries:
        return
    import torchrl.trainers.algorithms.configs  # noqa: F401  (registers TorchRL's ``hook`` group)
    from hydra.core.config_store import ConfigStore

    kept: dict[int, Translation] = {}
    dropped: dict[int, str] = {}
    taken: dict[str, int] = {}  # registration names of the hooks kept
    # early stopping last: whether it can be written depends on what the others log
    for index in sorted(range(len(entries)), key=lambda i: entries[i]["hook"] == "early_stopping"):
        entry = entries[index]
        if entry["hook"] == "early_stopping":
            result = _early_stopping(x, entry, family, _logged(kept.values()))
        else:
            result = _translate(entry, family)
        if not isinstance(result, str):
            result = _registered(entry, result, index, taken)
        if isinstance(result, str):
            dropped[index] = f"hooks[{index}] = {toml_value(entry)}: {result}"
        else:
            kept[index] = result
    group = ConfigStore.instance().repo.get("hook", {})
    nodes = [_write(x, f"hook{n}", group, *kept[index][:2]) for n, index in enumerate(sorted(kept))]
    if nodes:
        x.cfg["trainer"]["hooks"] = nodes
    for n, index in enumerate(sorted(kept)):
        if entries[index]["hook"] == "early_stopping":
            reports, frames = instantiate(entries[index]).patience, kept[index][1]["patience"]
            unit = "collector.frames_per_batch" if family == ON_POLICY else "log_every env steps"
            x.notes.append(f"hooks[{index}] early_stopping is TorchRL's EarlyStopping (hook{n}), whose patience counts "
                           f"frames: {reports} report(s) x {frames // reports} frames of one rlplug iteration ({unit}) "
                           f"= hook{n}.patience {frames}.")  # fmt: skip
    x.dropped += [dropped[index] for index in sorted(dropped)]
    x.approximated += [f"hooks[{index}] {kept[index][2]}" for index in sorted(kept) if kept[index][2]]


def _translate(entry: dict[str, Any], family: str) -> Translation | str:
    """The TorchRL hook for a recipe entry other than ``early_stopping``, or why the file cannot have it."""
    import torchrl.trainers as trainers

    name = entry["hook"]
    if name == "reward_scaling":
        return ("TorchRL has no hook of its meaning: RewardNormalizer subtracts a decayed mean and divides by a decayed "
                "std; rlplug's reward_scaling divides by the running root mean square and clips")  # fmt: skip
    if name == "log_scalar":
        if family == OFFLINE:
            return _OFFLINE_LOGS
        hook = instantiate(entry)
        return trainers.LogScalar, {"key": hook.key, "logname": hook.name, "include_std": False, "reduction": hook.reduction}, ""
    cls = hook_factory(name)  # torchrl.trainers.<Hook>: checked when the recipe was resolved
    if "trainer" in inspect.signature(cls).parameters:
        return (f"{cls.__name__} is built with the trainer it works on, and a trainer config builds its hooks before "
                "the trainer: register it from Python")  # fmt: skip
    return cls, {key: _tuples(value) for key, value in entry.items() if key not in RESERVED}, ""


_OFFLINE_LOGS = ("TorchRL's offline trainers call it on the online frames they collect, rlplug's offline loop on each "
                 "sampled dataset batch")  # fmt: skip


def _early_stopping(x: Any, entry: dict[str, Any], family: str, logged: set[str]) -> Translation | str:
    """TorchRL's ``EarlyStopping`` on a metric a kept hook logs, ``patience`` reports written as frames."""
    import torchrl.trainers as trainers

    if family == OFFLINE:
        return _OFFLINE_LOGS
    hook = instantiate(entry)
    if hook.monitor not in logged:
        return (f"it monitors '{hook.monitor}', which no hook in this file logs and TorchRL's trainer does not log "
                "(monitor a log_scalar's name to export it)")  # fmt: skip
    batch = x.cfg["collector"]["frames_per_batch"]
    frames = batch if family == ON_POLICY else x.s["log_every"]  # of one rlplug iteration: one report
    note = "" if family == ON_POLICY else (
        f"early_stopping: TorchRL's EarlyStopping checks the metric after every collected batch ({batch} frame{'s' * (batch != 1)}), "
        f"rlplug's after every iteration (log_every = {frames} env steps)")  # fmt: skip
    return trainers.EarlyStopping, {"monitor": hook.monitor, "mode": hook.mode, "min_delta": hook.min_delta,
                                    "patience": hook.patience * frames, "wait_for": hook.wait_for, "check_finite": True}, note


def _logged(translations: Any) -> set[str]:
    """The metric names the kept scalar loggers log (TorchRL's ``LogScalar``: ``logname``, else ``str(key)``)."""
    return {kwargs.get("logname") or str(kwargs.get("key", ("next", "reward")))
            for cls, kwargs, _ in translations if cls.__name__ in SCALAR_LOGGERS}  # fmt: skip


def _registered(entry: dict[str, Any], translation: Translation, index: int, taken: dict[str, int]) -> Translation | str:
    """``translation`` if TorchRL's ``register(trainer)`` puts the hook where the recipe does (a note added when only
    its name differs), else why not; records its registration names in ``taken``."""
    cls, kwargs, note = translation
    registrations = _Registrations()
    cls(**kwargs).register(registrations)
    dest = entry.get("dest")
    if dest is not None and registrations.dests != [dest]:
        return (f"registers at '{dest}'; a trainer config registers each hook where its own register() puts it "
                f"({', '.join(registrations.dests)})")  # fmt: skip
    clash = next((name for name in registrations.names if name in taken), None)
    if clash:
        return f"registers as '{clash}', as hooks[{taken[clash]}] does; a trainer config's hooks list gives no other name"
    taken.update(dict.fromkeys(registrations.names, index))
    if entry.get("name") and entry["name"] not in registrations.names:
        named = (f"name = {entry['name']!r}: registered as '{', '.join(registrations.names)}' (a trainer config's "
                 "hooks list takes no name)")  # fmt: skip
        note = "; ".join(filter(None, (note, named)))
    return cls, kwargs, note


def _write(x: Any, node: str, group: dict[str, Any], cls: type, kwargs: dict[str, Any]) -> str:
    """The hook as node ``node`` of ``x``: its ``hook`` group config if one takes its arguments, else by ``_target_``."""
    option = _group_option(group, cls, kwargs)
    values = {key: _value(value) for key, value in kwargs.items()}
    if option:
        x.group("hook", node, option)
        x.cfg[node] = values
    else:
        x.cfg[node] = {"_target_": TORCHRL_HOOKS + cls.__name__, **values}
    return f"${{{node}}}"


def _group_option(group: dict[str, Any], cls: type, kwargs: dict[str, Any]) -> str | None:
    """The ``hook`` group option whose config builds ``cls`` and takes every argument as written."""
    from omegaconf import OmegaConf

    target = f"{cls.__module__}.{cls.__name__}"
    for filename, stored in group.items():
        config_class = OmegaConf.get_type(stored.node)
        if stored.node.get("_target_") != target or not dataclasses.is_dataclass(config_class):
            continue
        fields = {f.name for f in dataclasses.fields(config_class)}
        # no tuples: TorchRL's configs hold a tuple default as a list (LogScalarConfig's key reaches LogScalar as a
        # ListConfig, which a TensorDict refuses), and Hydra cannot merge a builtins.tuple node over a list
        if all(key in fields and not isinstance(value, tuple) for key, value in kwargs.items()):
            return filename.removesuffix(".yaml")
    return None


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _value(value: Any) -> Any:
    """A hook argument as Hydra instantiates it: a tuple as a ``builtins.tuple`` node (nested ones inside)."""
    if isinstance(value, tuple):
        return {"_target_": "builtins.tuple", "_args_": [[_value(v) for v in value]]}
    return value
