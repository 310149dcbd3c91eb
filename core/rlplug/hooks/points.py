"""The hook points of rlplug's training loops: TorchRL's ``Trainer.register_op`` destinations, the ops
registered at each, and the loops' calls into them.

A trainer holds one ``TrainerHooks``. Users register through the trainer (``trainer.register_op(dest,
op)``, ``hook.register(trainer)``, as on a ``torchrl.trainers.Trainer``); the family bases call the
dispatch methods below at the moments TorchRL's ``Trainer.train`` / ``optim_steps`` call the same
destinations. The calling conventions are TorchRL's: ``batch_process``, ``process_optim_batch`` and
``pre_epoch`` ops may return a batch that replaces the one they got, ``process_loss(batch, losses)`` may
return the losses, the ``*_log`` ops may return a dict of scalars, merged into the iteration's metrics
row (as ``Trainer._log`` logs them). Ops see TensorDicts on both backends: a skrl loop's dicts of tensors
are viewed as one (``rlplug.hooks.views``) only when an op is registered there, so an unhooked loop pays
one empty-list check per point.

Torch-free: the CLI validates recipe hooks without importing torch.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import BackendMissingError, HookError
from ..util.suggest import did_you_mean

DESTS = (
    "batch_process", "pre_optim_steps", "process_optim_batch", "post_loss", "process_loss", "optimizer",
    "post_steps", "post_optim", "pre_steps_log", "post_steps_log", "post_optim_log", "pre_epoch_log",
    "post_epoch_log", "post_optim_complete_log", "pre_epoch", "post_epoch", "setup", "shutdown",
)  # fmt: skip
"""``torchrl.trainers.Trainer.register_op``'s destinations (TorchRL 0.14), in its order."""

EPOCH_DESTS = ("pre_epoch", "pre_epoch_log", "post_epoch", "post_epoch_log")
LOSS_DESTS = ("post_loss", "process_loss")
BATCHLESS_DESTS = ("setup", "shutdown", "pre_optim_steps", "post_optim", "post_epoch", "post_steps")
"""Destinations whose ops get no batch (TorchRL's ``post_optim_log`` and the other log points get one)."""
GENERIC_DESTS = ("setup", "shutdown", "post_optim_complete_log", "post_steps", "post_steps_log")
"""What ``TrainerBase.train`` calls around ``step()`` for any trainer, on a family base or not."""


# ---- which loop calls what -----------------------------------------------------------------------

_OPTIMIZER = (
    "rlplug's loop steps the optimisers itself (the cell's update stages, gradient clipping, data-parallel "
    "gradient sync, compile): change the losses at 'process_loss' or act after each step at 'post_optim'"
)
_NO_EPOCHS = (
    "the {family} loop takes gradient steps on sampled batches, without epochs over a collected batch: "
    "use 'pre_optim_steps' or 'post_optim_complete_log'"
)
COMPILED_LOSS = "compile = true puts the loss inside the compiled gradient step: set compile = false to hook the losses"

@dataclass(frozen=True)
class Loop:
    """A training loop's hook points: the destinations it does not call, each with the reason."""

    name: str
    refused: Mapping[str, str] = field(default_factory=dict)
    offline: bool = False
    """The sampled batch is also the collected one: ``process_optim_batch`` runs ``batch_process`` first."""

    def refusal(self, dest: str) -> str | None:
        return self.refused.get(dest)

    @property
    def dests(self) -> tuple[str, ...]:
        return tuple(d for d in DESTS if d not in self.refused)


def _family(name: str, *refused: tuple[tuple[str, ...], str], offline: bool = False) -> Loop:
    reasons = {"optimizer": _OPTIMIZER}
    for dests, why in refused:
        reasons.update(dict.fromkeys(dests, why))
    return Loop(name, reasons, offline)


