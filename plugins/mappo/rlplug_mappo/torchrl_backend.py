"""MAPPO on TorchRL: multi-agent actor and critic, rollout buffer, ``MAPPOLoss`` + MAGAE, rlplug's loop.

Reads top to bottom like a single-file MAPPO on TorchRL 0.14 (the VMAS tutorial's loop): a
``Collector`` gathers one batch of ``rollout_steps`` steps from ``num_envs`` envs, advantages come from
the loss's own multi-agent GAE, then ``epochs`` passes of minibatches drawn without replacement go
through the registered loss (``build.loss``), whose optimised terms (``build.loss_entry.terms``) are
summed, clipped by gradient norm and stepped with Adam: the on-policy family's
``TorchRLRolloutTrainer``, shared with PPO, pointed at the env's agent group. Keys live under that group.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from rlplug import Build
from rlplug.backends.torchrl import (
    MultiAgentTrainerBase,
    TorchRLRolloutTrainer,
    agent_group,
    configure_threads,
    done_keys,
    group_observation_batch,
    library_envs,
    make_multiagent_env,
    multiagent_actor,
    multiagent_critic,
    rollout_buffer,
    seed_everything,
)
from tensordict import TensorDict
from torchrl.data import ReplayBuffer
from torchrl.envs import EnvBase
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
    return rollout_buffer(build)


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
        functional=False,  # the modules themselves, not parameter copies swapped in per call
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


class TorchRLMAPPOTrainer(MultiAgentTrainerBase, TorchRLRolloutTrainer):
    """One ``step()`` = one collector batch (``rollout_steps`` x ``num_envs`` env steps) + the update.

    An episode's end, its step limit included, ends the return (as on rlplug's skrl backend): MPE and
    VMAS episodes are fixed-horizon tasks, so the cut is part of the task.
    """

    def __init__(self, build: Build) -> None:
        self.group = agent_group(build.env_id)
        self.observation_key, self.value_key, self.action_key = ((self.group, key) for key in ("observation", "state_value", "action"))
        self.done_key, self.terminated_key = done_keys(build.env_id)
        super().__init__(build)

    def make_env(self, build: Build) -> EnvBase:
        return make_multiagent_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device)

    def step_rewards(self, batch: TensorDict) -> torch.Tensor:
        """Per-agent returns: the agents' rewards averaged each step, episodes cut by the team's done."""
        return batch["next", self.group, "reward"].mean(dim=-2).reshape(batch.shape)

    def observation_batch(self, observations: np.ndarray) -> TensorDict:
        return group_observation_batch(observations, self.group, self.build.device)

    def raw_envs(self) -> list[Any]:
        return library_envs(self.env)  # the MPE worlds / VMAS scenario mid-episode


def build_trainer(build: Build) -> TorchRLMAPPOTrainer:
    return TorchRLMAPPOTrainer(build)
