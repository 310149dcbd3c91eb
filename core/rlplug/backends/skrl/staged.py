"""The staged gradient step every skrl off-policy and offline agent shares, and what their trainers share:
building the agent from a declaration, compiling its stages, acting and exporting deterministically.

An agent mixes ``StagedLossAgent`` in before skrl's agent class (``class LossDelegatingSAC(StagedLossAgent,
SAC)``) and declares its ``update_stages`` (``rlplug.backends.common.stages``); ``gradient_step()`` then
samples a batch, runs the due stages in order (``loss(agent, batch, stage)``, the optimised terms summed,
skrl's optimiser step), updates the mixed-precision scaler, steps the target updater when due and the
learning-rate schedulers, and returns the terms to log. skrl's own trainers reach it through ``update()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from skrl.agents.torch import Agent

from ...contract.hookspecs import Build
from ...errors import RlplugError
from ...hooks import UNHOOKED
from ..common.optim import use_adam_impl
from ..common.parallel import sync_gradients
from ..common.stages import (
    UpdateSchedule,
    UpdateStage,
    attribute_states,
    clip_groups,
    load_attribute_states,
    stage_terms,
    summed,
)
from .export import SkrlPolicyActing
from .models import batched_critics_refusal


def optimise(agent: Agent, loss: torch.Tensor, optimizer: torch.optim.Optimizer, grad_norm_clip: float, groups: int | None = None) -> None:
    """skrl's optimiser step: backward through the agent's scaler, distributed gradient reduction,
    optional gradient-norm clip of each of the optimiser's first ``groups`` parameter groups (all: ``None``;
    skrl's optimisers hold one group, the parameters upstream clips), step.

    The reduction averages everything ``optimizer`` steps over ranks, bare tensors too: upstream
    reduces only models, so SAC's learned ``log_entropy_coefficient`` drifts apart across ranks.
    """
    optimizer.zero_grad()
    agent.scaler.scale(loss).backward()
    sync_gradients(optimizer)
    if grad_norm_clip > 0 and groups != 0:
        agent.scaler.unscale_(optimizer)
        clip_groups(optimizer, grad_norm_clip, groups)
    agent.scaler.step(optimizer)


class StagedLossAgent:
    """What rlplug's skrl off-policy and offline agents share, mixed in before skrl's agent class: the
    registered staged loss, its update stages, the target updater from the hook, batch sampling.

    A subclass declares ``update_stages`` and ``target_every`` (the target networks move on every
    ``target_every``-th gradient step, an int or a ``setting``'s name, read at every gradient step), and
    optionally ``checkpointed`` (attributes skrl's ``checkpoint_modules`` miss, dotted paths:
    ``"exploration_noise.state"``), ``after_stage(stage)`` and ``extra_metrics()``. A stage's optimiser is
    the agent's attribute ``UpdateStage.optimizer`` (default ``"<stage>_optimizer"``, skrl's names); its
    learning-rate scheduler, stepped once per gradient step as skrl does, the same name with ``scheduler``
    for ``optimizer``.

    An agent written on skrl's bare ``Agent`` (skrl has no offline agent) gets what skrl's own agents set
    up and the gradient step reads: ``scaler`` (a ``GradScaler``, enabled by ``cfg.mixed_precision``), the
    autocast device type and identity observation / state preprocessors; an agent that sets them keeps
    its own. ``observation_preprocessor`` is their public name (TD3+BC sets a dataset standardiser), and
    ``sampled_names`` (default: what skrl's ``init`` records) the memory tensors a batch holds.
    """

    update_stages: tuple[UpdateStage, ...] = ()
    target_every: int | str = 1
    checkpointed: tuple[str, ...] = ()
    sampled_names: tuple[str, ...] | None = None
    """The memory tensors one batch holds (``None``: the ones skrl's ``init`` created, skrl's own list)."""
    trainer_hooks = UNHOOKED
    """The hook points of the rlplug trainer driving this agent (``rlplug.hooks``); it sets them."""
    batched_critics = False
    """Whether ``critic_values`` calls the agent's critics as one batched ensemble (``use_batched_critics``)."""

    def __init__(
        self,
        *,
        loss: Any,
        terms: Sequence[str],
        reported: Sequence[str] = (),
        optimisers: Sequence[tuple[str, str]] = (),
        target_updater: Any,
        grad_norm_clip: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.provide_skrl_attributes()
        self.loss = loss
        self.loss_terms = tuple(terms)
        self.logged_terms = tuple(terms) + tuple(t for t in reported if t not in terms)
        self.target_updater = target_updater
        self.grad_norm_clip = self.cfg.grad_norm_clip if grad_norm_clip is None else grad_norm_clip
        self.stage_terms = stage_terms(self.loss_terms, optimisers, self.update_stages, type(self).__name__)
        self.stages_by_name = {stage.name: stage for stage in self.update_stages}
        self.update_schedule = UpdateSchedule(self.update_stages, self.target_every, self.setting)

    def use_batched_critics(self, enabled: bool) -> None:
        """The setting ``batched_critics``: call the agent's Q(s, a) critics (every model whose role names a critic,
        targets included) as one ensemble; critics that cannot be batched are refused in one line."""
        if not enabled:
            return
        critics = [model for role, model in self.models.items() if "critic" in role and model is not None]
        why = batched_critics_refusal(critics) if critics else f"{type(self).__name__} has no Q(s, a) critics"
        if why is not None:
            raise RlplugError(f"batched_critics = true: {why}; set batched_critics = false")
        self.batched_critics = True

    def provide_skrl_attributes(self) -> None:
        """Set what skrl's agents set in their constructors and ``gradient_step`` reads, where the agent's
        skrl class did not (an agent on skrl's bare ``Agent``): the AMP scaler, the autocast device type,
        identity preprocessors. skrl's own agents (``SAC``, ``TD3``, ``DQN`` ...) keep theirs."""
        if not hasattr(self, "_device_type"):
            self._device_type = torch.device(self.device).type
        if not hasattr(self, "scaler"):
            self.scaler = torch.amp.GradScaler(device=self._device_type, enabled=bool(getattr(self.cfg, "mixed_precision", False)))
        for name in ("_observation_preprocessor", "_state_preprocessor"):
            if not hasattr(self, name):
                setattr(self, name, self._empty_preprocessor)

    @property
    def observation_preprocessor(self) -> Any:
        """skrl's observation preprocessor (what ``act``, the batches and export apply), by its public name."""
        return self._observation_preprocessor

    @observation_preprocessor.setter
    def observation_preprocessor(self, preprocessor: Any) -> None:
        self._observation_preprocessor = preprocessor

    @property
    def state_preprocessor(self) -> Any:
        """skrl's state preprocessor, by its public name."""
        return self._state_preprocessor

    @state_preprocessor.setter
    def state_preprocessor(self, preprocessor: Any) -> None:
        self._state_preprocessor = preprocessor

    def setting(self, name: str) -> Any:
        """What a stage's ``every`` / ``only_if`` (or ``target_every``) names, read at every gradient step:
        the agent's attribute of that name (a derived agent fixes one: DDPG's ``policy_delay = 1``; an
        instance may change it while training), else its config's field."""
        return getattr(self, name) if hasattr(self, name) else getattr(self.cfg, name)

    # -- one gradient step ------------------------------------------------------------------------

    def update(self, *, timestep: int, timesteps: int) -> None:
        """Upstream's entry point (``post_interaction``): ``cfg.gradient_steps`` gradient steps. rlplug's
        trainers call ``gradient_step`` directly, as often as they owe."""
        for _ in range(getattr(self.cfg, "gradient_steps", 1)):
            self.gradient_step(timestep=timestep, timesteps=timesteps)

    def gradient_step(self, *, timestep: int = 0, timesteps: int = 0) -> dict[str, torch.Tensor]:
        """One batch through the due stages, the scaler, the target update and the schedulers; the terms to log."""
        batch = self.trainer_hooks.process_optim_batch(self.sample_batch())
        steps, target_due = self.update_schedule.advance()
        terms: dict[str, torch.Tensor] = {}
        for stages in steps:
            terms.update(self.run_stage(batch, stages[0].name if len(stages) == 1 else tuple(s.name for s in stages)))
            for stage in stages:
                self.after_stage(stage.name)
        self.scaler.update()  # once, after the optimisers have stepped (upstream)
        if target_due and self.target_updater is not None:  # None: an agent without target networks (BC)
            self.target_updater.step()
        for scheduler in self.schedulers():
            scheduler.step()
        return {name: terms[name] for name in self.logged_terms if name in terms}

    def sample_batch(self) -> dict[str, torch.Tensor]:
        """One replay batch by name, observations and states preprocessed (statistics updated) as upstream."""
        batch = self.sampled_transitions()
        with torch.autocast(device_type=self._device_type, enabled=self.cfg.mixed_precision):
            batch["observations"] = self._observation_preprocessor(batch["observations"], train=True)
            batch["states"] = self._state_preprocessor(batch["states"], train=True)
            batch["next_observations"] = self._observation_preprocessor(batch["next_observations"], train=True)
            batch["next_states"] = self._state_preprocessor(batch["next_states"], train=True)
        return batch

    def sampled_transitions(self) -> dict[str, torch.Tensor]:
        """The memory's tensors at one batch of sampled rows, by name, as stored (an agent may rewrite them:
        DQN's n-step returns)."""
        names = list(self.sampled_names) if self.sampled_names is not None else self._tensors_names
        sampled = self.memory.sample(names=names, batch_size=self.cfg.batch_size)[0]
        return dict(zip(names, sampled))

    def run_stage(self, batch: dict[str, torch.Tensor], stage: str | tuple[str, ...]) -> dict[str, torch.Tensor]:
        step = self.__dict__.get("stage_step") or self.optimise_stage  # the trainer sets stage_step when compiling
        return step(batch, stage)

    def optimise_stage(self, batch: dict[str, torch.Tensor], stage: str | tuple[str, ...]) -> dict[str, torch.Tensor]:
        """One optimiser step: the stage's (or stages', sharing one optimiser) loss terms, backward, clip,
        step. What ``compile = true`` compiles (``stage_step``)."""
        names = (stage,) if isinstance(stage, str) else stage
        out: dict[str, torch.Tensor] = {}
        with torch.autocast(device_type=self._device_type, enabled=self.cfg.mixed_precision):
            for name in names:
                out.update(self.loss(self, batch, name))
            out = self.trainer_hooks.process_loss(batch, out)
            total = summed(out, [t for name in names for t in self.stage_terms[name]], "+".join(names))
        first = self.stages_by_name[names[0]]
        optimise(self, total, getattr(self, first.optimizer or f"{first.name}_optimizer"), self.grad_norm_clip, first.clip_groups)
        return out

    def after_stage(self, stage: str) -> None:
        """Called after each stage's optimiser step (SAC: the entropy coefficient follows its new log)."""

    def schedulers(self) -> list[Any]:
        """The learning-rate schedulers of the active stages' optimisers (skrl names them alike)."""
        found = []
        for stage in self.update_schedule.stages:
            scheduler = getattr(self, (stage.optimizer or f"{stage.name}_optimizer").replace("optimizer", "scheduler"), None)
            if scheduler and scheduler not in found:
                found.append(scheduler)
        return found

    # -- what rlplug's trainers read --------------------------------------------------------------

    def extra_metrics(self) -> dict[str, float]:
        """Scalars logged with the loss terms each iteration (none by default)."""
        return {}

    def extra_state(self) -> dict[str, Any]:
        """What skrl's ``checkpoint_modules`` miss: the target updater, the stage count, the schedulers and
        the ``checkpointed`` attributes."""
        return {
            "target_updater": self.target_updater.state_dict() if self.target_updater is not None else None,
            "update_schedule": self.update_schedule.state_dict(),
            "schedulers": [scheduler.state_dict() for scheduler in self.schedulers()],
            "attributes": attribute_states(self, self.checkpointed),
        }

    def load_extra_state(self, state: dict[str, Any]) -> None:
        if self.target_updater is not None:
            self.target_updater.load_state_dict(state["target_updater"])
        self.update_schedule.load_state_dict(state["update_schedule"])
        for scheduler, saved in zip(self.schedulers(), state["schedulers"], strict=True):
            scheduler.load_state_dict(saved)
        load_attribute_states(self, state["attributes"])


def agent_arguments(build: Build) -> dict[str, Any]:
    """The keyword arguments every staged-loss agent takes from the build (its config aside)."""
    return {
        "models": build.models,
        "memory": build.memory,
        "observation_space": build.observation_space,
        "action_space": build.action_space,
        "device": build.device,
        "loss": build.loss,
        "terms": build.loss_entry.terms,
        "reported": build.loss_entry.reported,
        "optimisers": build.loss_entry.optimisers,
        "target_updater": build.target_updater,
    }


# ---- what the trainers share ------------------------------------------------------------------------


class StagedAgentTrainer(SkrlPolicyActing):
    """What skrl's off-policy and offline trainers share: the agent made from ``agent_class`` and
    ``agent_config(build)`` (plus ``agent_kwargs(build)``) with the recipe's Adam implementation, and
    ``compile = true`` applied to each optimiser step it runs."""

    agent_class: type | None = None

    def agent_config(self, build: Build) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} names no agent_config")

    def agent_kwargs(self, build: Build) -> dict[str, Any]:
        """Keyword arguments of ``agent_class`` beyond the build's (or in place of them) and the config (none by default)."""
        return {}

    def make_agent(self, build: Build) -> Agent:
        if self.agent_class is None:
            raise NotImplementedError(f"{type(self).__name__} names no agent_class")
        arguments = {**agent_arguments(build), **self.agent_kwargs(build)}  # agent_kwargs may replace the build's spaces
        agent = self.agent_class(**arguments, cfg=self.agent_config(build))
        use_adam_impl(agent, build.settings["optimizer_impl"])  # skrl built its Adams in the constructor
        return agent

    def compile_stages(self) -> None:
        """``compile = true``: each optimiser step (loss, backward, step) the agent runs, through ``torch.compile``."""
        if self.build.settings.get("compile") and hasattr(self.agent, "optimise_stage"):
            self.agent.stage_step = self.compiled(self.agent.optimise_stage)
