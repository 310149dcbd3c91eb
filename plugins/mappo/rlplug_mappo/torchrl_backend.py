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

from rlplug import Build
from rlplug.backends.torchrl import (
    TorchRLMultiAgentRolloutTrainer,
    agent_group,
    configure_threads,
    done_keys,
    multiagent_actor,
    multiagent_critic,
    rollout_buffer,
    seed_everything,
)
from torchrl.data import ReplayBuffer
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


def make_mappo_loss(build: Build, loss_class: type[MAPPOLoss] = MAPPOLoss) -> MAPPOLoss:
    """The registered default loss ("mappo") for mappo/torchrl: ``MAPPOLoss`` with the group's keys and
    a multi-agent GAE (advantages normalised per minibatch over everything but the agent dimension).
    ``loss_class``: a subclass with the same arguments (rlplug-ippo's ``IPPOLoss``)."""
    s, group = build.settings, agent_group(build.env_id)
    loss = loss_class(
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


class TorchRLMAPPOTrainer(TorchRLMultiAgentRolloutTrainer):
    """One ``step()`` = one collector batch (``rollout_steps`` x ``num_envs`` env steps) + the update."""


build_trainer = TorchRLMAPPOTrainer
