"""Hooks from recipes and plugins: the recipe field ``hooks`` (checked before anything is built) and the
plugin hook spec ``rlplug_trainer_hooks(build)``, both registered on ``build.trainer`` by ``attach_hooks``.

A recipe entry is a table: ``hook`` names what to build, either one of rlplug's ``NAMED_HOOKS``
(``early_stopping``, ``reward_scaling``, ``log_scalar``: both backends) or one of TorchRL's hook classes
under its import path (``torchrl.trainers.LogScalar``: any ``TrainerHookBase`` subclass ``torchrl.trainers``
exports, nothing else is imported); ``dest`` (optional) registers the hook object at that destination
instead of where its own ``register`` puts it; ``name`` (optional) is the name its state is checkpointed
under; every other key is an argument of the hook's constructor (a list becomes a tuple: a nested key).

    hooks = [{hook = "early_stopping", monitor = "train/episode_return", patience = 5},
             {hook = "torchrl.trainers.LogScalar", key = ["next", "reward"], logname = "r_train"}]

Hooks that take objects (``LRSchedulerHook``'s scheduler) are registered from Python or a plugin.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import HookError, PluginError, RecipeError, RlplugError
from ..util.suggest import did_you_mean
from .neutral import NAMED_HOOKS
from .points import COMPILED_LOSS, LOSS_DESTS, check_dest, family_loop

TORCHRL_HOOKS = "torchrl.trainers."
RESERVED = ("hook", "dest", "name")
AUTOMATIC = ("trainer",)
"""Constructor arguments filled at build time, not by a recipe (``UTDRHook(trainer)``)."""


# ---- the recipe field ----------------------------------------------------------------------------


def check_hooks(value: Any, where: str = "'hooks'") -> list[dict[str, Any]]:
    """The ``hooks`` field checked entry by entry (hook known, ``dest`` known, arguments taken and accepted by
    the hook's constructor); returns it unchanged. Raises ``ValueError`` with one line naming the entry (the
    recipe layer puts the recipe's name in front)."""
    if not isinstance(value, list):
        raise ValueError(f"{where} must be a list of tables {{hook = NAME, ...}}, got {type(value).__name__}")
    for index, entry in enumerate(value):
        try:
            instantiate(entry)
        except RlplugError as err:
            raise ValueError(f"{where}[{index}]: {err}") from None
    return value


def check_hooks_for_loop(entries: Iterable[Mapping[str, Any]], backend: str, kind: str, compiled: bool, where: str) -> None:
    """Each entry's destinations are ones the cell's family loop calls on ``backend`` (a recipe for an
    off-policy cell cannot hook 'pre_epoch'; a compiled gradient step keeps its loss to itself), before
    anything is built."""
    loop = family_loop(backend, kind)
    if loop is None:
        return
    for index, entry in enumerate(entries):
        for dest in _dests(entry):
            refusal = loop.refusal(dest) or (COMPILED_LOSS if compiled and dest in LOSS_DESTS else None)
            if refusal:
                raise RecipeError(
                    f"{where}: 'hooks'[{index}] ({entry['hook']}) registers at '{dest}', which the {loop.name} loop "
                    f"does not call: {refusal}"
                )


def _dests(entry: Mapping[str, Any]) -> list[str]:
    if entry.get("dest") is not None:
        return [entry["dest"]]
    hook = instantiate(entry)
    declared = getattr(type(hook), "dests", None)
    if declared is not None:
        return list(declared)
    recorder = _DestRecorder()
    hook.register(recorder, **_name_argument(entry))
    return recorder.dests


class _DestRecorder:
    """Stands in for a trainer to learn where a hook's own ``register`` puts it."""

    def __init__(self) -> None:
        self.dests: list[str] = []

    def register_op(self, dest: str, op: Any, **kwargs: Any) -> None:
        self.dests.append(dest)

    def register_module(self, name: str, module: Any) -> None:
        pass


# ---- building and registering --------------------------------------------------------------------


def instantiate(entry: Any, trainer: Any = None) -> Any:
    """The hook object a recipe entry describes (``trainer`` fills a ``trainer`` argument)."""
    if not isinstance(entry, Mapping):
        raise HookError(f"a hook entry is a table {{hook = NAME, ...}}, got {type(entry).__name__} {entry!r:.60}")
    factory = hook_factory(entry.get("hook"))
    dest = entry.get("dest")
    if dest is not None:
        check_dest(dest)
        if not any("__call__" in vars(klass) for klass in factory.__mro__):
            raise HookError(f"{entry['hook']} is not called as one op (it registers methods at several points): leave out 'dest'")
    name = entry.get("name")
    if name is not None and (not isinstance(name, str) or not name):
        raise HookError(f"'name' is the name the hook's state is saved under: a non-empty string, got {name!r}")
    arguments = {key: _tuples(value) for key, value in entry.items() if key not in RESERVED}
    parameters = _parameters(factory)
    for key in arguments:
        if key not in parameters or key in AUTOMATIC:
            takes = [p for p in parameters if p not in AUTOMATIC]
            raise HookError(
                f"{entry['hook']} takes no argument '{key}'" + did_you_mean(key, [*takes, *RESERVED])
                + (f" (it takes: {', '.join(takes)})" if takes else " (it takes none)")
            )
    for key, parameter in parameters.items():
        if parameter.default is inspect.Parameter.empty and key not in arguments and key not in AUTOMATIC:
            raise HookError(
                f"{entry['hook']} needs argument '{key}'; a hook that takes an object is registered from Python "
                "(build.trainer.register_op, hook.register(build.trainer)) or a plugin (rlplug_trainer_hooks)"
            )
    if "trainer" in parameters:
        arguments["trainer"] = trainer
    try:
        return factory(**arguments)
    except RlplugError:
        raise
    except (TypeError, ValueError) as err:
        raise HookError(f"{entry['hook']}: {err}") from None


def hook_factory(name: Any) -> type:
    """A hook class by name: rlplug's ``NAMED_HOOKS``, or a ``TrainerHookBase`` subclass of ``torchrl.trainers``."""
    if not isinstance(name, str) or not name:
        raise HookError("a hook entry needs 'hook': a named hook (" + ", ".join(NAMED_HOOKS) + ") or torchrl.trainers.<Hook>")
    if name in NAMED_HOOKS:
        return NAMED_HOOKS[name]
    if not name.startswith(TORCHRL_HOOKS):
        raise HookError(f"unknown hook '{name}'" + did_you_mean(name, NAMED_HOOKS) + f"; TorchRL's hooks are named {TORCHRL_HOOKS}<Hook>")
    if importlib.util.find_spec("torchrl") is None:
        raise HookError(f"hook '{name}' is TorchRL's, and torchrl is not installed: pip install 'rlplug[torchrl]'")
    trainers = importlib.import_module("torchrl.trainers")
    known = {n: c for n, c in vars(trainers).items() if isinstance(c, type) and issubclass(c, trainers.TrainerHookBase)
             and c is not trainers.TrainerHookBase}  # fmt: skip
    short = name[len(TORCHRL_HOOKS):]
    if short not in known:
        raise HookError(f"unknown TorchRL hook '{name}'" + did_you_mean(short, known))
    return known[short]


def _parameters(factory: type) -> dict[str, inspect.Parameter]:
    signature = inspect.signature(factory)
    return {n: p for n, p in signature.parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def _tuples(value: Any) -> Any:
    """TOML has lists, TorchRL's nested keys are tuples."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _name_argument(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": entry["name"]} if entry.get("name") else {}


def register_entry(trainer: Any, entry: Mapping[str, Any]) -> None:
    """Build a recipe entry's hook and register it on ``trainer``."""
    hook = instantiate(entry, trainer)
    if entry.get("dest") is not None:
        trainer.register_op(entry["dest"], hook)
        trainer.register_module(entry.get("name") or str(entry["hook"]).rpartition(".")[2], hook)
    else:
        hook.register(trainer, **_name_argument(entry))


def register_hook(trainer: Any, hook: Any) -> None:
    """A hook a plugin returned: an object with ``register(trainer)`` or a ``(dest, op)`` pair."""
    if isinstance(hook, tuple) and len(hook) == 2:
        trainer.register_op(*hook)
    elif callable(getattr(hook, "register", None)):
        hook.register(trainer)
    else:
        raise HookError(f"a hook is an object with register(trainer) or a (dest, op) pair, got {type(hook).__name__}")


def attach_hooks(build: Any, host: Any) -> None:
    """Register on ``build.trainer`` what the installed plugins' ``rlplug_trainer_hooks(build)`` return, then
    the recipe's ``hooks``, in that order (a recipe's hook sees what plugins' hooks did to a batch)."""
    trainer = build.trainer
    entries = list(getattr(build.recipe, "hooks", []) or [])
    impls = host.pm.hook.rlplug_trainer_hooks.get_hookimpls()
    if not entries and not impls:
        return
    if not callable(getattr(trainer, "register_op", None)):
        raise PluginError(
            f"{type(trainer).__name__} ({'/'.join(build.cell)}) takes no hooks: subclass rlplug's TrainerBase for register_op"
        )
    for impl in reversed(impls):  # pluggy's order: the last registered plugin first
        plugin = impl.plugin_name.split(":")[0]
        try:
            for hook in impl.function(build=build) or ():
                register_hook(trainer, hook)
        except HookError as err:
            raise HookError(f"plugin {plugin}: rlplug_trainer_hooks for {'/'.join(build.cell)}: {err}") from None
    for index, entry in enumerate(entries):
        try:
            register_entry(trainer, entry)
        except HookError as err:
            raise RecipeError(f"recipe '{build.recipe.name}': 'hooks'[{index}]: {err}") from None


LOGGING_DESTS = ("pre_steps_log", "pre_epoch_log", "post_optim_log", "post_epoch_log", "post_optim_complete_log", "post_steps_log")
"""The destinations whose ops' returned values join the metrics row (``TrainerHooks._merge``)."""


def hook_logged_names(op: Any) -> tuple[str, ...] | None:
    """The metric names a registered op adds to the row: rlplug's hooks say so (``logged_names``), TorchRL's
    ``LogScalar`` logs its ``logname``, a hook that monitors (``monitor``) logs nothing; ``None``: unknown."""
    owner = getattr(op, "__self__", op)
    names = getattr(owner, "logged_names", None)
    if names is not None:
        return tuple(names)
    if type(owner).__name__ == "LogScalar" and isinstance(getattr(owner, "logname", None), str):
        return (owner.logname,)
    if isinstance(getattr(owner, "monitor", None), str):
        return ()
    return None


def check_monitors(build: Any) -> None:
    """Each registered hook's ``monitor`` (rlplug's and TorchRL's ``EarlyStopping``) names a metric the run logs:
    the trainer's own (``logged_metrics()``) or one a registered hook logs. Refused before training with a
    did-you-mean; unchecked where the trainer does not declare its metrics or a hook logs names it does not say."""
    trainer = build.trainer
    hooks = getattr(trainer, "hooks", None)
    declared = trainer.logged_metrics() if callable(getattr(trainer, "logged_metrics", None)) else None
    if hooks is None or declared is None:
        return
    names, monitors = set(declared), []
    for dest in LOGGING_DESTS:
        for op, _ in hooks._ops[dest]:
            owner = getattr(op, "__self__", op)
            if isinstance(getattr(owner, "monitor", None), str):
                monitors.append(owner)
            logged = hook_logged_names(op)
            if logged is None:
                return  # a hook logs names nobody declared: any monitor may be one of them
            names.update(logged)
    for hook in monitors:
        if hook.monitor not in names:
            which = next((n for n, m in hooks.modules.items() if m is hook), type(hook).__name__)
            where = f"recipe '{build.recipe.name}': " if getattr(build.recipe, "name", None) else ""
            raise RecipeError(
                f"{where}hook {which} monitors '{hook.monitor}', which {'/'.join(build.cell)} never logs"
                + did_you_mean(hook.monitor, sorted(names)) + f"; it logs: {', '.join(sorted(names))}"
            )

