"""MAPPO on skrl: per-agent models and memories, the clipped loss, the agent that delegates to it, the trainer.

Reads top to bottom like a single-file MAPPO on skrl 2.1. The agent is skrl's own ``MAPPO`` with one
change: ``update()`` hands each agent's minibatch to the registered loss object (``build.loss``)
instead of computing the loss inline. The default loss, ``MAPPOClipLoss``, is skrl's math line for
line. skrl's MAPPO and IPPO are the same code; the critic model decides: it reads the global state
(MAPPO) or only the agent's observation (IPPO, ``centralised_critic = false``). Shared parameters are
skrl's way: every agent holds the same policy and value objects (each agent's update steps them with
its own Adam on its own data).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import numpy as np
import torch
from rlplug.backends.parallel import mean_over_ranks, sync_gradients
from rlplug.backends.skrl import clipped_ppo_terms, preprocessor, seed_everything
from rlplug.backends.skrl_multiagent import agent_models, deterministic_actions, make_multiagent_env
from rlplug.envstate import deep_restore, deep_snapshot
from rlplug.hookspecs import Build
from rlplug.multiagent import MultiAgentTrainerBase
from rlplug.rng import capture_rng_state, restore_rng_state
from skrl.memories.torch import RandomMemory
from skrl.multi_agents.torch.mappo import MAPPO, MAPPO_CFG
from skrl.multi_agents.torch.mappo.mappo import compute_gae
from skrl.resources.schedulers.torch import KLAdaptiveLR
from torch import nn

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, dict[str, Any]]:
    """``{uid: {"policy", "value"}}``: Categorical or Gaussian policies, centralised or per-agent critics."""
    seed_everything(build.seed)
    s = build.settings
    return agent_models(
        build.extras["multiagent"], build.device, s["hidden_sizes"], s["activation"], s["centralised_critic"],
        s["share_parameters"], s["initial_log_std"],
    )  # fmt: skip


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> dict[str, RandomMemory]:
    """One rollout per agent: skrl's (MA)PPO needs ``memory_size == rollouts`` (unfilled rows are NaN)."""
    rollouts = build.settings["rollouts"]
    return {
        uid: RandomMemory(memory_size=rollouts, num_envs=build.num_envs, device=build.device)
        for uid in build.extras["multiagent"].agents
    }


# ---- loss ---------------------------------------------------------------------------------------


class MAPPOClipLoss:
    """skrl's MAPPO loss for one agent: clipped surrogate, (optionally clipped) scaled MSE value loss,
    entropy bonus.

    Called as ``loss(agent, batch, uid, epoch)`` on one minibatch of agent ``uid`` whose observations
    and states are already preprocessed; returns ``loss_policy``, ``loss_value``, ``loss_entropy``
    (summed and optimised) and ``approx_kl`` (reported; drives KL early stopping). Upstream's order of
    operations, so a Gaussian policy's ``rsample`` draws the same random numbers.
    """

    def __init__(self, ratio_clip: float, value_clip: float, entropy_loss_scale: float, value_loss_scale: float) -> None:
        self.ratio_clip = ratio_clip
        self.value_clip = value_clip
        self.entropy_loss_scale = entropy_loss_scale
        self.value_loss_scale = value_loss_scale

    def __call__(self, agent: MAPPO, batch: dict[str, torch.Tensor], uid: str, epoch: int) -> dict[str, torch.Tensor]:
        return clipped_ppo_terms(
            agent.policies[uid], agent.values[uid], batch,
            self.ratio_clip, self.value_clip, self.entropy_loss_scale, self.value_loss_scale,
        )  # fmt: skip


def make_mappo_loss(build: Build) -> MAPPOClipLoss:
    """The registered default loss ("mappo") for mappo/skrl."""
    s = build.settings
    return MAPPOClipLoss(s["ratio_clip"], s["value_clip"], s["entropy_loss_scale"], s["value_loss_scale"])


# ---- agent --------------------------------------------------------------------------------------


