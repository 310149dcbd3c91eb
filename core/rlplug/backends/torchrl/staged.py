"""The staged gradient step TorchRL's off-policy and offline trainers share, with what goes with it: the
optimisers and their schedulers, the target update, ``compile``, deterministic acting, export, and the
checkpoint of all of it. The same shape as skrl's ``StagedLossAgent`` (``rlplug.backends.common.stages``).

A cell declares ``update_stages`` (default: one stage, ``"update"``, on every gradient step), builds its
optimisers (``make_optimizers(build)``, one per stage name) and names its policy (``policy_model``); a
stage's terms come from ``stage_terms(stage, sample)``, by default the loss's forward.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict
from torch import nn

from ...contract.hookspecs import Build
from ..common.parallel import sync_gradients
from ..common.stages import (
    UpdateSchedule,
    UpdateStage,
    attribute_states,
    clip_groups,
    load_attribute_states,
    optimizer_of,
    stage_terms,
    summed,
)
from .lean import use_batched_critics
from .export import plain_act, torchrl_policy_export
from .modules import deterministic_actions


class TorchRLStagedUpdates:
    """Mixed into a TorchRL family base (``TorchRLOffPolicyTrainer``, ``TorchRLOfflineTrainer``), which calls
    ``init_updates(build)`` once its settings are read and ``gradient_step()`` as often as it owes.

    A subclass gives ``make_optimizers(build)`` (``{optimiser name: optimiser}``; a stage's optimiser is
    ``UpdateStage.optimizer``, default its name) and may declare ``update_stages``, ``target_every`` (the
    target networks move on every ``target_every``-th gradient step, an int or a setting's name),
    ``policy_model`` (the ``build.models`` entry whose ``"action"``, in DETERMINISTIC exploration mode,
    is the evaluated and exported action; or override ``policy_module(build)``), ``checkpointed``
    (attributes besides the loss, optimisers, schedulers and target updater: ``("noise",)``),
    ``clip_setting`` (the setting holding the gradient-norm clip), and override ``stage_terms``,
    ``sample_batch``, ``make_lr_schedulers`` (stepped once per gradient step) and ``extra_metrics``.
    """

    update_stages: tuple[UpdateStage, ...] = (UpdateStage("update"),)
    target_every: int | str = 1
    policy_model = "actor"
    checkpointed: tuple[str, ...] = ()
    clip_setting = "grad_norm_clip"

    def init_updates(self, build: Build) -> None:
        s = build.settings
        self.loss, self.target_updater = build.loss, build.target_updater
        use_batched_critics(self.loss, bool(s.get("batched_critics", False)))
        entry = build.loss_entry
        self.optimised_terms = tuple(entry.terms)
        self.logged_terms = self.optimised_terms + tuple(t for t in entry.reported if t not in self.optimised_terms)
        self.stage_terms_of = stage_terms(entry.terms, entry.optimisers, self.update_stages, type(self).__name__)
        self.stages_by_name = {stage.name: stage for stage in self.update_stages}
        self.update_schedule = UpdateSchedule(self.update_stages, self.target_every, self.setting)
        self.grad_norm_clip = s.get(self.clip_setting, 0.0)
        self.optimizers = dict(self.make_optimizers(build))
        missing = sorted({optimizer_of(stage) for stage in self.update_stages} - set(self.optimizers))
        if missing:
            raise ValueError(f"{type(self).__name__}.make_optimizers gives no optimiser for {', '.join(missing)}")
        self.lr_schedulers = dict(self.make_lr_schedulers(build, self.optimizers))
        self.policy = self.policy_module(build)
        # compile = true: each optimiser step (its terms, backward, clip, step) compiled; the target update stays eager
        self._optimise_stage = self.compiled(self.optimise_stage)

    def setting(self, name: str) -> Any:
        """What a stage's ``every`` / ``only_if`` (or ``target_every``) names, read at every gradient step: the
        trainer's attribute of that name where it has one (a derived cell's class attribute, or one set on the
        instance while training), else the build's setting (as skrl's ``StagedLossAgent.setting``)."""
        return getattr(self, name) if hasattr(self, name) else self.build.settings[name]

    def make_optimizers(self, build: Build) -> Mapping[str, torch.optim.Optimizer]:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} implements no make_optimizers")

    def make_lr_schedulers(self, build: Build, optimizers: Mapping[str, torch.optim.Optimizer]) -> Mapping[str, Any]:
        """Learning-rate schedulers by optimiser name, stepped after every gradient step (none by default)."""
        return {}

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The optimiser of a cell with one."""
        if len(self.optimizers) != 1:
            raise AttributeError(f"{type(self).__name__} has the optimisers {', '.join(self.optimizers)}: pick one from .optimizers")
        return next(iter(self.optimizers.values()))

    # -- one gradient step ------------------------------------------------------------------------

    def sample_batch(self) -> TensorDict:
        return self.memory.sample()

    def stage_terms(self, stage: str, sample: TensorDict) -> Mapping[str, torch.Tensor]:
        """The loss terms of ``stage`` on ``sample``: the loss's forward (one pass, then dict lookups)."""
        return dict(self.loss(sample).items())

    def optimise_stage(self, stage: str | tuple[str, ...], sample: TensorDict) -> dict[str, torch.Tensor]:
        """One optimiser step: the stage's (or stages', sharing one optimiser) terms, backward, clip, step."""
        names = (stage,) if isinstance(stage, str) else stage
        out: dict[str, torch.Tensor] = {}
        for name in names:
            out.update(self.stage_terms(name, sample))
        out = self.hooks.process_loss(sample, out)
        total = summed(out, [t for name in names for t in self.stage_terms_of[name]], "+".join(names))
        first = self.stages_by_name[names[0]]
        optimizer = self.optimizers[optimizer_of(first)]
        optimizer.zero_grad(set_to_none=True)
        total.backward()
        sync_gradients(optimizer)  # data-parallel runs: the mean gradient over ranks
        clip_groups(optimizer, self.grad_norm_clip, first.clip_groups)
        optimizer.step()
        return out

    def gradient_step(self) -> dict[str, torch.Tensor]:
        """One sampled batch through the due stages, then the target update and the schedulers; the terms to log."""
        sample = self.hooks.process_optim_batch(self.sample_batch())
        steps, target_due = self.update_schedule.advance()
        terms: dict[str, torch.Tensor] = {}
        for stages in steps:
            terms.update(self._optimise_stage(stages[0].name if len(stages) == 1 else tuple(s.name for s in stages), sample))
        if target_due and self.target_updater is not None:  # None: a cell without target networks (BC)
            self.target_updater.step()
        for scheduler in self.lr_schedulers.values():
            scheduler.step()
        return {name: terms[name] for name in self.logged_terms if name in terms}

    def extra_metrics(self) -> dict[str, float]:
        """Scalars logged with the loss terms each iteration (none by default)."""
        return {}

    # -- acting -----------------------------------------------------------------------------------

    def policy_module(self, build: Build) -> nn.Module:
        return build.models[self.policy_model]

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:
        return deterministic_actions(self.policy, observations, self.build.device)

    def export_policy(self) -> nn.Module:
        """``act_deterministic`` as one module: the policy's network and its deterministic action."""
        return torchrl_policy_export(self.build, self.policy)

    def evaluation_act(self) -> Any:
        return plain_act(self)

    # -- checkpoints: the loss holds the online and target parameters (and SAC's log alpha) ------------

    def module_state(self) -> dict[str, Any]:
        return {
            "loss": self.loss.state_dict(),
            "optimizers": {name: optimizer.state_dict() for name, optimizer in self.optimizers.items()},
            "lr_schedulers": {name: scheduler.state_dict() for name, scheduler in self.lr_schedulers.items()},
            "target_updater": self.target_updater.state_dict() if self.target_updater is not None else None,
            "update_schedule": self.update_schedule.state_dict(),
            "attributes": attribute_states(self, self.checkpointed),
        }

    def load_module_state(self, state: dict[str, Any]) -> None:
        self.loss.load_state_dict(state["loss"])
        for name, optimizer in self.optimizers.items():
            optimizer.load_state_dict(state["optimizers"][name])
        for name, scheduler in self.lr_schedulers.items():
            scheduler.load_state_dict(state["lr_schedulers"][name])
        if self.target_updater is not None:
            self.target_updater.load_state_dict(state["target_updater"])
        self.update_schedule.load_state_dict(state["update_schedule"])
        load_attribute_states(self, state["attributes"])
