"""MAPPO on TorchRL: multi-agent actor and critic, rollout buffer, ``MAPPOLoss`` + MAGAE, rlplug's loop.

Reads top to bottom like a single-file MAPPO on TorchRL 0.14 (the VMAS tutorial's loop): a
``Collector`` gathers one batch of ``rollout_steps`` steps from ``num_envs`` envs, advantages come from
the loss's own multi-agent GAE, then ``epochs`` passes of minibatches drawn without replacement go
through the registered loss (``build.loss``), whose optimised terms (``build.loss_entry.terms``) are
summed, clipped by gradient norm and stepped with Adam. Keys live under the env's agent group.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from rlplug.backends.parallel import sync_gradients
from rlplug.backends.torchrl import (
    RunningNormalizer,
    collector_state,
    configure_threads,
    extend_quietly,
    load_collector_state,
    make_collector,
    seed_everything,
)
from rlplug.backends.torchrl_multiagent import (
    library_envs,
    agent_group,
    done_keys,
    group_observation_batch,
    make_multiagent_env,
    multiagent_actor,
    multiagent_critic,
)
from rlplug.hookspecs import Build
from rlplug.multiagent import MultiAgentTrainerBase
from rlplug.rng import capture_rng_state, restore_rng_state
from tensordict import TensorDict
from tensordict.nn import set_skip_existing
from torch import nn
from torchrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
from torchrl.envs import ExplorationType, set_exploration_type
from torchrl.objectives import ValueEstimators
from torchrl.objectives.multiagent import MAPPOLoss

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """Decentralised actor; centralised (MAPPO) or per-agent (IPPO) critic; shared or per-agent weights."""
    configure_threads()
    seed_everything(build.seed)
    s, spaces = build.settings, build.extras["multiagent"]
    group = agent_group(build.env_id)
    actor = multiagent_actor(spaces, group, s["hidden_sizes"], s["activation"], s["share_parameters"], s["initial_log_std"])
    critic = multiagent_critic(
        spaces, group, s["hidden_sizes"], s["activation"], s["centralised_critic"], s["share_parameters"]
    )
    return {"actor": actor.to(build.device), "critic": critic.to(build.device)}


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> ReplayBuffer:
    """One batch of transitions (all agents of one env step per row); one epoch per iteration."""
    s = build.settings
    return ReplayBuffer(
        storage=LazyTensorStorage(s["frames_per_batch"], device=build.device),
        sampler=SamplerWithoutReplacement(),
        batch_size=s["minibatch_size"],
    )


# ---- loss ---------------------------------------------------------------------------------------


def make_mappo_loss(build: Build) -> MAPPOLoss:
    """The registered default loss ("mappo") for mappo/torchrl: ``MAPPOLoss`` with the group's keys and
    a multi-agent GAE (advantages normalised per minibatch over everything but the agent dimension)."""
    s, group = build.settings, agent_group(build.env_id)
    loss = MAPPOLoss(
        build.models["actor"],
        build.models["critic"],
        clip_epsilon=s["clip_epsilon"],
        entropy_coeff=s["entropy_coeff"],
        critic_coeff=s["critic_coeff"],
        loss_critic_type=s["loss_critic_type"],
        clip_value=s["clip_value"],
    )
    done, terminated = done_keys(build.env_id)
    loss.set_keys(
        reward=(group, "reward"),
        action=(group, "action"),
        sample_log_prob=(group, "action_log_prob"),
        value=(group, "state_value"),
        done=done,
        terminated=terminated,
    )
    loss.make_value_estimator(ValueEstimators.MAGAE, gamma=s["gamma"], lmbda=s["lmbda"])
    return loss


# ---- trainer ------------------------------------------------------------------------------------


class TorchRLMAPPOTrainer(MultiAgentTrainerBase):
    """One ``step()`` = one collector batch (``rollout_steps`` x ``num_envs`` env steps) + the update."""

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        configure_threads()
        seed_everything(build.seed)
        s = build.settings
        if s["frames_per_batch"] % build.num_envs:
            raise ValueError(f"frames_per_batch {s['frames_per_batch']} is not a multiple of num_envs {build.num_envs}")
        self.actor, self.critic, self.group = build.models["actor"], build.models["critic"], agent_group(build.env_id)
        self.loss, self.memory = build.loss, build.memory
        self.terms = tuple(build.loss_entry.terms)
        self.logged_terms = self.terms + tuple(t for t in build.loss_entry.reported if t not in self.terms)
        self.steps_per_iteration = s["frames_per_batch"]
        self.num_epochs = s["num_epochs"]
        self.max_grad_norm = s["max_grad_norm"]
        # normalize_values: the critic learns standardised returns, GAE needs them in reward units. So:
        # critic output -> denormalise -> MAGAE -> update the statistics with the new targets ->
        # standardise targets and old values for the loss. skrl's value preprocessor does the same.
        self.value_normalizer = RunningNormalizer(1).to(build.device) if s["normalize_values"] else None
        action_space = build.action_space
        self.action_bounds = None
        if isinstance(action_space, gym.spaces.Box):
            low, high = (torch.as_tensor(b, dtype=torch.float32, device=build.device) for b in (action_space.low, action_space.high))
            self.action_bounds = (low, high)

        # loss.parameters() rather than the models': a registered loss may own extra parameters
        self.optimizer = torch.optim.Adam(self.loss.parameters(), lr=s["lr"])
        self.env = make_multiagent_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device)
        self.done_key, self.terminated_key = done_keys(build.env_id)
        self.collector = make_collector(self.env, self.actor, s["frames_per_batch"])
        self._batches = iter(self.collector)
        self._closed = False

    # -- one iteration ----------------------------------------------------------------------------

    def step(self) -> dict[str, float]:
        batch = next(self._batches)
        self._track_episodes(batch)
        with torch.no_grad():
            self._compute_advantages(batch)
        extend_quietly(self.memory, batch.reshape(-1))
        metrics = self._update()
        self.env_steps += batch.numel()
        self.iterations += 1
        episode_return = self.episodes.pop_mean()
        if episode_return is not None:
            metrics["train/episode_return"] = episode_return
        return metrics

    def _track_episodes(self, batch: TensorDict) -> None:
        """Per-agent returns: the agents' rewards averaged each step, episodes cut by the team's done."""
        rewards = batch["next", self.group, "reward"].mean(dim=-2).reshape(batch.shape).cpu().numpy()
        dones = batch["next", "done"].reshape(batch.shape).cpu().numpy()
        for t in range(batch.shape[1]):
            self.episodes.update(rewards[:, t], dones[:, t])

    def _compute_advantages(self, batch: TensorDict) -> None:
        """Values of every observation and next observation in one critic call, then the loss's MAGAE.

        An episode's end, its step limit included, ends the return (as on rlplug's skrl backend): MPE
        and VMAS episodes are fixed-horizon tasks, so the cut is part of the task.
        """
        group = self.group
        observations = torch.stack([batch[group, "observation"], batch["next", group, "observation"]])
        inputs = TensorDict({group: TensorDict({"observation": observations}, batch_size=observations.shape[:-1])},
                            batch_size=[2, *batch.shape])  # fmt: skip
        values = self.critic(inputs)[group, "state_value"]
        if self.value_normalizer is not None:
            values = self.value_normalizer.denormalize(values)
        batch[group, "state_value"], batch["next", group, "state_value"] = values[0], values[1]
        batch["next", self.terminated_key] = batch["next", self.done_key].clone()
        # the values are already in the batch: skip_existing stops the estimator recomputing them
        with set_skip_existing(True):
            self.loss.value_estimator(batch)
        if self.value_normalizer is not None:
            self.value_normalizer.update(batch["value_target"])
            batch["value_target"] = self.value_normalizer(batch["value_target"])
            batch[group, "state_value"] = self.value_normalizer(batch[group, "state_value"])

    def _update(self) -> dict[str, float]:
        logged: list[list[torch.Tensor]] = []  # per minibatch, self.logged_terms in order
        for _ in range(self.num_epochs):
            for minibatch in self.memory:
                out = self.loss(minibatch)
                total = sum(out[name] for name in self.terms)
                self.optimizer.zero_grad(set_to_none=True)
                total.backward()
                sync_gradients(self.optimizer)  # data-parallel runs: the mean gradient over ranks
                if self.max_grad_norm:
                    nn.utils.clip_grad_norm_(self.loss.parameters(), self.max_grad_norm)
                self.optimizer.step()
                logged.append([out[name].detach() for name in self.logged_terms])
        with torch.no_grad():  # one reduction per update, not one per minibatch
            means = torch.stack([torch.stack(row) for row in logged]).mean(0).tolist() if logged else []
        metrics = {f"loss/{name}": value for name, value in zip(self.logged_terms, means)}
        metrics["train/lr"] = self.optimizer.param_groups[0]["lr"]
        return metrics

    # -- evaluation -------------------------------------------------------------------------------

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            td = self.actor(group_observation_batch(observations, self.group, self.build.device))
            action = td[self.group, "action"]
        if self.action_bounds is not None:
            action = torch.clamp(action, *self.action_bounds)
        return action.cpu().numpy()

    # -- checkpoints ------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "loss": self.loss.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "value_normalizer": None if self.value_normalizer is None else self.value_normalizer.state_dict(),
            "collector": collector_state(self.collector, library_envs(self.env)),  # the envs mid-episode
            "memory": self.memory.state_dict(),  # the minibatch sampler's position decides the next permutation
            "counters": self.counters(),
            "rng": capture_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.actor.load_state_dict(state["actor"])
        self.critic.load_state_dict(state["critic"])
        self.loss.load_state_dict(state["loss"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.value_normalizer is not None:
            self.value_normalizer.load_state_dict(state["value_normalizer"])
        load_collector_state(self.collector, state["collector"], library_envs(self.env))
        self.memory.load_state_dict(state["memory"])
        self.load_counters(state["counters"])
        restore_rng_state(state["rng"])

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.collector.shutdown()
            if not self.env.is_closed:
                self.env.close()


def build_trainer(build: Build) -> TorchRLMAPPOTrainer:
    return TorchRLMAPPOTrainer(build)
