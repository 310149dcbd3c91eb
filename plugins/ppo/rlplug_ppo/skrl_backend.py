"""PPO on skrl: models, rollout memory, the clipped loss, the agent that delegates to it, the trainer.

Reads top to bottom like a single-file PPO on skrl 2.1. The agent is skrl's own ``PPO`` with one
change: ``update()`` hands each minibatch to the registered loss object (``build.loss``) instead of
computing the loss inline, so a recipe can swap the loss without touching the loop. The default
loss, ``ClipLoss``, is skrl's math line for line.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import numpy as np
import torch
from rlplug.backends.skrl import (
    clipped_ppo_terms,
    env_state,
    load_env_state,
    make_vector_env,
    policy_mean_or_argmax,
    preprocessor,
    resolve_class,
    seed_everything,
    stochastic_policy,
    true_next_observations,
    value_model,
)
from rlplug.backends.parallel import mean_over_ranks, sync_gradients
from rlplug.rng import capture_rng_state, restore_rng_state
from rlplug.hookspecs import Build
from rlplug.trainer import TrainerBase
from skrl.agents.torch.ppo import PPO, PPO_CFG
from skrl.agents.torch.ppo.ppo import compute_gae
from skrl.memories.torch import RandomMemory
from skrl.resources.schedulers.torch import KLAdaptiveLR
from torch import nn

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """Separate policy (Categorical or Gaussian) and value MLPs, initialised from ``build.seed``."""
    seed_everything(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    return {"policy": stochastic_policy(*args, initial_log_std=s["initial_log_std"]), "value": value_model(*args)}


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> RandomMemory:
    """One rollout: skrl's PPO needs ``memory_size == rollouts`` (unfilled rows are NaN)."""
    return RandomMemory(memory_size=build.settings["rollouts"], num_envs=build.num_envs, device=build.device)


# ---- loss ---------------------------------------------------------------------------------------


class ClipLoss:
    """skrl's PPO loss: clipped surrogate, (optionally clipped) scaled MSE value loss, entropy bonus.

    Called as ``loss(agent, batch, epoch)`` on one minibatch whose observations and states are
    already preprocessed; returns ``loss_policy``, ``loss_value`` and ``loss_entropy`` (summed and
    optimised) and ``approx_kl`` (reported; drives KL early stopping and ``KLAdaptiveLR``). The order
    of operations is upstream's, so the Gaussian policy's ``rsample`` draws the same random numbers.
    """

    def __init__(self, ratio_clip: float, value_clip: float, entropy_loss_scale: float, value_loss_scale: float) -> None:
        self.ratio_clip = ratio_clip
        self.value_clip = value_clip
        self.entropy_loss_scale = entropy_loss_scale
        self.value_loss_scale = value_loss_scale

    def __call__(self, agent: PPO, batch: dict[str, torch.Tensor], epoch: int) -> dict[str, torch.Tensor]:
        return clipped_ppo_terms(
            agent.policy, agent.value, batch, self.ratio_clip, self.value_clip, self.entropy_loss_scale, self.value_loss_scale
        )


def make_clip_loss(build: Build) -> ClipLoss:
    """The registered default loss ("clip") for ppo/skrl."""
    s = build.settings
    return ClipLoss(s["ratio_clip"], s["value_clip"], s["entropy_loss_scale"], s["value_loss_scale"])


# ---- agent --------------------------------------------------------------------------------------


