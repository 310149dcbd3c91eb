"""PPO on TorchRL: models, rollout buffer, ``ClipPPOLoss`` + GAE, and rlplug's own training loop.

Reads top to bottom like a single-file PPO on TorchRL 0.14: a ``Collector`` gathers one batch of
``rollout_steps`` steps from ``num_envs`` in-process envs, GAE is computed once per batch with the
loss's own value estimator, then ``epochs`` passes of minibatches drawn without replacement from a
``ReplayBuffer`` go through the registered loss (``build.loss``), whose optimised terms
(``build.loss_entry.terms``) are summed, clipped by gradient norm and stepped with Adam.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from rlplug.backends.torchrl import (
    LearningRateSchedule,
    RunningNormalizer,
    collector_state,
    configure_threads,
    describe_loss,
    extend_quietly,
    find_module,
    load_collector_state,
    make_collector,
    make_env,
    mlp,
    observation_batch,
    seed_everything,
    stochastic_actor,
    value_operator,
)
from rlplug.backends.parallel import mean_over_ranks, sync_gradients
from rlplug.rng import capture_rng_state, restore_rng_state
from rlplug.hookspecs import Build
from rlplug.trainer import TrainerBase
from tensordict import TensorDict
from tensordict.nn import set_skip_existing
from torch import nn
from torchrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
from torchrl.envs import ExplorationType, set_exploration_type
from torchrl.objectives import ClipPPOLoss

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """Separate actor (Categorical or Gaussian) and critic MLPs, initialised from ``build.seed``.

    With ``normalize_observations`` both networks start with the same ``RunningNormalizer``, so the
    collector's policy, the loss and ``act_deterministic`` all standardise observations identically
    and the statistics travel inside the actor's ``state_dict``.
    """
    configure_threads()
    seed_everything(build.seed)
    s = build.settings
    observation_size = int(np.prod(build.observation_space.shape))
    normalizer = RunningNormalizer(observation_size) if s["normalize_observations"] else None

    def net(output_size: int) -> nn.Module:
        body = mlp(observation_size, s["hidden_sizes"], output_size, s["activation"])
        return body if normalizer is None else nn.Sequential(normalizer, body)

    actor = stochastic_actor(net, build.action_space, s["initial_log_std"])
    return {"actor": actor.to(build.device), "critic": value_operator(net(1)).to(build.device)}


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> ReplayBuffer:
    """One batch of transitions; iterating it yields one epoch of minibatches without replacement."""
    s = build.settings
    return ReplayBuffer(
        storage=LazyTensorStorage(s["frames_per_batch"], device=build.device),
        sampler=SamplerWithoutReplacement(),
        batch_size=s["minibatch_size"],
    )


# ---- loss ---------------------------------------------------------------------------------------


def make_clip_loss(build: Build) -> ClipPPOLoss:
    """The registered default loss ("clip") for ppo/torchrl: ``ClipPPOLoss`` with its value estimator."""
    s = build.settings
    loss = ClipPPOLoss(
        build.models["actor"],
        build.models["critic"],
        clip_epsilon=s["clip_epsilon"],
        entropy_coeff=s["entropy_coeff"],
        critic_coeff=s["critic_coeff"],
        loss_critic_type=s["loss_critic_type"],
        clip_value=s["clip_value"],
        normalize_advantage=s["normalize_advantage"],
    )
    estimator = s["value_estimator"]
    kwargs = {"gamma": s["gamma"]}
    if estimator.lower() in ("gae", "tdlambda"):
        kwargs["lmbda"] = s["lmbda"]
    loss.make_value_estimator(estimator, **kwargs)
    return loss


def describe_clip_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimator."""
    return describe_loss(ClipPPOLoss, value_estimator="GAE")


# ---- trainer ------------------------------------------------------------------------------------