LOOPS: dict[tuple[str, str], Loop] = {
    ("skrl", "on-policy"): _family("skrl on-policy"),
    ("torchrl", "on-policy"): _family("TorchRL on-policy"),
    ("skrl", "off-policy"): _family("skrl off-policy", (EPOCH_DESTS, _NO_EPOCHS.format(family="off-policy"))),
    ("torchrl", "off-policy"): _family("TorchRL off-policy", (EPOCH_DESTS, _NO_EPOCHS.format(family="off-policy"))),
    ("skrl", "offline"): _family("skrl offline", (EPOCH_DESTS, _NO_EPOCHS.format(family="offline")), offline=True),
    ("torchrl", "offline"): _family("TorchRL offline", (EPOCH_DESTS, _NO_EPOCHS.format(family="offline")), offline=True),
}
"""The family bases' loops by (backend, family); multi-agent cells run the on-policy loops."""


def own_loop(trainer_name: str) -> Loop:
    """The loop of a trainer on no family base: ``TrainerBase.train`` calls the generic points only."""
    why = f"{trainer_name} runs its own loop, which calls only {', '.join(GENERIC_DESTS)}"
    return Loop(trainer_name, {dest: why for dest in DESTS if dest not in GENERIC_DESTS})


def family_loop(backend: str, kind: str) -> Loop | None:
    """The loop a cell of ``kind`` (an ``AlgorithmSpec.kind``) runs on ``backend``'s family base."""
    return LOOPS.get((backend, "on-policy" if kind == "multi-agent" else kind))


def check_dest(dest: Any, where: str = "") -> str:
    """``dest`` if it is one of TorchRL's destinations, else the one line with a did-you-mean."""
    if not isinstance(dest, str) or dest not in DESTS:
        prefix = f"{where}: " if where else ""
        raise HookError(f"{prefix}unknown hook destination {dest!r}" + did_you_mean(str(dest), DESTS))
    return dest


# ---- the ops and their dispatch ------------------------------------------------------------------


