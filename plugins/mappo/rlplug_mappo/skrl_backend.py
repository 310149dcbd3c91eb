"""MAPPO on skrl: per-agent models and memories, the clipped loss, the agent that delegates to it, the trainer.

Reads top to bottom like a single-file MAPPO on skrl 2.1. The agent is skrl's own ``MAPPO`` with one
change: ``update()`` hands each agent's minibatch to the registered loss object (``build.loss``)
instead of computing the loss inline. The default loss, ``MAPPOClipLoss``, is skrl's math line for
line. skrl's MAPPO and IPPO are the same code; the critic model decides: it reads the global state
(MAPPO) or only the agent's observation (IPPO, ``centralised_critic = false``). Shared parameters are
skrl's way: every agent holds the same policy and value objects, updated jointly (see ``update``).
The epoch loop and the rollout trainer are the on-policy family's, shared with PPO.
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.skrl import (
    OnPolicyAgent,
    SkrlMultiAgentRolloutTrainer,
    agent_models,
    clipped_ppo_terms,
    compute_returns_and_advantages,
    configure_threads,
    rollout_epochs,
    rollout_learner,
    rollout_memory,
    seed_skrl,
)
from skrl.memories.torch import RandomMemory
from skrl.multi_agents.torch.mappo import MAPPO, MAPPO_CFG

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, dict[str, Any]]:
    """``{uid: {"policy", "value"}}``: Categorical or Gaussian policies, centralised or per-agent critics."""
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    return agent_models(
        build.extras["multiagent"], build.device, s["hidden_sizes"], s["activation"], s["centralised_critic"],
        s["share_parameters"], s["initial_log_std"],
    )  # fmt: skip


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> dict[str, RandomMemory]:
    """One rollout per agent: skrl's (MA)PPO needs ``memory_size == rollouts`` (unfilled rows are NaN)."""
    return {uid: rollout_memory(build) for uid in build.extras["multiagent"].agents}


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


class PerAgentLossDelegation(OnPolicyAgent):
    """Mixed in before skrl's MAPPO or IPPO (the same update upstream): the per-agent ``update()`` asks
    ``loss(agent, batch, uid, epoch)`` for the loss terms.

    Everything else is upstream's update (the family's ``rollout_epochs``): GAE per agent, value
    preprocessing, epochs and minibatches, KL early stopping, gradient clipping, the per-epoch
    scheduler step. ``terms`` are summed and optimised; ``terms`` and ``reported`` are tracked as
    ``"Loss / <term> (<uid>)"``, averaged over the agent's optimised minibatches. One deliberate
    difference, for shared models only: see ``update``.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
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
            self.update_agents(uid, [uid])
        elif uid == self.possible_agents[0]:
            self.update_agents(uid, self.possible_agents)
        # with shared models, later agents' calls have nothing left to do

    def update_agents(self, uid: str, sources: list[str]) -> None:
        learners = {source: rollout_learner(self, source) for source in sources}
        for source, learner in learners.items():
            compute_returns_and_advantages(self, learner, self._current_next_observations[source], self._current_next_states[source])
        memories = [learner.memory for learner in learners.values()]
        means = rollout_epochs(self, learners[uid], lambda batch, epoch: self.loss(self, batch, uid, epoch), memories)
        for source in sources:
            for name, value in means.items():
                self.track_data(f"Loss / {name} ({source})", value)


class LossDelegatingMAPPO(PerAgentLossDelegation, MAPPO):
    """skrl's MAPPO with rlplug's per-agent loss delegation (``PerAgentLossDelegation``)."""


# ---- trainer ------------------------------------------------------------------------------------


class SkrlMAPPOTrainer(SkrlMultiAgentRolloutTrainer):
    """One ``step()`` = one rollout of ``rollouts`` vector steps + every agent's update, on an MPE / VMAS env."""

    agent_class = LossDelegatingMAPPO
    config_class = MAPPO_CFG


build_trainer = SkrlMAPPOTrainer
