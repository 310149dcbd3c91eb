"""Hooks rlplug provides for skrl and TorchRL cells alike, named for recipes (``NAMED_HOOKS``).

Each is a TorchRL-style hook object: ``register(trainer, name)`` puts it at its destination and
checkpoints it under ``name``; ``state_dict`` / ``load_state_dict`` carry what a resumed run needs.
Batches are TensorDicts in TorchRL's layout on both backends (``rlplug.hooks.views``). Torch-free to
import (recipes are validated by constructing them); torch is imported when one runs.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import HookError


def _key(key: Any) -> Any:
    """A nested key as TorchRL takes it: a recipe's list becomes a tuple."""
    return tuple(key) if isinstance(key, list) else key


def reward_keys(batch: Any, key: Any = None) -> list[Any]:
    """``[key]``, or (``None``) every entry of ``batch`` named ``reward``: ``("next", "reward")``, each agent
    group's (``("next", "agent", "reward")``) and each skrl agent's (``("agent_0", "next", "reward")``)."""
    if key is not None:
        return [key]
    return [k for k in batch.keys(include_nested=True, leaves_only=True) if (k[-1] if isinstance(k, tuple) else k) == "reward"]


class EarlyStopping:
    """Stop training when a logged metric stops improving.

    ``monitor``: a metric the trainer reports (``train/episode_return``, a ``loss/*`` term, offline
    ``eval/return``, a value another hook logs; not the run's ``--eval-every`` evaluations, which the run
    adds to the row after the trainer's hooks ran). Each iteration that reports it counts; after
    ``patience`` reports in a row without an improvement of more than ``min_delta`` (``mode`` ``max``:
    larger is better), training ends after that iteration. Nothing is judged before ``wait_for`` steps of
    progress. A non-finite value stops at once. Runs at ``post_steps_log``.
    """

    dests = ("post_steps_log",)

    def __init__(self, monitor: str = "train/episode_return", patience: int = 10, mode: str = "max",
                 min_delta: float = 0.0, wait_for: int = 0) -> None:  # fmt: skip
        if mode not in ("max", "min"):
            raise HookError(f"early_stopping: mode must be 'max' or 'min', got {mode!r}")
        if not isinstance(patience, int) or patience < 1:
            raise HookError(f"early_stopping: patience must be a whole number >= 1, got {patience!r}")
        if not isinstance(wait_for, int) or wait_for < 0:
            raise HookError(f"early_stopping: wait_for must be a whole number >= 0, got {wait_for!r}")
        self.monitor, self.patience, self.mode = str(monitor), patience, mode
        self.min_delta, self.wait_for = float(min_delta), wait_for
        self.best: float | None = None
        self.stale = 0  # reports since the best one
        self._trainer: Any = None

    def __call__(self, batch: Any = None) -> None:
        value = self._trainer.hooks.row.get(self.monitor)
        if value is None or self._trainer.collected_frames < self.wait_for:
            return  # not reported this iteration
        value = float(value)
        if not math.isfinite(value):
            self._trainer.request_stop(f"'{self.monitor}' became {value}")
            return
        better = self.best is None or (value > self.best + self.min_delta if self.mode == "max" else value < self.best - self.min_delta)
        if better:
            self.best, self.stale = value, 0
            return
        self.stale += 1
        if self.stale >= self.patience:
            self._trainer.request_stop(f"'{self.monitor}' did not improve on {self.best:.4g} in {self.stale} reports")

    def register(self, trainer: Any, name: str = "early_stopping") -> None:
        self._trainer = trainer
        trainer.register_op("post_steps_log", self)
        trainer.register_module(name, self)

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "stale": self.stale}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best, self.stale = state["best"], int(state["stale"])


class RewardScaling:
    """Divide the rewards of every collected batch, before the loop stores or uses it, by the running root
    mean square of all rewards collected so far (plus ``eps``), then clip them to ``[-clip, clip]`` (``clip =
    0``: no clipping). A scale, not a standardisation: signs and zero rewards stay, a constant reward
    becomes 1. ``key``: the reward entry (default: every entry named ``reward``). Training returns
    (``train/episode_return``) and evaluations stay in the env's own units. Runs at ``batch_process``:
    on-policy the rollout (before its advantages), off-policy each batch before the replay memory,
    offline each sampled batch."""

    dests = ("batch_process",)
    logged_names = ()

    def __init__(self, key: Any = None, eps: float = 1e-8, clip: float = 10.0) -> None:
        if eps <= 0 or clip < 0:
            raise HookError(f"reward_scaling: eps must be > 0 and clip >= 0, got eps={eps!r}, clip={clip!r}")
        self.key, self.eps, self.clip = _key(key), float(eps), float(clip)
        self.count, self.sum_of_squares = 0, 0.0

    def __call__(self, batch: Any) -> Any:
        import torch

        keys = reward_keys(batch, self.key)
        with torch.no_grad():
            for key in keys:  # the statistics first, so the first batch is scaled by its own
                rewards = batch.get(key)
                self.count += rewards.numel()
                self.sum_of_squares += rewards.double().square().sum().item()
            scale = math.sqrt(self.sum_of_squares / max(self.count, 1)) + self.eps
            for key in keys:
                reward = batch.get(key) / scale
                batch.set(key, reward.clamp(-self.clip, self.clip) if self.clip else reward)
        return batch

    def register(self, trainer: Any, name: str = "reward_scaling") -> None:
        trainer.register_op("batch_process", self)
        trainer.register_module(name, self)

    def state_dict(self) -> dict[str, Any]:
        return {"count": self.count, "sum_of_squares": self.sum_of_squares}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.count, self.sum_of_squares = int(state["count"]), float(state["sum_of_squares"])


class LogScalar:
    """Log one entry of each collected batch, reduced to a number (``mean``, ``sum``, ``min`` or ``max``),
    in the iteration's metrics row as ``name`` (default ``batch/<key>_<reduction>``). ``key``: a nested key
    as a list (``["next", "reward"]``, the default). Runs at ``pre_steps_log``: the rollout, each
    collected batch (its last one in a row's iteration) or, offline, each sampled batch."""

    dests = ("pre_steps_log",)
    REDUCTIONS = ("mean", "sum", "min", "max")

    def __init__(self, key: Any = ("next", "reward"), name: str = "", reduction: str = "mean") -> None:
        if reduction not in self.REDUCTIONS:
            from ..util.suggest import did_you_mean

            raise HookError(f"log_scalar: unknown reduction {reduction!r}" + did_you_mean(str(reduction), self.REDUCTIONS))
        self.key, self.reduction = _key(key), reduction
        joined = ".".join(self.key) if isinstance(self.key, tuple) else str(self.key)
        self.name = name or f"batch/{joined}_{reduction}"

    @property
    def logged_names(self) -> tuple[str, ...]:
        """The metric this hook adds to each row, so an ``early_stopping`` monitor can be checked against it."""
        return (self.name,)

    def __call__(self, batch: Any) -> dict[str, float]:
        value = batch.get(self.key).float()
        return {self.name: getattr(value, self.reduction)().item()}

    def register(self, trainer: Any, name: str | None = None) -> None:
        trainer.register_op("pre_steps_log", self)
        trainer.register_module(name or f"log_{self.name}", self)

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


NAMED_HOOKS: dict[str, type] = {"early_stopping": EarlyStopping, "reward_scaling": RewardScaling, "log_scalar": LogScalar}
"""The hooks a recipe's ``hooks`` field names without an import path; they work on both backends."""