class TrainerHooks:
    """The ops registered at each destination, the hook modules whose state is checkpointed, and the
    dispatch the loops call. ``optim_count`` counts gradient steps (TorchRL's ``_optim_count``)."""

    def __init__(self, loop: Loop, compiled: bool = False) -> None:
        self.loop = loop
        self.compiled = compiled  # compile = true: the loss runs inside the compiled gradient step
        self._ops: dict[str, list[tuple[Callable[..., Any], dict[str, Any]]]] = {dest: [] for dest in DESTS}
        self.modules: dict[str, Any] = {}
        self._saved: dict[str, Any] = {}  # checkpointed states of modules not registered (yet)
        self.optim_count = 0
        self._optim_count_at_iteration = 0
        self.logged: dict[str, float] = {}  # this iteration's values logged by hooks, for its metrics row
        self.latest: dict[str, list[Any]] = {}  # TorchRL's ``_log_dict``: each metric's latest value
        self.row: dict[str, float] = {}  # the iteration's metrics while post_steps_log ops run
        self.stop_requested = False
        self.stop_reason: str | None = None
        self.stopped_by: dict[str, Any] | None = None  # which hook asked to stop, on which metric and value
        self._running: Any = None  # the op being called, so a stop request knows whose it is
        self._collected: Any = None  # the iteration's last collected batch, for post_steps_log
        self._optimised: Any = None  # the last optimised batch, for post_optim_log

    # -- registration -------------------------------------------------------------------------------

    def register_op(self, dest: str, op: Callable[..., Any], **kwargs: Any) -> None:
        check_dest(dest)
        refusal = self.loop.refusal(dest)
        if refusal:
            raise HookError(f"hook destination '{dest}' cannot apply to the {self.loop.name} loop: {refusal}")
        if dest in LOSS_DESTS and self.compiled:
            raise HookError(f"hook destination '{dest}' cannot apply to the {self.loop.name} loop: {COMPILED_LOSS}")
        if not callable(op):
            raise HookError(f"register_op('{dest}', ...) needs a callable, got {type(op).__name__}")
        if dest not in BATCHLESS_DESTS and importlib.util.find_spec("tensordict") is None:
            raise BackendMissingError(
                f"hook destination '{dest}' hands ops TensorDicts, and tensordict is not installed: pip install tensordict"
            )
        self._ops[dest].append((op, kwargs))

    def register_module(self, name: str, module: Any) -> None:
        """Checkpoint ``module`` (``state_dict`` / ``load_state_dict``) under ``name``; a state of that name
        already loaded from a checkpoint (a hook registered after the resume) is loaded into it now."""
        if name in self.modules:
            raise HookError(f"a hook named '{name}' is already registered; register this one under another name")
        for method in ("state_dict", "load_state_dict"):
            if not callable(getattr(module, method, None)):
                raise HookError(f"hook module '{name}' ({type(module).__name__}) has no {method}(): it cannot be checkpointed")
        self.modules[name] = module
        if name in self._saved:
            module.load_state_dict(self._saved.pop(name))

    def has(self, dest: str) -> bool:
        return bool(self._ops[dest])

    # -- checkpoints --------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        modules = {**self._saved, **{name: module.state_dict() for name, module in self.modules.items()}}
        return {"optim_count": self.optim_count, "modules": modules}

    def load_state_dict(self, state: Mapping[str, Any] | None) -> None:
        """``None``: a checkpoint written before hooks were checkpointed; counting starts again."""
        state = state or {}
        self.optim_count = self._optim_count_at_iteration = int(state.get("optim_count", 0))
        saved = dict(state.get("modules", {}))
        for name, module in self.modules.items():
            if name in saved:
                module.load_state_dict(saved.pop(name))
        self._saved = saved  # kept, and written again, for a hook registered later

    # -- logging and stopping (TorchRL's ``Trainer._log`` and ``request_stop``) ----------------------

    def log(self, **values: Any) -> None:
        scalars = {key: _scalar(value) for key, value in values.items()}
        scalars = {key: value for key, value in scalars.items() if value is not None}
        self.logged.update(scalars)
        self.latest.update((key, [value]) for key, value in scalars.items())

    def request_stop(self, reason: str | None = None) -> None:
        self.stop_requested, self.stop_reason = True, reason
        hook = self._running
        monitor = getattr(hook, "monitor", None)
        value = self.row.get(monitor) if isinstance(monitor, str) else None
        self.stopped_by = {"hook": self._hook_name(hook), "reason": reason,
                           "metric": monitor if isinstance(monitor, str) else None,
                           "value": None if value is None else float(value)}

    def _hook_name(self, op: Any) -> str | None:
        """The name a stopping op is registered under (``early_stopping``), else its class's name; ``None``
        when the stop came from outside any op (a plugin's callback)."""
        if op is None:
            return None
        owner = getattr(op, "__self__", op)  # a bound method registered as an op: its hook object
        for name, module in self.modules.items():
            if module is owner:
                return name
        return getattr(owner, "__qualname__", None) or type(owner).__name__

    # -- dispatch: the loops call these -------------------------------------------------------------

    def setup(self) -> None:
        self.stop_requested, self.stop_reason, self.stopped_by = False, None, None  # a new train() trains until told to stop
        self._call("setup")

    def shutdown(self) -> None:
        self._call("shutdown")

    def batch_process(self, batch: Any) -> Any:
        """A collected batch, before the loop stores or uses it."""
        return self._transform("batch_process", batch)

    def pre_steps_log(self, batch: Any) -> None:
        """A collected batch, once stored (off-policy: in the replay memory), before the gradient steps."""
        self._collected = batch
        self._log_from("pre_steps_log", batch)

    def pre_optim_steps(self) -> None:
        self._call("pre_optim_steps")

    def pre_epoch(self, batch: Any) -> Any:
        """An epoch's start: ``pre_epoch_log`` then ``pre_epoch``, whose ops may return the epoch's batch."""
        self._log_from("pre_epoch_log", batch)
        return self._transform("pre_epoch", batch)

    def process_optim_batch(self, batch: Any) -> Any:
        """A batch about to be optimised on; offline, where it is also the collected one, ``batch_process``
        and ``pre_steps_log`` see it first."""
        if self.loop.offline:
            batch = self.batch_process(batch)
            self.pre_steps_log(batch)
        batch = self._transform("process_optim_batch", batch)
        self._optimised = batch
        return batch

    def process_loss(self, batch: Any, losses: Any) -> Any:
        """The loss's output on ``batch``: ``post_loss(batch)``, then ``process_loss(batch, losses)`` ops,
        whose returned losses replace them."""
        if not (self._ops["post_loss"] or self._ops["process_loss"]):
            return losses
        from .views import as_tensordict, like_native

        view = as_tensordict(batch)
        for op, kwargs in self._ops["post_loss"]:
            op(view, **kwargs)
        if not self._ops["process_loss"]:
            return losses
        out = as_tensordict(losses)
        for op, kwargs in self._ops["process_loss"]:
            result = op(view, out, **kwargs)
            if _is_tensordict(result):
                out = result
        return like_native(out, losses)

    def post_optim(self) -> None:
        """After each gradient step: ``post_optim`` then ``post_optim_log`` (with the batch it optimised on)."""
        self.optim_count += 1
        self._call("post_optim")
        self._log_from("post_optim_log", self._optimised)

    def post_epoch(self, batch: Any) -> None:
        """An epoch's end: ``post_epoch_log`` then ``post_epoch``."""
        self._log_from("post_epoch_log", batch)
        self._call("post_epoch")

    def post_optim_complete_log(self, metrics: Mapping[str, float]) -> None:
        """After an iteration that took gradient steps: ops get TorchRL's ``(optim_steps, average_losses)``,
        the losses being the iteration's ``loss/*`` means."""
        stepped = self.optim_count > self._optim_count_at_iteration
        if stepped and self._ops["post_optim_complete_log"]:
            from .views import loss_means

            means = loss_means(metrics)
            for op, kwargs in self._ops["post_optim_complete_log"]:
                self._merge(op(self.optim_count, means, **kwargs))

    def post_steps(self) -> None:
        self._call("post_steps")

    def post_steps_log(self, metrics: dict[str, float]) -> dict[str, float]:
        """The iteration's end: its metrics become the latest logged values (``_log_dict``; ``row`` while the
        ops run, what hooks logged included), ``post_steps_log`` ops run on the last collected batch, and
        everything hooks logged during the iteration joins its metrics row."""
        self._optim_count_at_iteration = self.optim_count
        self.latest.update((key, [value]) for key, value in metrics.items())
        if self._ops["post_steps_log"]:
            self.row = {**metrics, **self.logged}
            self._log_from("post_steps_log", self._collected)
        row = {**metrics, **self.logged} if self.logged else metrics
        self.logged = {}
        return row

    # -- helpers ------------------------------------------------------------------------------------

    def _call(self, dest: str) -> None:
        for op, kwargs in self._ops[dest]:
            self._running = op
            op(**kwargs)
        self._running = None

    def _transform(self, dest: str, batch: Any) -> Any:
        ops = self._ops[dest]
        if not ops:
            return batch
        from .views import as_tensordict, like_native

        view = as_tensordict(batch)
        for op, kwargs in ops:
            out = op(view, **kwargs)
            if _is_tensordict(out):
                view = out
        return like_native(view, batch)

    def _log_from(self, dest: str, batch: Any) -> None:
        ops = self._ops[dest]
        if not ops:
            return
        from .views import as_tensordict

        view = as_tensordict(batch)
        for op, kwargs in ops:
            self._running = op
            self._merge(op(view, **kwargs))
        self._running = None

    def _merge(self, result: Any) -> None:
        if isinstance(result, Mapping):
            self.log(**{str(k): v for k, v in result.items() if k != "log_pbar"})


def _is_tensordict(value: Any) -> bool:
    from tensordict import TensorDictBase

    return isinstance(value, TensorDictBase)


def _scalar(value: Any) -> float | None:
    """A logged value as a float for the metrics row; ``None`` for what is not one number (a vector)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    numel = getattr(value, "numel", None)
    if callable(numel) and numel() == 1:
        return float(value.item())
    return None


UNHOOKED = TrainerHooks(Loop("skrl agent's own", dict.fromkeys(DESTS, "no rlplug trainer drives this agent")))
"""What an rlplug skrl agent calls when no rlplug trainer drives it (skrl's own trainers): no ops anywhere."""
