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

import numpy as np
import torch
from rlplug import Build
from rlplug.backends.skrl import (
    MultiAgentTrainerBase,
    OnPolicyAgent,
    SkrlRolloutTrainer,
    agent_models,
    clipped_ppo_terms,
    compute_returns_and_advantages,
    configure_threads,
    deep_restore,
    deep_snapshot,
    joint_deterministic_actions,
    make_multiagent_vector_env,
    rollout_config,
    rollout_epochs,
    rollout_learner,
    rollout_memory,
    seed_skrl,
    skrl_joint_policy_export,
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


class LossDelegatingMAPPO(OnPolicyAgent, MAPPO):
    """skrl's MAPPO whose per-agent ``update()`` asks ``loss(agent, batch, uid, epoch)`` for the loss terms.

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
            self._update(uid, [uid])
        elif uid == self.possible_agents[0]:
            self._update(uid, self.possible_agents)
        # with shared models, later agents' calls have nothing left to do

    def _update(self, uid: str, sources: list[str]) -> None:
        learners = {source: rollout_learner(self, source) for source in sources}
        for source, learner in learners.items():
            compute_returns_and_advantages(self, learner, self._current_next_observations[source], self._current_next_states[source])
        memories = [learner.memory for learner in learners.values()]
        means = rollout_epochs(self, learners[uid], lambda batch, epoch: self.loss(self, batch, uid, epoch), memories)
        for source in sources:
            for name, value in means.items():
                self.track_data(f"Loss / {name} ({source})", value)


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
    agents = list(build.extras["multiagent"].agents)
    # the trainer marks every episode end (a step limit included) as terminated: nothing to bootstrap
    cfg = rollout_config(build, MAPPO_CFG, time_limit_bootstrap=False)
    cfg.value_preprocessor_kwargs = {uid: dict(cfg.value_preprocessor_kwargs) for uid in agents}
    return complete_per_agent_kwargs(cfg, agents)


# ---- trainer ------------------------------------------------------------------------------------


class SkrlMAPPOTrainer(MultiAgentTrainerBase, SkrlRolloutTrainer):
    """One ``step()`` = one rollout of ``rollouts`` vector steps + every agent's update, on an MPE / VMAS env."""

    def __init__(self, build: Build) -> None:
        self.agents = list(build.extras["multiagent"].agents)
        super().__init__(build)

    def make_env(self, build: Build) -> Any:
        return make_multiagent_vector_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device)

    def make_agent(self, build: Build) -> LossDelegatingMAPPO:
        spaces = build.extras["multiagent"]
        return LossDelegatingMAPPO(
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

    def track_episodes(self, rewards: Any, terminated: Any, truncated: Any) -> None:
        """Per-agent returns: the agents' rewards averaged each step; the wrappers end episodes for the whole team."""
        team_reward = torch.stack([rewards[uid] for uid in self.agents]).mean(0)
        self.episodes.update(team_reward.cpu().numpy(), terminated[self.agents[0]].cpu().numpy())

    def stored_outcome(self, next_observations: Any, terminated: Any, truncated: Any, infos: Any) -> tuple[Any, Any]:
        return next_observations, terminated  # the wrappers mark every episode end terminated

    def update_metrics(self, tracked: Any) -> dict[str, float]:
        """Per-term means over agents."""
        metrics = {
            f"loss/{name}": float(np.mean([tracked[f"Loss / {name} ({uid})"][-1] for uid in self.agents]))
            for name in self.agent.logged_terms
        }
        metrics["train/lr"] = self.agent.optimizers[self.agents[0]].param_groups[0]["lr"]
        return metrics

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            x = torch.as_tensor(observations, dtype=torch.float32, device=self.build.device)
            return joint_deterministic_actions(self.agent.policies, self.agents, x).cpu().numpy()

    def export_policy(self) -> torch.nn.Module:
        """One module over ``[B, n_agents, obs_dim]``: each agent's policy mean (clamped) or argmax."""
        return skrl_joint_policy_export(self.build, self.agent.policies, self.agents)

    def snapshot_env(self) -> Any:
        return deep_snapshot(self.env)  # the MPE worlds / VMAS scenario mid-episode, their RNGs

    def restore_env(self, state: Any) -> None:
        deep_restore(self.env, state)


def build_trainer(build: Build) -> SkrlMAPPOTrainer:
    return SkrlMAPPOTrainer(build)