class TorchRLPPOTrainer(TrainerBase):
    """One ``step()`` = one collector batch (``rollout_steps`` x ``num_envs`` transitions) + the update."""

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        configure_threads()
        seed_everything(build.seed)
        s = build.settings
        if s["frames_per_batch"] % build.num_envs:
            raise ValueError(f"frames_per_batch {s['frames_per_batch']} is not a multiple of num_envs {build.num_envs}")
        self.actor, self.critic = build.models["actor"], build.models["critic"]
        self.loss, self.memory = build.loss, build.memory
        self.terms = tuple(build.loss_entry.terms)
        self.logged_terms = self.terms + tuple(t for t in build.loss_entry.reported if t not in self.terms)
        self.steps_per_iteration = s["frames_per_batch"]
        self.num_epochs = s["num_epochs"]
        self.max_grad_norm = s["max_grad_norm"]
        self.kl_early_stop = s["kl_early_stop"]
        self.bootstrap_truncated = s["bootstrap_truncated"]
        self.is_box = isinstance(build.action_space, gym.spaces.Box)
        if self.is_box:
            self.action_low = torch.as_tensor(build.action_space.low, dtype=torch.float32, device=build.device)
            self.action_high = torch.as_tensor(build.action_space.high, dtype=torch.float32, device=build.device)

        self.observation_normalizer = find_module(self.actor, RunningNormalizer) if s["normalize_observations"] else None
        # normalize_values: the critic learns standardised returns (targets of a stable scale whatever
        # the reward scale), GAE needs returns in reward units. So: critic output -> denormalise ->
        # GAE -> update the statistics with the new returns -> standardise targets and old values
        # with them for the critic loss (and its value clip). skrl's value preprocessor does the same.
        self.value_normalizer = RunningNormalizer(1).to(build.device) if s["normalize_values"] else None

        # loss.parameters() rather than the models': a registered loss may own extra parameters
        self.optimizer = torch.optim.Adam(self.loss.parameters(), lr=s["lr"])
        self.lr_schedule = LearningRateSchedule(
            self.optimizer, s["lr_schedule"], total_steps=s["total_updates"], kl_target=s["kl_target"]
        )
        if (self.lr_schedule.needs_kl or self.kl_early_stop) and "kl_approx" not in self.logged_terms:
            raise ValueError("kl_adaptive and kl_early_stop need a loss that reports a 'kl_approx' term")

        self.env = make_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device)
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
        if self.observation_normalizer is not None:
            # after the update: the batch was collected and optimised under the same statistics,
            # so the first minibatch's probability ratios are exactly 1
            self.observation_normalizer.update(batch["observation"])
        self.env_steps += batch.numel()
        self.iterations += 1
        episode_return = self.episodes.pop_mean()
        if episode_return is not None:
            metrics["train/episode_return"] = episode_return
        return metrics

    def _track_episodes(self, batch: TensorDict) -> None:
        rewards = batch["next", "reward"].reshape(batch.shape[0], batch.shape[1]).cpu().numpy()
        dones = batch["next", "done"].reshape(batch.shape[0], batch.shape[1]).cpu().numpy()
        for t in range(batch.shape[1]):
            self.episodes.update(rewards[:, t], dones[:, t])

    def _compute_advantages(self, batch: TensorDict) -> None:
        """Values of every observation and next observation in one critic call, then the loss's GAE."""
        observations = torch.stack([batch["observation"], batch["next", "observation"]])
        values = self.critic(TensorDict({"observation": observations}, batch_size=[2, *batch.shape]))["state_value"]
        if self.value_normalizer is not None:
            values = self.value_normalizer.denormalize(values)
        batch["state_value"], batch["next", "state_value"] = values[0], values[1]
        if not self.bootstrap_truncated:
            # a time-limit cut then ends the return like a real termination
            batch["next", "terminated"] = batch["next", "done"].clone()
        # the values are already in the batch: skip_existing stops the estimator recomputing them
        with set_skip_existing(True):
            self.loss.value_estimator(batch)
        if self.value_normalizer is not None:
            self.value_normalizer.update(batch["value_target"])
            batch["value_target"] = self.value_normalizer(batch["value_target"])
            batch["state_value"] = self.value_normalizer(batch["state_value"])

    def _update(self) -> dict[str, float]:
        logged: list[list[torch.Tensor]] = []  # per optimised minibatch, self.logged_terms in order
        stopped_early = False
        for _ in range(self.num_epochs):
            epoch_kl: list[torch.Tensor] = []
            stop = False
            for minibatch in self.memory:
                if stop:
                    continue  # drain the sampler so the next epoch starts on a fresh permutation
                out = self.loss(minibatch)
                if "kl_approx" in out.keys():
                    epoch_kl.append(out["kl_approx"].detach())
                # ranks decide on their mean KL, so all of them stop (or go on) together
                if self.kl_early_stop and epoch_kl and mean_over_ranks(epoch_kl[-1]).item() > self.kl_early_stop:
                    stop = stopped_early = True
                    continue
                total = sum(out[name] for name in self.terms)
                self.optimizer.zero_grad(set_to_none=True)
                total.backward()
                sync_gradients(self.optimizer)  # data-parallel runs: the mean gradient over ranks
                if self.max_grad_norm:
                    nn.utils.clip_grad_norm_(self.loss.parameters(), self.max_grad_norm)
                self.optimizer.step()
                logged.append([out[name] for name in self.logged_terms])
            self.lr_schedule.step(mean_over_ranks(torch.stack(epoch_kl).mean()).item() if epoch_kl else None)

        with torch.no_grad():  # one reduction per update, not one per minibatch
            means = torch.stack([torch.stack(row) for row in logged]).mean(0).tolist() if logged else []
        metrics = {f"loss/{name}": value for name, value in zip(self.logged_terms, means)}
        metrics["train/lr"] = self.lr_schedule.lr
        metrics["train/minibatches"] = float(len(logged))
        metrics["train/kl_early_stopped"] = float(stopped_early)
        return metrics

    # -- evaluation -------------------------------------------------------------------------------

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            action = self.actor(observation_batch(observations, self.build.device))["action"]
        if self.is_box:
            action = torch.clamp(action, self.action_low, self.action_high)
        return action.cpu().numpy()

    # -- checkpoints ------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "loss": self.loss.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "lr_schedule": self.lr_schedule.state_dict(),
            "value_normalizer": None if self.value_normalizer is None else self.value_normalizer.state_dict(),
            "collector": collector_state(self.collector),  # mid-episode envs and the next step's carrier
            "memory": self.memory.state_dict(),  # the minibatch sampler's position decides the next permutation
            "counters": self.counters(),
            "rng": capture_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.actor.load_state_dict(state["actor"])
        self.critic.load_state_dict(state["critic"])
        self.loss.load_state_dict(state["loss"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.lr_schedule.load_state_dict(state["lr_schedule"])
        if self.value_normalizer is not None:
            self.value_normalizer.load_state_dict(state["value_normalizer"])
        load_collector_state(self.collector, state["collector"])
        self.memory.load_state_dict(state["memory"])
        self.load_counters(state["counters"])
        restore_rng_state(state["rng"])

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.collector.shutdown()
            if not self.env.is_closed:
                self.env.close()


def build_trainer(build: Build) -> TorchRLPPOTrainer:
    return TorchRLPPOTrainer(build)