class LossDelegatingPPO(PPO):
    """skrl's PPO whose ``update()`` asks ``loss(agent, batch, epoch)`` for the minibatch loss terms.

    Everything else is upstream's update: GAE, value preprocessing, epochs and minibatches, the
    observation preprocessor trained in epoch 0 only, KL early stopping, gradient clipping, the
    per-epoch scheduler step. ``terms`` are summed and optimised; ``terms`` and ``reported`` are
    tracked as ``"Loss / <term>"``, averaged over the optimised minibatches.
    """

    def __init__(self, *, loss: Any, terms: tuple[str, ...], reported: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.loss = loss
        self.loss_terms = tuple(terms)
        self.logged_terms = tuple(terms) + tuple(t for t in reported if t not in terms)
        if (self.cfg.kl_threshold or isinstance(self.scheduler, KLAdaptiveLR)) and "approx_kl" not in self.logged_terms:
            raise ValueError("KL early stopping and KLAdaptiveLR need a loss that reports an 'approx_kl' term")

    def update(self, *, timestep: int, timesteps: int) -> None:
        self._compute_returns_and_advantages()
        sums: dict[str, float] = defaultdict(float)
        optimised = 0

        for epoch in range(self.cfg.learning_epochs):
            kl_divergences = []
            for sampled in self.memory.sample(
                names=self._tensors_names, batch_size=len(self.memory), mini_batches=self.cfg.mini_batches
            ):
                batch = dict(zip(self._tensors_names, sampled))
                with torch.autocast(device_type=self._device_type, enabled=self.cfg.mixed_precision):
                    batch["observations"] = self._observation_preprocessor(batch["observations"], train=not epoch)
                    batch["states"] = self._state_preprocessor(batch["states"], train=not epoch)
                    terms = self.loss(self, batch, epoch)
                    kl_divergence = terms.get("approx_kl")
                    if kl_divergence is not None:
                        kl_divergences.append(kl_divergence.detach())
                    # distributed: ranks stop on their mean KL, all together (upstream compares each rank's own)
                    if self.cfg.kl_threshold and mean_over_ranks(kl_divergence) > self.cfg.kl_threshold:
                        break
                    loss = sum(terms[name] for name in self.loss_terms)

                self._optimisation_step(loss)
                for name in self.logged_terms:
                    sums[name] += terms[name].item()
                optimised += 1

            self._step_scheduler(kl_divergences)

        for name in self.logged_terms:
            self.track_data(f"Loss / {name}", sums[name] / max(optimised, 1))
        self.track_data("Policy / Standard deviation", self.policy.distribution(role="policy").stddev.mean().item())
        self.track_data("Learning / Learning rate", self.optimizer.param_groups[0]["lr"])

    def _compute_returns_and_advantages(self) -> None:
        """Upstream: GAE from the rollout and the value of the last next observation; values preprocessed."""
        with torch.no_grad(), torch.autocast(device_type=self._device_type, enabled=self.cfg.mixed_precision):
            inputs = {
                "observations": self._observation_preprocessor(self._current_next_observations),
                "states": self._state_preprocessor(self._current_next_states),
            }
            self.value.enable_training_mode(False)
            last_values, _ = self.value.act(inputs, role="value")
            self.value.enable_training_mode(True)
            last_values = self._value_preprocessor(last_values, inverse=True)

        values = self.memory.get_tensor_by_name("values")
        returns, advantages = compute_gae(
            rewards=self.memory.get_tensor_by_name("rewards"),
            terminated=self.memory.get_tensor_by_name("terminated"),
            truncated=self.memory.get_tensor_by_name("truncated"),
            values=values,
            last_values=last_values,
            discount_factor=self.cfg.discount_factor,
            lambda_coefficient=self.cfg.gae_lambda,
            time_limit_bootstrap=self.cfg.time_limit_bootstrap,
        )
        self.memory.set_tensor_by_name("values", self._value_preprocessor(values, train=True))
        self.memory.set_tensor_by_name("returns", self._value_preprocessor(returns, train=True))
        self.memory.set_tensor_by_name("advantages", advantages)

    def _optimisation_step(self, loss: torch.Tensor) -> None:
        """Upstream: backward, distributed gradient reduction, gradient-norm clip, Adam step.

        The reduction is one all-reduce over everything the optimiser steps (upstream's
        ``reduce_parameters`` runs one per model: twice the collectives for the same mean gradient).
        """
        self.optimizer.zero_grad()
        self.scaler.scale(loss).backward()
        sync_gradients(self.optimizer)
        if self.cfg.grad_norm_clip > 0:
            self.scaler.unscale_(self.optimizer)
            if self.policy is self.value:
                nn.utils.clip_grad_norm_(self.policy.parameters(), self.cfg.grad_norm_clip)
            else:
                nn.utils.clip_grad_norm_(
                    itertools.chain(self.policy.parameters(), self.value.parameters()), self.cfg.grad_norm_clip
                )
        self.scaler.step(self.optimizer)
        self.scaler.update()

    def _step_scheduler(self, kl_divergences: list[torch.Tensor]) -> None:
        """Upstream: once per epoch; ``KLAdaptiveLR`` gets the epoch's mean approximate KL."""
        if not self.scheduler:
            return
        if isinstance(self.scheduler, KLAdaptiveLR):
            kl = torch.tensor(kl_divergences, device=self.device).mean()
            self.scheduler.step(mean_over_ranks(kl).item())  # distributed: the same KL on every rank
        else:
            self.scheduler.step()


def ppo_config(build: Build) -> PPO_CFG:
    """``PPO_CFG`` from the translated settings; class names resolved through the explicit tables."""
    s = build.settings
    observation_preprocessor, observation_preprocessor_kwargs = preprocessor(
        s["observation_preprocessor"], build.observation_space, build.device
    )
    value_preprocessor, value_preprocessor_kwargs = preprocessor(s["value_preprocessor"], 1, build.device)
    return PPO_CFG(
        rollouts=s["rollouts"],
        learning_epochs=s["learning_epochs"],
        mini_batches=s["mini_batches"],
        discount_factor=s["discount_factor"],
        gae_lambda=s["gae_lambda"],
        learning_rate=s["learning_rate"],
        learning_rate_scheduler=resolve_class("scheduler", s["learning_rate_scheduler"]),
        learning_rate_scheduler_kwargs=dict(s["learning_rate_scheduler_kwargs"]),
        observation_preprocessor=observation_preprocessor,
        observation_preprocessor_kwargs=observation_preprocessor_kwargs,
        value_preprocessor=value_preprocessor,
        value_preprocessor_kwargs=value_preprocessor_kwargs,
        grad_norm_clip=s["grad_norm_clip"],
        ratio_clip=s["ratio_clip"],
        value_clip=s["value_clip"],
        entropy_loss_scale=s["entropy_loss_scale"],
        value_loss_scale=s["value_loss_scale"],
        kl_threshold=s["kl_threshold"],
        time_limit_bootstrap=s["time_limit_bootstrap"],
        # rlplug's run layer writes metrics and checkpoints; skrl's own writers stay off
        experiment={"write_interval": 0, "checkpoint_interval": 0},
    )


# ---- trainer ------------------------------------------------------------------------------------


class SkrlPPOTrainer(TrainerBase):
    """Owns SequentialTrainer's loop; one ``step()`` = one rollout of ``rollouts`` vector steps + the update."""

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        seed_everything(build.seed)
        self.env = make_vector_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device)
        self.agent = LossDelegatingPPO(
            models=build.models,
            memory=build.memory,
            observation_space=build.observation_space,
            action_space=build.action_space,
            device=build.device,
            cfg=ppo_config(build),
            loss=build.loss,
            terms=build.loss_entry.terms,
            reported=build.loss_entry.reported,
        )
        self.agent.init()
        self.agent.enable_training_mode(True)
        self.rollouts = build.settings["rollouts"]
        self.steps_per_iteration = self.rollouts * build.num_envs
        # skrl without time-limit bootstrapping cuts GAE only at `terminated`: a truncated step would
        # bootstrap from the next stored observation, under SAME_STEP autoreset the next episode's first
        # state (Pendulum, where every episode is truncated, then never learns). rlplug's meaning of
        # bootstrap_truncated=false, as on its TorchRL backend: a time-limit cut ends the return.
        self.bootstrap_truncated = build.settings["time_limit_bootstrap"]
        self.total_timesteps = max(1, build.recipe.steps // build.num_envs)
        self._observations, _ = self.env.reset()
        # gymnasium envs have no global state: skip the per-step (exception-raising) env.state() call
        self._states = self.env.state()
        self._has_states = self._states is not None

    def step(self) -> dict[str, float]:
        agent, env = self.agent, self.env
        observations, states = self._observations, self._states
        timestep = self.env_steps // self.build.num_envs
        for _ in range(self.rollouts):
            with torch.no_grad():
                actions, _ = agent.act(observations, states, timestep=timestep, timesteps=self.total_timesteps)
                next_observations, rewards, terminated, truncated, infos = env.step(actions)
                next_states = env.state() if self._has_states else None
                ended = terminated | truncated
                self.episodes.update(rewards.cpu().numpy(), ended.cpu().numpy())
                stored_next_observations = next_observations
                if not self.bootstrap_truncated:
                    terminated = ended
                elif truncated.any():
                    # skrl bootstraps V(next observation): the state the episode was cut in
                    stored_next_observations = true_next_observations(next_observations, infos)
                agent.record_transition(
                    observations=observations,
                    states=states,
                    actions=actions,
                    rewards=rewards,
                    next_observations=stored_next_observations,
                    next_states=next_states,
                    terminated=terminated,
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

    def _metrics(self) -> dict[str, float]:
        """Read the update's tracked values, then clear them (skrl only clears when it writes, §14.9)."""
        tracked = self.agent.tracking_data
        metrics = {f"loss/{name}": tracked[f"Loss / {name}"][-1] for name in self.agent.logged_terms}
        metrics["train/lr"] = self.agent.optimizer.param_groups[0]["lr"]
        policy_std = tracked["Policy / Standard deviation"][-1]
        if np.isfinite(policy_std):
            metrics["train/policy_std"] = policy_std
        metrics["train/update_ms"] = tracked["Stats / Algorithm update time (ms)"][-1]
        episode_return = self.episodes.pop_mean()
        if episode_return is not None:
            metrics["train/episode_return"] = episode_return
        tracked.clear()
        return metrics

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            x = torch.as_tensor(observations, dtype=torch.float32, device=self.build.device).reshape(len(observations), -1)
            return policy_mean_or_argmax(self.agent.policy, self.agent._observation_preprocessor(x)).cpu().numpy()

    def state_dict(self) -> dict[str, Any]:
        agent = self.agent
        return {
            "modules": {name: module.state_dict() for name, module in agent.checkpoint_modules.items()},
            "scheduler": agent.scheduler.state_dict() if agent.scheduler else None,
            "rollout": agent._rollout,
            "env": env_state(self.env),  # mid-episode sub-envs: a resumed run steps on where this one was
            "observations": self._observations,
            "counters": self.counters(),
            "rng": capture_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        agent = self.agent
        for name, module in agent.checkpoint_modules.items():
            module.load_state_dict(state["modules"][name])
        if agent.scheduler:
            agent.scheduler.load_state_dict(state["scheduler"])
        agent._rollout = int(state["rollout"])
        load_env_state(self.env, state["env"])
        self._observations = state["observations"].to(self.build.device)
        self.load_counters(state["counters"])
        restore_rng_state(state["rng"])

    def close(self) -> None:
        self.env.close()


def build_trainer(build: Build) -> SkrlPPOTrainer:
    return SkrlPPOTrainer(build)
