"""The part of ``torchrl.trainers.Trainer``'s interface that hooks use, on every rlplug trainer.

``TrainerBase`` mixes this in, so ``trainer.register_op(dest, op)`` works as on a TorchRL ``Trainer`` and
TorchRL's ``TrainerHookBase`` objects register unchanged (``hook.register(trainer)``): they call
``register_op`` / ``register_module`` and read the attributes below, which carry rlplug's meanings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .points import TrainerHooks


class TorchRLTrainerAPI:
    """``register_op``, ``register_module`` and the trainer attributes TorchRL's hooks read.

    ``collected_frames`` is ``progress`` (env steps; offline: updates), ``_optim_count`` the gradient steps
    taken, ``total_frames`` the running ``train`` call's budget, ``_log(**values)`` adds values to the
    iteration's metrics row, ``_log_dict`` holds every metric's latest value, ``request_stop`` /
    ``_stop_training`` end ``train`` after the iteration under way, ``loss_module`` is the cell's loss
    (``build.loss``) and ``replay_buffer`` its TorchRL buffer where it has one (on TorchRL cells).
    """

    hooks: TrainerHooks
    build: Any
    budget: int | None

    def register_op(self, dest: str, op: Callable[..., Any], **kwargs: Any) -> None:
        """Call ``op`` at ``dest`` (one of ``rlplug.hooks.DESTS``, TorchRL's names) with TorchRL's arguments."""
        self.hooks.register_op(dest, op, **kwargs)

    register_hook = register_op  # TorchRL's alias

    def register_module(self, module_name: str, module: Any) -> None:
        """Checkpoint ``module``'s ``state_dict`` under ``module_name`` with the trainer's own state."""
        self.hooks.register_module(module_name, module)

    @property
    def collected_frames(self) -> int:
        return int(self.progress)  # type: ignore[attr-defined]

    @property
    def _optim_count(self) -> int:
        return self.hooks.optim_count

    @property
    def total_frames(self) -> int:
        return int(self.budget if self.budget is not None else self.build.recipe.steps)

    def _log(self, log_pbar: bool = False, **values: Any) -> None:
        self.hooks.log(**values)

    @property
    def _log_dict(self) -> dict[str, list[Any]]:
        return self.hooks.latest

    @property
    def _stop_training(self) -> bool:
        return self.hooks.stop_requested

    @_stop_training.setter
    def _stop_training(self, value: bool) -> None:
        self.hooks.stop_requested = bool(value)

    def request_stop(self, reason: str | None = None) -> None:
        """End ``train`` after the iteration under way (TorchRL's ``EarlyStopping`` calls this)."""
        self.hooks.request_stop(reason)

    @property
    def loss_module(self) -> Any:
        return self.build.loss

    @property
    def replay_buffer(self) -> Any:
        memory = getattr(self, "memory", None)
        return memory if hasattr(memory, "write_count") else None
