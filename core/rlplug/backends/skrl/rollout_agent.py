"""``OnPolicyAgent``: skrl's on-policy update with each minibatch's loss asked of the registered loss.

Mixed into skrl's agent class; GAE, epochs of minibatches, KL early stop and the scheduler are upstream's.
``rollout_config`` and ``rollout_agent_arguments`` are what such an agent is made with.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from skrl.agents.torch import Agent
from skrl.agents.torch.ppo.ppo import compute_gae
from skrl.memories.torch import Memory
from skrl.models.torch import Model
from skrl.resources.schedulers.torch import KLAdaptiveLR

from ...contract.hookspecs import Build
from ...hooks import UNHOOKED
from ...hooks.views import write_back
from ..common.encoders import standardised_observations
from ..common.parallel import mean_over_ranks
from .settings import preprocessor, resolve_class
from .staged import agent_arguments, optimise


@dataclasses.dataclass
class RolloutLearner:
    """What one on-policy update reads of a skrl agent, or of one agent of a multi-agent one.

    The models, memory, optimiser, scheduler, preprocessors and config values upstream's ``update()``
    reads, for a single-agent agent or indexed by ``uid`` for a multi-agent one. ``sequence_length`` is a
    recurrent agent's (``PPO_RNN``'s ``_rnn_sequence_length``): above 1, minibatches hold whole sequences.
    """

    policy: Model
    value: Model
    memory: Memory
    optimizer: torch.optim.Optimizer
    scheduler: Any
    observation_preprocessor: Callable[..., torch.Tensor]
    state_preprocessor: Callable[..., torch.Tensor]
    value_preprocessor: Callable[..., torch.Tensor]
    learning_epochs: int
    mini_batches: int
    kl_threshold: float
    grad_norm_clip: float
    discount_factor: float
    gae_lambda: float
    time_limit_bootstrap: bool
    sequence_length: int = 1
    standardise_advantages: bool = True
    subtract_baseline: bool = True


def rollout_learner(agent: Any, uid: str | None = None) -> RolloutLearner:
    """The ``RolloutLearner`` of a single-agent skrl agent, or (``uid``) of one agent of a multi-agent one.

    A config without ``learning_epochs`` / ``kl_threshold`` (skrl's A2C) makes one pass, unstopped.
    """
    if uid is None:
        own: Callable[[Any], Any] = lambda value: value  # noqa: E731
        models = (agent.policy, agent.value, agent.memory, agent.optimizer, agent.scheduler)
    else:
        own = lambda value: value[uid]  # noqa: E731
        models = (agent.policies[uid], agent.values[uid], agent.memories[uid], agent.optimizers[uid], agent.schedulers[uid])
    cfg = agent.cfg
    return RolloutLearner(
        *models,
        own(agent._observation_preprocessor),
        own(agent._state_preprocessor),
        own(agent._value_preprocessor),
        own(cfg.learning_epochs) if hasattr(cfg, "learning_epochs") else 1,
        own(cfg.mini_batches),
        own(cfg.kl_threshold) if hasattr(cfg, "kl_threshold") else 0.0,
        own(cfg.grad_norm_clip),
        own(cfg.discount_factor),
        own(cfg.gae_lambda),
        own(cfg.time_limit_bootstrap),
        getattr(agent, "_rnn_sequence_length", 1) if getattr(agent, "_rnn", False) else 1,
        getattr(agent, "normalize_advantage", True),
        getattr(agent, "advantage_baseline", True),
    )


def compute_returns_and_advantages(
    agent: Agent, learner: RolloutLearner, next_observations: Any, next_states: Any, value_inputs: Mapping[str, Any] | None = None
) -> None:
    """Upstream: GAE from the rollout and the value of the last next observation; values preprocessed. An agent whose
    ``normalize_advantage`` is false keeps the advantages unstandardised; one whose ``advantage_baseline`` is false
    takes the returns themselves as advantages (REINFORCE without a baseline).
    ``value_inputs``: more inputs of the value model (a recurrent value's carried states, ``"rnn"``)."""
    value, memory = learner.value, learner.memory
    with torch.no_grad(), torch.autocast(device_type=agent._device_type, enabled=mixed_precision(agent)):
        inputs = {
            "observations": learner.observation_preprocessor(next_observations),
            "states": learner.state_preprocessor(next_states),
            **(value_inputs or {}),
        }
        value.enable_training_mode(False)
        last_values, _ = value.act(inputs, role="value")
        value.enable_training_mode(True)
        last_values = learner.value_preprocessor(last_values, inverse=True)

    values = memory.get_tensor_by_name("values")
    returns, advantages = compute_gae(
        rewards=memory.get_tensor_by_name("rewards"),
        terminated=memory.get_tensor_by_name("terminated"),
        truncated=memory.get_tensor_by_name("truncated"),
        values=values,
        last_values=last_values,
        discount_factor=learner.discount_factor,
        lambda_coefficient=learner.gae_lambda,
        time_limit_bootstrap=learner.time_limit_bootstrap,
    )
    if not (learner.standardise_advantages and learner.subtract_baseline):  # else compute_gae's, bit for bit
        # SB3's A2C with normalize_advantage=False keeps them as they are; REINFORCE without a baseline weighs each
        # log-probability by the return itself
        advantages = returns - values if learner.subtract_baseline else returns.clone()
        if learner.standardise_advantages:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    memory.set_tensor_by_name("values", learner.value_preprocessor(values, train=True))
    memory.set_tensor_by_name("returns", learner.value_preprocessor(returns, train=True))
    memory.set_tensor_by_name("advantages", advantages)


def mixed_precision(agent: Agent) -> bool:
    """The agent config's ``mixed_precision`` (skrl's TRPO config has none: full precision)."""
    return bool(getattr(agent.cfg, "mixed_precision", False))


def optimisation_step(agent: Agent, learner: RolloutLearner, loss: torch.Tensor) -> None:
    """Upstream's optimiser step: backward, gradient reduction, gradient-norm clip, Adam step, scaler update.

    The distributed reduction is one all-reduce over everything the optimiser steps (upstream's
    ``reduce_parameters`` runs one per model: twice the collectives for the same mean gradient).
    """
    optimise(agent, loss, learner.optimizer, learner.grad_norm_clip)  # skrl's one group: policy (and value) parameters
    agent.scaler.update()


def step_scheduler(agent: Agent, learner: RolloutLearner, kl_divergences: list[torch.Tensor]) -> None:
    """Upstream: once per epoch; ``KLAdaptiveLR`` gets the epoch's mean approximate KL."""
    scheduler = learner.scheduler
    if not scheduler:
        return
    if isinstance(scheduler, KLAdaptiveLR):
        kl = torch.tensor(kl_divergences, device=agent.device).mean()
        scheduler.step(mean_over_ranks(kl).item())  # distributed: the same KL on every rank
    else:
        scheduler.step()


def sequence_minibatches(memory: Memory, names: Sequence[str], mini_batches: int, length: int) -> list[list[torch.Tensor | None]]:
    """A rollout's minibatches of whole sequences, for a recurrent update.

    Each env's rollout is cut into consecutive sequences of ``length`` steps (``rollouts`` a multiple of it:
    the recurrent rules in ``rlplug.families``), the sequences shuffled (skrl's ``PPO`` shuffles transitions
    each epoch; ``PPO_RNN`` takes them in a fixed order) and dealt into ``mini_batches`` minibatches (sizes
    differ by at most one sequence). A minibatch's rows are its sequences one after another, each in time
    order: what a recurrent model's training mode reads (``rlplug.backends.skrl.recurrent``).
    """
    steps, envs = memory.memory_size, memory.num_envs
    starts = torch.arange(0, steps, length).view(-1, 1, 1)
    rows = (starts + torch.arange(length).view(1, 1, -1)) * envs + torch.arange(envs).view(1, -1, 1)  # memory row t * envs + e
    sequences = rows.reshape(-1, length)
    sequences = sequences[torch.randperm(len(sequences))]
    return [memory.sample_by_index(names=list(names), indexes=part.reshape(-1))[0] for part in torch.tensor_split(sequences, mini_batches)]


def rollout_epochs(
    agent: Any,
    learner: RolloutLearner,
    loss: Callable[[dict[str, torch.Tensor], int], Mapping[str, torch.Tensor]],
    memories: Sequence[Memory] = (),
    only_terms: Sequence[str] | None = None,
) -> dict[str, float]:
    """Upstream's epochs of minibatches, each minibatch's loss terms asked of ``loss(batch, epoch)``; the means.

    The observation and state preprocessors are trained in epoch 0 only; an epoch stops early once the
    approximate KL passes ``kl_threshold``; the scheduler steps once per epoch. ``memories`` (default:
    the learner's) are sampled alike and each minibatch concatenates theirs (MAPPO's joint update of
    shared models). The agent's ``loss_terms`` are summed and optimised; returns the means of its
    ``logged_terms`` over the optimised minibatches; ``only_terms`` names the ones optimised and logged instead
    (TRPO's value epochs: its loss's value term, the policy having stepped by natural gradient). A recurrent agent's
    minibatches hold its stored model states too (``rnn_policy_<i>``, ``rnn_value_<i>``) and, with a
    ``sequence_length`` above 1, whole sequences (``sequence_minibatches``).
    """
    memories = list(memories) or [learner.memory]
    optimised_terms = agent.loss_terms if only_terms is None else tuple(only_terms)
    logged_terms = agent.logged_terms if only_terms is None else tuple(only_terms)
    names = [*agent.rollout_tensor_names, *getattr(agent, "_rnn_tensors_names", ())]
    hooks = agent.trainer_hooks
    sums: dict[str, float] = defaultdict(float)
    optimised = 0
    for epoch in range(learner.learning_epochs):
        write_back(learner.memory.tensors, hooks.pre_epoch(learner.memory.tensors))
        kl_divergences = []
        if learner.sequence_length > 1:
            samplers = [sequence_minibatches(memory, names, learner.mini_batches, learner.sequence_length) for memory in memories]
        else:
            samplers = [
                memory.sample(names=names, batch_size=len(learner.memory), mini_batches=learner.mini_batches) for memory in memories
            ]
        for per_memory in zip(*samplers):
            sampled = per_memory[0] if len(per_memory) == 1 else [torch.cat(parts) for parts in zip(*per_memory)]
            batch = dict(zip(names, sampled))
            with torch.autocast(device_type=agent._device_type, enabled=mixed_precision(agent)):
                batch["observations"] = learner.observation_preprocessor(batch["observations"], train=not epoch)
                batch["states"] = learner.state_preprocessor(batch["states"], train=not epoch)
                batch = hooks.process_optim_batch(batch)
                terms = hooks.process_loss(batch, loss(batch, epoch))
                kl_divergence = terms.get("approx_kl")
                if kl_divergence is not None:
                    kl_divergences.append(kl_divergence.detach())
                # distributed: ranks stop on their mean KL, all together (upstream compares each rank's own)
                if learner.kl_threshold and mean_over_ranks(kl_divergence) > learner.kl_threshold:
                    break
                total = sum(terms[name] for name in optimised_terms)

            optimisation_step(agent, learner, total)
            hooks.post_optim()
            for name in logged_terms:
                sums[name] += terms[name].item()
            optimised += 1

        step_scheduler(agent, learner, kl_divergences)
        hooks.post_epoch(learner.memory.tensors)
    return {name: sums[name] / max(optimised, 1) for name in logged_terms}


class OnPolicyAgent:
    """Mixin for skrl's on-policy agents whose ``update()`` delegates each minibatch's loss to the registered loss.

    Mixed in before skrl's agent class: ``class LossDelegatingPPO(OnPolicyAgent, PPO)``, ``A2C`` alike,
    ``MAPPO`` with its own ``update`` over ``rollout_epochs``.
    ``update()`` is upstream's single-agent update (GAE, value preprocessing, epochs and minibatches,
    KL early stopping, gradient clipping, the per-epoch scheduler step) with each minibatch's loss
    terms asked of the registered loss, called as ``loss(agent, batch, epoch)``. ``terms`` are summed
    and optimised; ``terms`` and ``reported`` are tracked as ``"Loss / <term>"``, averaged over the
    optimised minibatches.
    """

    trainer_hooks = UNHOOKED
    """The hook points of the rlplug trainer driving this agent (``rlplug.hooks``); it sets them."""

    def __init__(self, *, loss: Any, terms: Sequence[str], reported: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # what the update reads and skrl's PPO, A2C and MAPPO make, but not its TRPO: the autocast device, the scaler
        if not hasattr(self, "_device_type"):
            self._device_type = torch.device(self.device).type
        if not hasattr(self, "scaler"):
            self.scaler = torch.amp.GradScaler(device=self._device_type, enabled=mixed_precision(self))
        self.loss = loss
        self.loss_terms = tuple(terms)
        self.logged_terms = tuple(terms) + tuple(t for t in reported if t not in terms)
        uids = getattr(self, "possible_agents", None) or [None]
        needs_kl = any(l.kl_threshold or isinstance(l.scheduler, KLAdaptiveLR) for l in (rollout_learner(self, uid) for uid in uids))
        if needs_kl and "approx_kl" not in self.logged_terms:
            raise ValueError("KL early stopping and KLAdaptiveLR need a loss that reports an 'approx_kl' term")

    @property
    def rollout_tensor_names(self) -> list[str]:
        """The memory's tensors an update's minibatches hold: skrl's ``_tensors_names`` (PPO, A2C, MAPPO); an agent whose
        skrl class keeps other lists (TRPO) names them by overriding this."""
        return self._tensors_names

    def rollout_end(self) -> tuple[Any, Any]:
        """The rollout's last next observations and states, which GAE bootstraps from (skrl keeps them privately)."""
        return self._current_next_observations, self._current_next_states

    def last_value_inputs(self) -> dict[str, Any]:
        """More inputs of the value model for the rollout's last next observation (a recurrent value's states)."""
        return {}

    def update(self, *, timestep: int, timesteps: int) -> None:
        own = rollout_learner(self)
        compute_returns_and_advantages(self, own, *self.rollout_end(), self.last_value_inputs())
        means = rollout_epochs(self, own, lambda batch, epoch: self.loss(self, batch, epoch))
        for name, value in means.items():
            self.track_data(f"Loss / {name}", value)
        self.track_data("Policy / Standard deviation", self.policy.distribution(role="policy").stddev.mean().item())
        self.track_data("Learning / Learning rate", self.optimizer.param_groups[0]["lr"])


def rollout_agent_arguments(build: Build) -> dict[str, Any]:
    """The keyword arguments every single-agent ``OnPolicyAgent`` takes from the build (its config aside): a staged
    agent's, less the update stages' optimiser map and the target updater an on-policy agent has not."""
    arguments = agent_arguments(build)
    del arguments["optimisers"], arguments["target_updater"]
    return arguments


def rollout_config(build: Build, cfg_class: type, **overrides: Any) -> Any:
    """An skrl agent config (``PPO_CFG``, ``A2C_CFG``, ``MAPPO_CFG``) filled from the settings named like its fields.

    Scheduler and preprocessor names are resolved through the explicit tables, then ``overrides``
    apply. skrl's own writers stay off: rlplug's run layer writes metrics and checkpoints.
    """
    s = build.settings
    fields = {f.name for f in dataclasses.fields(cfg_class)}
    kwargs = {name: s[name] for name in fields if name in s}
    if "learning_rate_scheduler" in kwargs:
        kwargs["learning_rate_scheduler"] = resolve_class("scheduler", s["learning_rate_scheduler"])
        kwargs["learning_rate_scheduler_kwargs"] = dict(s["learning_rate_scheduler_kwargs"])
    if not standardised_observations(build):  # an image or Dict encoder scales its own input
        kwargs.pop("observation_preprocessor", None)
    for name, size in (("observation", build.observation_space), ("value", 1)):
        if f"{name}_preprocessor" in kwargs:
            kwargs[f"{name}_preprocessor"], kwargs[f"{name}_preprocessor_kwargs"] = preprocessor(s[f"{name}_preprocessor"], size, build.device)
    kwargs["experiment"] = {"write_interval": 0, "checkpoint_interval": 0}
    return cfg_class(**{**kwargs, **overrides})
