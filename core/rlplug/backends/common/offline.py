"""The trainer every offline cell shares, on either backend: gradient steps on a fixed dataset,
periodic deterministic evaluation, progress counted in updates.

A backend helper (``skrl_offline``, ``torchrl_offline``) puts the dataset into the library's own
memory; a cell subclasses one of their trainers with ``gradient_step()``. Imported only when an
offline cell is built.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from ...data.datasets import DatasetError, DatasetInfo, load_data, read_info
from ...contract.hookspecs import Build
from ...util.rng import capture_rng_state, restore_rng_state
from ...contract.trainer import TrainerBase
from .terms import TermMeans


def dataset_transitions(build: Build) -> tuple[DatasetInfo, dict[str, torch.Tensor]]:
    """The recipe's dataset as tensors, checked against the env, with continuous actions pulled
    ``action_margin`` of the half-range inside the bounds (a tanh policy's log-prob of an action
    exactly on the bound is about -90, which swamps an actor loss)."""
    # the pipeline read and checked the metadata when it prepared the build; a hand-made build has not
    info = build.extras.get("dataset") or read_info(build.recipe.dataset)
    info.check_env(build.env_id, build.observation_space, build.action_space, f"recipe '{build.recipe.name}'")
    data = load_data(info)
    margin = build.settings.get("action_margin", 0.0)
    if margin and data["action"].is_floating_point():
        low = torch.as_tensor(build.action_space.low, dtype=torch.float32)
        high = torch.as_tensor(build.action_space.high, dtype=torch.float32)
        centre, half = (high + low) / 2, (high - low) / 2 * (1.0 - margin)
        data["action"] = torch.maximum(torch.minimum(data["action"], centre + half), centre - half)
    return info, data


def dataset_fingerprint(info: DatasetInfo) -> str:
    """What identifies a dataset's contents: the checksums recorded when it was written."""
    return ",".join(f"{key}:{record['sha256'][:16]}" for key, record in sorted(info.metadata["files"].items()))


class ObservationStandardizer(nn.Module):
    """``(x - mean) / (std + eps)`` with a dataset's fixed statistics (TD3+BC's state normalisation,
    ``eps = 1e-3`` as in its paper). Called like skrl's preprocessors (``train`` is accepted and ignored:
    the statistics never move), so one module serves a skrl agent, a TorchRL batch and an export."""

    def __init__(self, observations: torch.Tensor, eps: float = 1e-3) -> None:
        super().__init__()
        flat = observations.reshape(len(observations), -1).float()
        self.register_buffer("mean", flat.mean(0))
        self.register_buffer("scale", flat.std(0, correction=0) + eps)

    def forward(self, x: torch.Tensor, train: bool = False) -> torch.Tensor:
        return (x - self.mean) / self.scale


class OfflineTrainerBase(TrainerBase):
    """Takes ``log_every`` gradient steps per iteration; evaluates every ``eval_every`` updates.

    Progress (``train``'s budget, the checkpoints, the metrics' x axis) counts gradient updates.
    Subclasses implement ``gradient_step() -> dict[str, Tensor]`` (one update, returning the terms to
    log, detached or not), ``act_deterministic``, ``module_state()`` / ``load_module_state(state)``.
    """

    progress_unit = "updates"

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        s = build.settings
        self.updates = 0
        self.dataset: DatasetInfo = build.extras["dataset"]
        self.log_every = s["log_every"]
        self.eval_every = s["eval_every"]
        self.eval_episodes = s["eval_episodes"]
        self.last_evaluation: dict[str, float] = {}

    def gradient_step(self) -> dict[str, torch.Tensor]:  # pragma: no cover - abstract
        raise NotImplementedError

    def step(self) -> dict[str, float]:
        stop = self.updates + self.log_every
        if self.budget is not None:
            stop = min(stop, max(self.budget, self.updates + 1))
        start = self.updates
        terms = TermMeans()
        self.hooks.pre_optim_steps()
        while self.updates < stop:
            terms.add(self.gradient_step())
            self.hooks.post_optim()
            self.updates += 1
        self.iterations += 1
        metrics = {f"loss/{name}": value for name, value in terms.pop().items()}  # one sync per iteration
        metrics["train/updates"] = float(self.updates)
        if self.eval_every and self.updates // self.eval_every > start // self.eval_every:
            metrics.update(self.evaluation_metrics(self.evaluate(self.eval_episodes)))
        return metrics

    def logged_metrics(self) -> frozenset[str]:
        terms = getattr(self, "logged_terms", None) or self.agent.logged_terms  # TorchRL's staged updates, or skrl's agent
        names = {f"loss/{name}" for name in terms} | {"train/updates"}
        if self.eval_every:
            names |= {"eval/return", "eval/normalised_score"}
        return frozenset(names)

    def evaluation_metrics(self, returns: list[float]) -> dict[str, float]:
        mean = float(np.mean(returns))
        found = {"eval/return": mean}
        score = self.dataset.normalised_score(mean)
        if score is not None:
            found["eval/normalised_score"] = score
        d4rl = self.dataset.d4rl_score(mean)
        if d4rl is not None:
            found["eval/d4rl_normalised_score"] = d4rl
        self.last_evaluation = found
        return found

    # -- checkpoints ------------------------------------------------------------------------------

    def module_state(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def load_module_state(self, state: dict[str, Any]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "updates": self.updates}

    def load_counters(self, state: dict[str, Any]) -> None:
        super().load_counters(state)
        self.updates = int(state["updates"])

    def state_dict(self) -> dict[str, Any]:
        # the dataset is not copied into the checkpoint: it is named by the recipe and pinned here
        return {
            "modules": self.module_state(),
            "dataset": dataset_fingerprint(self.dataset),
            "counters": self.counters(),
            "hooks": self.hooks.state_dict(),
            "rng": capture_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("dataset") != dataset_fingerprint(self.dataset):
            raise DatasetError(
                f"the checkpoint was trained on other data than dataset '{self.dataset.name}' now holds; "
                "restore that dataset or start a new run"
            )
        self.load_module_state(state["modules"])
        self.load_counters(state["counters"])
        self.hooks.load_state_dict(state.get("hooks"))  # None: a checkpoint from before hooks were saved
        restore_rng_state(state["rng"])
