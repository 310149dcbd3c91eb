"""skrl building blocks every on-policy cell shares: rollout models and memory, the update that
delegates the loss, the clipped PPO loss, and the trainer that collects one rollout per iteration.

A cell's backend module (``rlplug_ppo.skrl_backend``, ``rlplug_mappo.skrl_backend``, the A2C example)
mixes ``OnPolicyAgent`` into skrl's own agent class (``class LossDelegatingPPO(OnPolicyAgent, PPO)``),
whose ``update()`` is then upstream's with the minibatch loss asked of the registered loss object, and
subclasses ``SkrlRolloutTrainer`` with a ``make_agent`` method. Everything here is imported only when a
skrl on-policy cell is built.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from skrl.agents.torch import Agent
from skrl.agents.torch.ppo.ppo import compute_gae
from skrl.memories.torch import Memory, RandomMemory
from skrl.models.torch import Model
from skrl.resources.schedulers.torch import KLAdaptiveLR

from ...contract.hookspecs import Build
from ...util.rng import capture_rng_state, restore_rng_state
from ...contract.trainer import TrainerBase
from ..common.parallel import mean_over_ranks
from ..common.seeding import configure_threads
from .env import env_state, load_env_state, make_vector_env, seed_skrl, true_next_observations
from .export import SkrlPolicyActing
from ..common.encoders import observation_encoder, standardised_observations
from .memory import observation_memory
from .models import stochastic_policy, value_model
from .staged import optimise
from .settings import preprocessor, resolve_class

# ---- models and memory --------------------------------------------------------------------------


def actor_critic_models(build: Build) -> dict[str, Model]:
    """Separate policy (Categorical or Gaussian) and value MLPs, initialised from ``build.seed``.

    Reads the on-policy family's network settings: ``hidden_sizes``, ``activation``, ``initial_log_std``;
    each network reads its observations through its own copy of the cell's encoder.
    """
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    return {
        "policy": stochastic_policy(*args, initial_log_std=s["initial_log_std"], encoder=observation_encoder(build)),
        "value": value_model(*args, encoder=observation_encoder(build)),
    }


def rollout_memory(build: Build) -> RandomMemory:
    """One rollout: skrl's on-policy agents need ``memory_size == rollouts`` (unfilled float rows are NaN);
    uint8 images are stored as uint8."""
    return observation_memory(build, build.settings["rollouts"], build.num_envs)


# ---- the PPO family's loss -----------------------------------------------------------------------


def clipped_ppo_terms(
    policy: Model,
    value: Model,
    batch: Mapping[str, torch.Tensor],
    ratio_clip: float,
    value_clip: float,
    entropy_loss_scale: float,
    value_loss_scale: float,
) -> dict[str, torch.Tensor]:
    """skrl's PPO / MAPPO minibatch loss, once for both: clipped surrogate, (optionally clipped) scaled
    MSE value loss, entropy bonus, and the approximate KL.

    ``batch`` holds preprocessed ``observations`` and ``states`` and the rollout's ``actions``,
    ``log_prob``, ``advantages``, ``values`` and ``returns``. Upstream's order of operations, so a
    Gaussian policy's ``rsample`` draws the same random numbers as skrl's own update.
    """
    inputs = {"observations": batch["observations"], "states": batch["states"]}
    _, outputs = policy.act({**inputs, "taken_actions": batch["actions"]}, role="policy")
    log_ratio = outputs["log_prob"] - batch["log_prob"]
    with torch.no_grad():
        approx_kl = ((torch.exp(log_ratio) - 1) - log_ratio).mean()

    if entropy_loss_scale:
        loss_entropy = -entropy_loss_scale * policy.get_entropy(role="policy").mean()
    else:
        loss_entropy = torch.zeros((), device=log_ratio.device)

    ratio = torch.exp(log_ratio)
    surrogate = batch["advantages"] * ratio
    surrogate_clipped = batch["advantages"] * torch.clip(ratio, 1.0 - ratio_clip, 1.0 + ratio_clip)
    loss_policy = -torch.min(surrogate, surrogate_clipped).mean()

    predicted_values, _ = value.act(inputs, role="value")
    if value_clip > 0:
        predicted_values = batch["values"] + torch.clip(predicted_values - batch["values"], min=-value_clip, max=value_clip)
    loss_value = value_loss_scale * torch.nn.functional.mse_loss(batch["returns"], predicted_values)
    return {"loss_policy": loss_policy, "loss_value": loss_value, "loss_entropy": loss_entropy, "approx_kl": approx_kl}


# ---- the agent ----------------------------------------------------------------------------------


@dataclasses.dataclass
class RolloutLearner:
    """What one on-policy update reads of a skrl agent, or of one agent of a multi-agent one.

    The models, memory, optimiser, scheduler, preprocessors and config values upstream's ``update()``
    reads, for a single-agent agent or indexed by ``uid`` for a multi-agent one.
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
    )