class LossDelegatingMAPPO(MAPPO):
    """skrl's MAPPO whose per-agent ``update()`` asks ``loss(agent, batch, uid, epoch)`` for the loss terms.

    Everything else is upstream's update: GAE per agent, value preprocessing, epochs and minibatches,
    KL early stopping, gradient clipping, the per-epoch scheduler step. ``terms`` are summed and
    optimised; ``terms`` and ``reported`` are tracked as ``"Loss / <term> (<uid>)"``, averaged over the
    agent's optimised minibatches. One deliberate difference, for shared models only: see ``update``.
    """

    def __init__(self, *, loss: Any, terms: tuple[str, ...], reported: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.loss = loss
        self.loss_terms = tuple(terms)
        self.logged_terms = tuple(terms) + tuple(t for t in reported if t not in terms)
        first = self.possible_agents[0]
        self.shared = all(
            self.policies[uid] is self.policies[first] and self.values[uid] is self.values[first] for uid in self.possible_agents
        )
        if self.shared:  # one network, one set of statistics: every agent reads the first agent's preprocessors
            for uid in self.possible_agents[1:]:
                for name in ("observation", "state", "value"):
                    getattr(self, f"_{name}_preprocessor")[uid] = getattr(self, f"_{name}_preprocessor")[first]
                    if f"{name}_preprocessor" in self.checkpoint_modules[first]:
                        self.checkpoint_modules[uid][f"{name}_preprocessor"] = self.checkpoint_modules[first][f"{name}_preprocessor"]

    def update(self, *, timestep: int, timesteps: int, uid: str) -> None:
        """Upstream's per-agent update; with shared models, one joint update on every agent's samples.

        skrl's MAPPO has no parameter sharing of its own: handed the same models for every agent, its
        per-agent loop would step the shared network once per agent per minibatch, from as many Adam
        states, each later agent's ratios measured against a policy the earlier agents already moved.
        Shared models are instead updated once per minibatch on all agents' samples (as TorchRL's
        MAPPOLoss does with shared parameters), with the first agent's optimiser; the per-sample loss
        is the same registered loss object.
        """
        if not self.shared:
            self._update(uid, [uid])
        elif uid == self.possible_agents[0]:
            self._update(uid, self.possible_agents)
        # with shared models, later agents' calls have nothing left to do

    def _update(self, uid: str, sources: list[str]) -> None:
        policy, value, memory = self.policies[uid], self.values[uid], self.memories[uid]
        for source in sources:
            self._compute_returns_and_advantages(source)
        sums: dict[str, float] = defaultdict(float)
        optimised = 0

        for epoch in range(self.cfg.learning_epochs[uid]):
            kl_divergences = []
            samplers = [
                self.memories[source].sample(names=self._tensors_names, batch_size=len(memory), mini_batches=self.cfg.mini_batches[uid])
                for source in sources
            ]
            for per_source in zip(*samplers):
                sampled = per_source[0] if len(per_source) == 1 else [torch.cat(parts) for parts in zip(*per_source)]
                batch = dict(zip(self._tensors_names, sampled))
                with torch.autocast(device_type=self._device_type, enabled=self.cfg.mixed_precision):
                    batch["observations"] = self._observation_preprocessor[uid](batch["observations"], train=not epoch)
                    batch["states"] = self._state_preprocessor[uid](batch["states"], train=not epoch)
                    terms = self.loss(self, batch, uid, epoch)
                    kl_divergence = terms.get("approx_kl")
                    if kl_divergence is not None:
                        kl_divergences.append(kl_divergence.detach())
                    # distributed: ranks stop on their mean KL, all together (upstream compares each rank's own)
                    if self.cfg.kl_threshold[uid] and mean_over_ranks(kl_divergence) > self.cfg.kl_threshold[uid]:
                        break
                    loss = sum(terms[name] for name in self.loss_terms)

                self._optimisation_step(uid, loss, policy, value)
                for name in self.logged_terms:
                    sums[name] += terms[name].item()
                optimised += 1

            self._step_scheduler(uid, kl_divergences)

        for source in sources:
            for name in self.logged_terms:
                self.track_data(f"Loss / {name} ({source})", sums[name] / max(optimised, 1))

    def _step_scheduler(self, uid: str, kl_divergences: list[torch.Tensor]) -> None:
        """Upstream: once per epoch; ``KLAdaptiveLR`` gets the epoch's mean approximate KL."""
        scheduler = self.schedulers[uid]
        if not scheduler:
            return
        if isinstance(scheduler, KLAdaptiveLR):
            kl = torch.tensor(kl_divergences, device=self.device).mean()
            scheduler.step(mean_over_ranks(kl).item())  # distributed: the same KL on every rank
        else:
            scheduler.step()

    def _compute_returns_and_advantages(self, uid: str) -> None:
        """Upstream: GAE from the agent's rollout and the value of its last next observation."""
        value, memory = self.values[uid], self.memories[uid]
        with torch.no_grad(), torch.autocast(device_type=self._device_type, enabled=self.cfg.mixed_precision):
            inputs = {
                "observations": self._observation_preprocessor[uid](self._current_next_observations[uid]),
                "states": self._state_preprocessor[uid](self._current_next_states[uid]),
            }
            value.enable_training_mode(False)
            last_values, _ = value.act(inputs, role="value")
            value.enable_training_mode(True)
            last_values = self._value_preprocessor[uid](last_values, inverse=True)

        values = memory.get_tensor_by_name("values")
        returns, advantages = compute_gae(
            rewards=memory.get_tensor_by_name("rewards"),
            terminated=memory.get_tensor_by_name("terminated"),
            truncated=memory.get_tensor_by_name("truncated"),
            values=values,
            last_values=last_values,
            discount_factor=self.cfg.discount_factor[uid],
            lambda_coefficient=self.cfg.gae_lambda[uid],
            time_limit_bootstrap=self.cfg.time_limit_bootstrap[uid],
        )
        memory.set_tensor_by_name("values", self._value_preprocessor[uid](values, train=True))
        memory.set_tensor_by_name("returns", self._value_preprocessor[uid](returns, train=True))
        memory.set_tensor_by_name("advantages", advantages)

    def _optimisation_step(self, uid: str, loss: torch.Tensor, policy: Any, value: Any) -> None:
        """Upstream: backward, distributed gradient reduction (one all-reduce over everything the
        optimiser steps, where upstream runs one per model), gradient-norm clip, Adam step."""
        optimizer = self.optimizers[uid]
        optimizer.zero_grad()
        self.scaler.scale(loss).backward()
        sync_gradients(optimizer)
        if self.cfg.grad_norm_clip[uid] > 0:
            self.scaler.unscale_(optimizer)
            if policy is value:
                nn.utils.clip_grad_norm_(policy.parameters(), self.cfg.grad_norm_clip[uid])
            else:
                nn.utils.clip_grad_norm_(itertools.chain(policy.parameters(), value.parameters()), self.cfg.grad_norm_clip[uid])
        self.scaler.step(optimizer)
        self.scaler.update()


PER_AGENT_KWARGS = (
    "learning_rate_scheduler_kwargs",
    "observation_preprocessor_kwargs",
    "state_preprocessor_kwargs",
    "value_preprocessor_kwargs",
)


def complete_per_agent_kwargs(cfg: MAPPO_CFG, possible_agents: list[str]) -> MAPPO_CFG:
    """Work around skrl 2.1.1's ``MultiAgentCfg.expand``: a ``*_kwargs`` field left at its default ``{}``
    is read as a per-agent dict naming no agent and raises ``ValueError: Specified keys (set()) do not
    match possible agents``, so even ``MAPPO(cfg=MAPPO_CFG())`` fails. Give each agent its own ``{}``."""
    for name in PER_AGENT_KWARGS:
        if getattr(cfg, name) == {}:
            setattr(cfg, name, {uid: {} for uid in possible_agents})
    return cfg


def mappo_config(build: Build) -> MAPPO_CFG:
    """``MAPPO_CFG`` from the translated settings (the same values for every agent)."""
    s = build.settings
    agents = list(build.extras["multiagent"].agents)
    value_preprocessor, value_preprocessor_kwargs = preprocessor(s["value_preprocessor"], 1, build.device)
    cfg = MAPPO_CFG(
        rollouts=s["rollouts"],
        learning_epochs=s["learning_epochs"],
        mini_batches=s["mini_batches"],
        discount_factor=s["discount_factor"],
        gae_lambda=s["gae_lambda"],
        learning_rate=s["learning_rate"],
        grad_norm_clip=s["grad_norm_clip"],
        ratio_clip=s["ratio_clip"],
        value_clip=s["value_clip"],
        entropy_loss_scale=s["entropy_loss_scale"],
        value_loss_scale=s["value_loss_scale"],
        value_preprocessor=value_preprocessor,
        value_preprocessor_kwargs={uid: dict(value_preprocessor_kwargs) for uid in agents},
        # the trainer marks every episode end (a step limit included) as terminated: nothing to bootstrap
        time_limit_bootstrap=False,
        # rlplug's run layer writes metrics and checkpoints; skrl's own writers stay off
        experiment={"write_interval": 0, "checkpoint_interval": 0},
    )
    return complete_per_agent_kwargs(cfg, agents)


# ---- trainer ------------------------------------------------------------------------------------


class SkrlMAPPOTrainer(MultiAgentTrainerBase):
    """One ``step()`` = one rollout of ``rollouts`` vector steps + every agent's update."""

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        seed_everything(build.seed)
        spaces = build.extras["multiagent"]
        self.agents = list(spaces.agents)
        self.env = make_multiagent_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device)
        self.agent = LossDelegatingMAPPO(
            possible_agents=self.agents,
            models=build.models,
            memories=build.memory,
            observation_spaces=dict.fromkeys(self.agents, spaces.observation_space),
            state_spaces=dict.fromkeys(self.agents, spaces.state_space),
            action_spaces=dict.fromkeys(self.agents, spaces.action_space),
            device=build.device,
            cfg=mappo_config(build),
            loss=build.loss,
            terms=build.loss_entry.terms,
            reported=build.loss_entry.reported,
        )
        self.agent.init()
        self.agent.enable_training_mode(True)
        self.rollouts = build.settings["rollouts"]
        self.steps_per_iteration = self.rollouts * build.num_envs
        self.total_timesteps = max(1, build.recipe.steps // build.num_envs)
        self._observations, _ = self.env.reset()
        self._states = self.env.state()

    def step(self) -> dict[str, float]:
        agent, env, agents = self.agent, self.env, self.agents
        observations, states = self._observations, self._states
        timestep = self.env_steps // self.build.num_envs
        for _ in range(self.rollouts):
            with torch.no_grad():
                actions, _ = agent.act(observations, states, timestep=timestep, timesteps=self.total_timesteps)
                next_observations, rewards, terminated, truncated, infos = env.step(actions)
                next_states = env.state()
                ended = terminated[agents[0]]  # the wrappers report episode ends for the whole team
                team_reward = torch.stack([rewards[uid] for uid in agents]).mean(0)
                self.episodes.update(team_reward.cpu().numpy(), ended.cpu().numpy())
                agent.record_transition(
                    observations=observations, states=states, actions=actions, rewards=rewards,
                    next_observations=next_observations, next_states=next_states, terminated=terminated,
                    truncated=truncated, infos=infos, timestep=timestep, timesteps=self.total_timesteps,
                )  # fmt: skip
            agent.post_interaction(timestep=timestep, timesteps=self.total_timesteps)
            observations, states = next_observations, next_states
            timestep += 1
        self._observations, self._states = observations, states
        self.env_steps += self.steps_per_iteration
        self.iterations += 1
        return self._metrics()

    def _metrics(self) -> dict[str, float]:
        """Per-term means over agents of the update's tracked values, then clear them (skrl §14.9)."""
        tracked = self.agent.tracking_data
        metrics = {
            f"loss/{name}": float(np.mean([tracked[f"Loss / {name} ({uid})"][-1] for uid in self.agents]))
            for name in self.agent.logged_terms
        }
        metrics["train/lr"] = self.agent.optimizers[self.agents[0]].param_groups[0]["lr"]
        metrics["train/update_ms"] = tracked["Stats / Algorithm update time (ms)"][-1]
        episode_return = self.episodes.pop_mean()
        if episode_return is not None:
            metrics["train/episode_return"] = episode_return
        tracked.clear()
        return metrics

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            x = torch.as_tensor(observations, dtype=torch.float32, device=self.build.device)
            return deterministic_actions(self.agent.policies, self.agents, x).cpu().numpy()

    def state_dict(self) -> dict[str, Any]:
        modules = self.agent.checkpoint_modules
        return {
            "modules": {uid: {name: module.state_dict() for name, module in modules[uid].items()} for uid in self.agents},
            "rollout": self.agent._rollout,
            "env": deep_snapshot(self.env),  # the MPE worlds / VMAS scenario mid-episode, their RNGs
            "observations": self._observations,
            "states": self._states,
            "counters": self.counters(),
            "rng": capture_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        modules = self.agent.checkpoint_modules
        for uid in self.agents:
            for name, module in modules[uid].items():
                module.load_state_dict(state["modules"][uid][name])
        self.agent._rollout = int(state["rollout"])
        deep_restore(self.env, state["env"])
        self._observations, self._states = state["observations"], state["states"]
        self.load_counters(state["counters"])
        restore_rng_state(state["rng"])

    def close(self) -> None:
        self.env.close()


def build_trainer(build: Build) -> SkrlMAPPOTrainer:
    return SkrlMAPPOTrainer(build)
