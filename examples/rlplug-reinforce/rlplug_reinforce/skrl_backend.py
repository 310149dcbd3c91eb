"""REINFORCE on skrl, top to bottom: models, memory, loss, trainer.

skrl has no REINFORCE agent, so this module owns the loop: skrl models (``CategoricalMixin``
policy, ``DeterministicMixin`` value baseline) and skrl's gymnasium wrapper, both from rlplug's shared
skrl blocks, driven by a plain Monte-Carlo policy-gradient update:

    G_t = sum_k gamma^k r_{t+k}            (to the end of the episode; nothing is bootstrapped)
    A_t = G_t - V(s_t), standardised       (baseline = "value"; "normalize": A_t = standardised G_t)
    loss = -mean(A_t log pi(a_t|s_t)) + c_v mean((V(s_t) - G_t)^2) - c_e mean(entropy)

One ``step()`` collects until ``episodes_per_update`` episodes have ended, then takes one gradient step.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from skrl.models.torch import Model

from rlplug import Build
from rlplug.backends.skrl import (
    CategoricalPolicy,
    env_state,
    load_env_state,
    make_vector_env,
    policy_mean_or_argmax,
    seed_everything,
    value_model,
)
from rlplug.rng import capture_rng_state, restore_rng_state
from rlplug.trainer import TrainerBase

# ---- models ---------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Model]:
    """``policy`` (categorical over the logits of an MLP) and, with a learned baseline, ``value``."""
    # seeded here as well as in the trainer, so the initial weights are reproducible
    seed_everything(build.seed)
    settings = build.settings
    sizes, activation = settings["hidden_sizes"], settings["activation"]
    models: dict[str, Model] = {
        "policy": CategoricalPolicy(build.observation_space, build.action_space, build.device, sizes, activation)
    }
    if settings["baseline"] == "value":
        models["value"] = value_model(build.observation_space, build.action_space, build.device, sizes, activation)
    return models


# ---- memory ---------------------------------------------------------------------------------------


def discounted_returns(rewards: np.ndarray, dones: np.ndarray, gamma: float) -> np.ndarray:
    """Return-to-go of every row of ``[T, num_envs]`` rewards; an episode's sum stops where it is done."""
    returns = np.empty_like(rewards)
    running = np.zeros(rewards.shape[1], dtype=rewards.dtype)
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running * ~dones[t]
        returns[t] = running
    return returns