def compute_returns_and_advantages(agent: Agent, learner: RolloutLearner, next_observations: Any, next_states: Any) -> None:
    """Upstream: GAE from the rollout and the value of the last next observation; values preprocessed."""
    value, memory = learner.value, learner.memory
    with torch.no_grad(), torch.autocast(device_type=agent._device_type, enabled=agent.cfg.mixed_precision):
        inputs = {
            "observations": learner.observation_preprocessor(next_observations),
            "states": learner.state_preprocessor(next_states),
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
    memory.set_tensor_by_name("values", learner.value_preprocessor(values, train=True))
    memory.set_tensor_by_name("returns", learner.value_preprocessor(returns, train=True))
    memory.set_tensor_by_name("advantages", advantages)


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


def rollout_epochs(
    agent: Any,
    learner: RolloutLearner,
    loss: Callable[[dict[str, torch.Tensor], int], Mapping[str, torch.Tensor]],
    memories: Sequence[Memory] = (),
) -> dict[str, float]:
    """Upstream's epochs of minibatches, each minibatch's loss terms asked of ``loss(batch, epoch)``; the means.

    The observation and state preprocessors are trained in epoch 0 only; an epoch stops early once the
    approximate KL passes ``kl_threshold``; the scheduler steps once per epoch. ``memories`` (default:
    the learner's) are sampled alike and each minibatch concatenates theirs (MAPPO's joint update of
    shared models). The agent's ``loss_terms`` are summed and optimised; returns the means of its
    ``logged_terms`` over the optimised minibatches.
    """
    memories = list(memories) or [learner.memory]
    names = agent._tensors_names
    sums: dict[str, float] = defaultdict(float)
    optimised = 0
    for epoch in range(learner.learning_epochs):
        kl_divergences = []
        samplers = [
            memory.sample(names=names, batch_size=len(learner.memory), mini_batches=learner.mini_batches) for memory in memories
        ]
        for per_memory in zip(*samplers):
            sampled = per_memory[0] if len(per_memory) == 1 else [torch.cat(parts) for parts in zip(*per_memory)]
            batch = dict(zip(names, sampled))
            with torch.autocast(device_type=agent._device_type, enabled=agent.cfg.mixed_precision):
                batch["observations"] = learner.observation_preprocessor(batch["observations"], train=not epoch)
                batch["states"] = learner.state_preprocessor(batch["states"], train=not epoch)
                terms = loss(batch, epoch)
                kl_divergence = terms.get("approx_kl")
                if kl_divergence is not None:
                    kl_divergences.append(kl_divergence.detach())
                # distributed: ranks stop on their mean KL, all together (upstream compares each rank's own)
                if learner.kl_threshold and mean_over_ranks(kl_divergence) > learner.kl_threshold:
                    break
                total = sum(terms[name] for name in agent.loss_terms)

            optimisation_step(agent, learner, total)
            for name in agent.logged_terms:
                sums[name] += terms[name].item()
            optimised += 1

        step_scheduler(agent, learner, kl_divergences)
    return {name: sums[name] / max(optimised, 1) for name in agent.logged_terms}


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

    def __init__(self, *, loss: Any, terms: Sequence[str], reported: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.loss = loss
        self.loss_terms = tuple(terms)
        self.logged_terms = tuple(terms) + tuple(t for t in reported if t not in terms)
        uids = getattr(self, "possible_agents", None) or [None]
        needs_kl = any(l.kl_threshold or isinstance(l.scheduler, KLAdaptiveLR) for l in (rollout_learner(self, uid) for uid in uids))
        if needs_kl and "approx_kl" not in self.logged_terms:
            raise ValueError("KL early stopping and KLAdaptiveLR need a loss that reports an 'approx_kl' term")

    def update(self, *, timestep: int, timesteps: int) -> None:
        own = rollout_learner(self)
        compute_returns_and_advantages(self, own, self._current_next_observations, self._current_next_states)
        means = rollout_epochs(self, own, lambda batch, epoch: self.loss(self, batch, epoch))
        for name, value in means.items():
            self.track_data(f"Loss / {name}", value)
        self.track_data("Policy / Standard deviation", self.policy.distribution(role="policy").stddev.mean().item())
        self.track_data("Learning / Learning rate", self.optimizer.param_groups[0]["lr"])


def rollout_agent_arguments(build: Build) -> dict[str, Any]:
    """The keyword arguments every single-agent ``OnPolicyAgent`` takes from the build (its config aside)."""
    return {
        "models": build.models,
        "memory": build.memory,
        "observation_space": build.observation_space,
        "action_space": build.action_space,
        "device": build.device,
        "loss": build.loss,
        "terms": build.loss_entry.terms,
        "reported": build.loss_entry.reported,
    }


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


# ---- the trainer --------------------------------------------------------------------------------


def _module_states(modules: Mapping[str, Any]) -> dict[str, Any]:
    """``checkpoint_modules``' state dicts: ``{name: state}``, or ``{uid: {name: state}}`` (multi-agent)."""
    return {name: _module_states(m) if isinstance(m, Mapping) else m.state_dict() for name, m in modules.items()}


def _load_module_states(modules: Mapping[str, Any], states: Mapping[str, Any]) -> None:
    for name, module in modules.items():
        if isinstance(module, Mapping):
            _load_module_states(module, states[name])
        else:
            module.load_state_dict(states[name])


def _on_device(value: Any, device: str) -> Any:
    if isinstance(value, Mapping):
        return {key: _on_device(v, device) for key, v in value.items()}
    return value.to(device) if isinstance(value, torch.Tensor) else value


class SkrlRolloutTrainer(SkrlPolicyActing, TrainerBase):
    """Trainer of a skrl on-policy agent: one ``step()`` = one rollout of ``rollouts`` vector steps and the update.

    It owns skrl's SequentialTrainer loop; the agent updates at the rollout's end, in ``post_interaction``.

    Subclasses name ``agent_class`` (an ``OnPolicyAgent`` over skrl's agent) and ``config_class`` (its
    ``*_CFG``, filled by ``rollout_config``), or override ``agent_config(build)`` / ``make_agent(build)``.
    The defaults are single-agent (a Gymnasium vector env, its time-limit truncations, the returns of its
    episodes, the agent's ``policy``'s mean or argmax); the multi-agent base
    (``SkrlMultiAgentRolloutTrainer``) overrides them.
    """

    agent_class: type | None = None
    config_class: type | None = None

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        configure_threads()
        seed_skrl(build.seed)
        self.env = self.make_env(build)
        self.agent = self.make_agent(build)
        self.agent.init()
        self.agent.enable_training_mode(True)
        self.rollouts = build.settings["rollouts"]
        self.steps_per_iteration = self.rollouts * build.num_envs
        # skrl without time-limit bootstrapping cuts GAE only at `terminated`: a truncated step would
        # bootstrap from the next stored observation, under SAME_STEP autoreset the next episode's first
        # state (Pendulum, where every episode is truncated, then never learns). rlplug's meaning of
        # bootstrap_truncated=false, as on its TorchRL backend: a time-limit cut ends the return.
        self.bootstrap_truncated = build.settings.get("time_limit_bootstrap", False)
        self.total_timesteps = max(1, build.recipe.steps // build.num_envs)
        self._observations, _ = self.env.reset()
        # gymnasium envs have no global state: skip the per-step (exception-raising) env.state() call
        self._states = self.env.state()
        self._has_states = self._states is not None

    def make_env(self, build: Build) -> Any:
        return make_vector_env(build.env_spec, None, build.num_envs, build.seed, build.device)

    def agent_config(self, build: Build) -> Any:
        return rollout_config(build, self.config_class)

    def make_agent(self, build: Build) -> Agent:
        if self.agent_class is None or self.config_class is None:
            raise NotImplementedError(f"{type(self).__name__} names no agent_class and config_class (or overrides make_agent)")
        return self.agent_class(cfg=self.agent_config(build), **rollout_agent_arguments(build))

    # -- one iteration ----------------------------------------------------------------------------

    def step(self) -> dict[str, float]:
        agent, env = self.agent, self.env
        observations, states = self._observations, self._states
        timestep = self.env_steps // self.build.num_envs
        for _ in range(self.rollouts):
            with torch.no_grad():
                actions, _ = agent.act(observations, states, timestep=timestep, timesteps=self.total_timesteps)
                next_observations, rewards, terminated, truncated, infos = env.step(actions)
                next_states = env.state() if self._has_states else None
                self.track_episodes(rewards, terminated, truncated)
                stored_next_observations, stored_terminated = self.stored_outcome(next_observations, terminated, truncated, infos)
                agent.record_transition(
                    observations=observations,
                    states=states,
                    actions=actions,
                    rewards=rewards,
                    next_observations=stored_next_observations,
                    next_states=next_states,
                    terminated=stored_terminated,
                    truncated=truncated,
                    infos=infos,
                    timestep=timestep,
                    timesteps=self.total_timesteps,
                )
            agent.post_interaction(timestep=timestep, timesteps=self.total_timesteps)
            observations, states = next_observations, next_states
            timestep += 1
        self._observations, self._states = observations, states
        self.env_steps += self.steps_per_iteration
        self.iterations += 1
        return self._metrics()

    def track_episodes(self, rewards: Any, terminated: Any, truncated: Any) -> None:
        self.episodes.update(rewards.cpu().numpy(), (terminated | truncated).cpu().numpy())

    def stored_outcome(self, next_observations: Any, terminated: Any, truncated: Any, infos: Any) -> tuple[Any, Any]:
        """``(next observations, terminated)`` as the agent stores them: without bootstrapping a
        time-limit cut ends the return like a termination; with it, skrl bootstraps V(next
        observation), which must be the state the episode was cut in (not the next one's first)."""
        if not self.bootstrap_truncated:
            return next_observations, terminated | truncated
        if truncated.any():
            return true_next_observations(next_observations, infos), terminated
        return next_observations, terminated

    def _metrics(self) -> dict[str, float]:
        """The update's tracked values, then clear them (skrl only clears when it writes, §14.9)."""
        tracked = self.agent.tracking_data
        metrics = self.update_metrics(tracked)
        metrics["train/update_ms"] = tracked["Stats / Algorithm update time (ms)"][-1]
        episode_return = self.episodes.pop_mean()
        if episode_return is not None:
            metrics["train/episode_return"] = episode_return
        tracked.clear()
        return metrics

    def update_metrics(self, tracked: Mapping[str, list[float]]) -> dict[str, float]:
        metrics = {f"loss/{name}": tracked[f"Loss / {name}"][-1] for name in self.agent.logged_terms}
        metrics["train/lr"] = self.agent.optimizer.param_groups[0]["lr"]
        policy_std = tracked["Policy / Standard deviation"][-1]
        if np.isfinite(policy_std):
            metrics["train/policy_std"] = policy_std
        return metrics

    # -- checkpoints ------------------------------------------------------------------------------

    def snapshot_env(self) -> Any:
        """Mid-episode sub-envs: a resumed run steps on where this one was."""
        return env_state(self.env)

    def restore_env(self, state: Any) -> Any:
        """``None``, or the observations of new episodes when the env could not be resumed mid-episode."""
        return load_env_state(self.env, state)

    def state_dict(self) -> dict[str, Any]:
        agent = self.agent
        state = {"modules": _module_states(agent.checkpoint_modules)}
        if hasattr(agent, "scheduler"):  # single-agent skrl agents; skrl's checkpoint_modules miss it
            state["scheduler"] = agent.scheduler.state_dict() if agent.scheduler else None
        state.update(rollout=agent._rollout, env=self.snapshot_env(), observations=self._observations)
        if self._has_states:
            state["states"] = self._states
        return {**state, "counters": self.counters(), "rng": capture_rng_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        agent = self.agent
        _load_module_states(agent.checkpoint_modules, state["modules"])
        if getattr(agent, "scheduler", None):
            agent.scheduler.load_state_dict(state["scheduler"])
        agent._rollout = int(state["rollout"])
        restarted = self.restore_env(state["env"])
        self._observations = _on_device(state["observations"] if restarted is None else restarted, self.build.device)
        if self._has_states:
            self._states = _on_device(state["states"], self.build.device)
        self.load_counters(state["counters"])
        restore_rng_state(state["rng"])

    def close(self) -> None:
        self.env.close()