class EpisodeBuffer:
    """The episodes of every environment, stored step by step; hands out the ones that have ended.

    ``take_finished`` returns every transition of every finished episode with its return-to-go and
    keeps the episodes still running: they end in a later batch. Their first part was then sampled by
    the policy before the update; that one-update lag is what lets vectorised REINFORCE keep all of its
    data instead of discarding up to half of every batch.
    """

    def __init__(self, num_envs: int, gamma: float, device: str) -> None:
        self.num_envs = num_envs
        self.gamma = gamma
        self.device = device
        self.clear()

    def clear(self) -> None:
        self.observations: list[torch.Tensor] = []  # [num_envs, obs_dim] per step
        self.actions: list[torch.Tensor] = []  # [num_envs, 1]
        self.rewards: list[np.ndarray] = []  # [num_envs]
        self.dones: list[np.ndarray] = []  # [num_envs] terminated or truncated
        self.first = np.zeros(self.num_envs, dtype=np.int64)  # per env: first row not handed out yet

    def __len__(self) -> int:
        return len(self.rewards)

    def add(self, observations: torch.Tensor, actions: torch.Tensor, rewards: np.ndarray, dones: np.ndarray) -> None:
        self.observations.append(observations)
        self.actions.append(actions)
        self.rewards.append(rewards)
        self.dones.append(dones)

    def take_finished(self) -> dict[str, torch.Tensor]:
        """``observations [B, D]``, ``actions [B, 1]``, ``returns [B]`` of every finished episode, then drop them."""
        rewards, dones = np.stack(self.rewards), np.stack(self.dones)
        returns = discounted_returns(rewards, dones, self.gamma)
        rows = np.arange(len(rewards))[:, None]
        last_done = np.where(dones, rows, -1).max(axis=0)  # -1 where no episode ended
        finished = (rows >= self.first) & (rows <= last_done)
        mask = torch.from_numpy(finished)
        batch = {
            "observations": torch.stack(self.observations)[mask],
            "actions": torch.stack(self.actions)[mask],
            "returns": torch.from_numpy(returns[finished]).to(self.device),
        }
        # keep only the rows some running episode still needs
        self.first = np.maximum(self.first, last_done + 1)
        cut = int(self.first.min())
        for rows_of in (self.observations, self.actions, self.rewards, self.dones):
            del rows_of[:cut]
        self.first -= cut
        return batch

    def state_dict(self) -> dict[str, Any]:
        """The running episodes' steps (tensors and numbers only, for ``weights_only`` checkpoints)."""
        return {
            "observations": list(self.observations),
            "actions": list(self.actions),
            "rewards": [torch.from_numpy(r) for r in self.rewards],
            "dones": [torch.from_numpy(d) for d in self.dones],
            "first": torch.from_numpy(self.first),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.observations, self.actions = list(state["observations"]), list(state["actions"])
        self.rewards = [r.numpy() for r in state["rewards"]]
        self.dones = [d.numpy() for d in state["dones"]]
        self.first = state["first"].numpy().copy()


def build_memory(build: Build) -> EpisodeBuffer:
    return EpisodeBuffer(build.num_envs, build.settings["discount_factor"], build.device)


# ---- loss -----------------------------------------------------------------------------------------


def standardise(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean()) / (x.std(unbiased=False) + 1e-8)


class ReinforceLoss:
    """The registered default loss: called as ``loss(agent, batch, epoch)``, returns the term tensors.

    ``agent`` is the trainer (it holds ``models``); REINFORCE takes one gradient step per batch, so
    ``epoch`` is always 0.
    """

    def __init__(self, value_loss_scale: float, entropy_loss_scale: float) -> None:
        self.value_loss_scale = value_loss_scale
        self.entropy_loss_scale = entropy_loss_scale

    def __call__(self, agent: Any, batch: dict[str, torch.Tensor], epoch: int) -> dict[str, torch.Tensor]:
        policy, value = agent.models["policy"], agent.models.get("value")
        observations, returns = batch["observations"], batch["returns"]
        _, outputs = policy.act({"observations": observations, "taken_actions": batch["actions"]}, role="policy")
        log_prob = outputs["log_prob"].view(-1)
        entropy = policy.get_entropy(role="policy").mean()
        if value is not None:
            values, _ = value.act({"observations": observations}, role="value")
            values = values.view(-1)
            advantages = standardise(returns - values.detach())
            loss_value = self.value_loss_scale * torch.nn.functional.mse_loss(values, returns)
        else:
            advantages = standardise(returns)
            loss_value = torch.zeros((), device=returns.device)
        return {
            "loss_policy": -(advantages * log_prob).mean(),
            "loss_value": loss_value,
            "loss_entropy": -self.entropy_loss_scale * entropy,
            "entropy": entropy.detach(),
        }


def make_reinforce_loss(build: Build) -> ReinforceLoss:
    settings = build.settings
    return ReinforceLoss(settings["value_loss_scale"], settings["entropy_loss_scale"])


# ---- trainer --------------------------------------------------------------------------------------


class ReinforceTrainer(TrainerBase):
    """Collect until ``episodes_per_update`` episodes have ended, then one gradient step on all of them."""

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        seed_everything(build.seed)
        settings = build.settings
        self.models: dict[str, Model] = build.models
        self.policy = build.models["policy"]
        self.memory: EpisodeBuffer = build.memory
        self.loss = build.loss
        self.terms = build.loss_entry.terms
        self.reported = build.loss_entry.reported
        self.episodes_per_update = settings["episodes_per_update"]
        self.grad_norm_clip = settings["grad_norm_clip"]
        parameters = [p for model in self.models.values() for p in model.parameters()]
        self.optimizer = torch.optim.Adam(parameters, lr=settings["learning_rate"])
        self.env = make_vector_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device)
        self.observations, _ = self.env.reset()
        self.ended_since_update = 0

    def collect(self) -> None:
        with torch.no_grad():
            while self.ended_since_update < self.episodes_per_update:
                actions, _ = self.policy.act({"observations": self.observations}, role="policy")
                next_observations, rewards, terminated, truncated, _ = self.env.step(actions)
                rewards = rewards.view(-1).cpu().numpy()
                dones = (terminated | truncated).view(-1).cpu().numpy()
                self.memory.add(self.observations, actions, rewards, dones)
                self.episodes.update(rewards, dones)
                self.ended_since_update += int(dones.sum())
                self.env_steps += self.build.num_envs
                # same-step autoreset: an ended env's row already holds its next episode's first observation
                self.observations = next_observations

    def update(self) -> dict[str, float]:
        batch = self.memory.take_finished()
        for model in self.models.values():
            model.train(True)
        losses = self.loss(self, batch, 0)
        total = sum(losses[term] for term in self.terms)
        self.optimizer.zero_grad(set_to_none=True)
        total.backward()
        if self.grad_norm_clip > 0:
            for model in self.models.values():
                torch.nn.utils.clip_grad_norm_(model.parameters(), self.grad_norm_clip)
        self.optimizer.step()
        for model in self.models.values():
            model.train(False)
        metrics = {f"loss/{name}": losses[name].detach().item() for name in (*self.terms, *self.reported)}
        metrics["train/batch_size"] = float(len(batch["returns"]))
        metrics["train/episodes"] = float(self.ended_since_update)
        return metrics

    def step(self) -> dict[str, float]:
        self.collect()
        metrics = self.update()
        self.ended_since_update = 0
        self.iterations += 1
        metrics["train/lr"] = self.optimizer.param_groups[0]["lr"]
        episode_return = self.episodes.pop_mean()
        if episode_return is not None:
            metrics["train/episode_return"] = episode_return
        return metrics

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            observations = torch.as_tensor(observations, dtype=torch.float32, device=self.build.device)
            actions = policy_mean_or_argmax(self.policy, observations)
        return actions.cpu().numpy()

    def state_dict(self) -> dict[str, Any]:
        # the environments mid-episode too, so a resumed run continues exactly where this one stopped
        return {
            "models": {role: model.state_dict() for role, model in self.models.items()},
            "optimizer": self.optimizer.state_dict(),
            "env": env_state(self.env),
            "observations": self.observations,
            "episodes_running": self.memory.state_dict(),
            "counters": self.counters(),
            "rng": capture_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for role, model in self.models.items():
            model.load_state_dict(state["models"][role])
        self.optimizer.load_state_dict(state["optimizer"])
        load_env_state(self.env, state["env"])
        self.observations = state["observations"].to(self.build.device)
        self.memory.load_state_dict(state["episodes_running"])
        self.load_counters(state["counters"])
        restore_rng_state(state["rng"])

    def close(self) -> None:
        self.env.close()


def build_trainer(build: Build) -> ReinforceTrainer:
    return ReinforceTrainer(build)
