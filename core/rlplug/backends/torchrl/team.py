"""The off-policy loop over a cooperative multi-agent env's agent group: what value-decomposition cells
(QMIX, VDN) train with on TorchRL.

``TorchRLTeamOffPolicyTrainer`` is ``TorchRLOffPolicyTrainer`` (replay, warm-up, ``utd_ratio`` gradient steps,
hooks, resume) pointed at ``make_multiagent_env``'s env through TorchRL's ``Collector``: a stored transition is
one env step of the whole group (``(group, "observation")``, ``(group, "action")`` with an agent dimension), and
the team's reward, the agents' rewards averaged, is written at the root ``("next", "reward")``, where
``QMixerLoss`` and the episode returns read it (the mean per-agent return every multi-agent cell reports).
Episodes end for the whole team (the root ``done``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDict
from torchrl.envs import EnvBase, ExplorationType, set_exploration_type

from ...contract.hookspecs import Build
from ...contract.multiagent_trainer import MultiAgentTrainerBase
from ..common.team import team_spaces
from .multiagent import agent_group, group_observation_batch, group_observation_key, library_envs, make_multiagent_env
from .offpolicy import TorchRLOffPolicyTrainer


class TorchRLTeamOffPolicyTrainer(MultiAgentTrainerBase, TorchRLOffPolicyTrainer):
    """The off-policy loop on an MPE / VMAS / ``pz:`` env's agent group; the policy (``policy_model``) writes
    ``(group, "action")`` and is evaluated on ``[B, n_agents, obs_dim]`` observations in DETERMINISTIC mode."""

    def __init__(self, build: Build) -> None:
        team_spaces(build)  # refuses action masks and non-Discrete actions in one line
        self.group = agent_group(build.env_id)
        super().__init__(build)

    def make_env(self, build: Build) -> EnvBase:
        return make_multiagent_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device)

    def lean_collection(self, build: Build) -> bool:
        return False  # the lean path steps a gymnasium vector env; a multi-agent env goes through the Collector

    def stored_keys(self, build: Build) -> tuple[Any, ...]:
        observation = group_observation_key(build.extras["multiagent"], self.group)
        # no "truncated": VMAS reports none, and every episode end is the team's terminal step (fixed horizons)
        return (observation, (self.group, "action"), ("next", *observation), *(("next", key) for key in ("reward", "done", "terminated")))

    def collected(self, batch: TensorDict) -> TensorDict:
        """The team's reward at ``("next", "reward")``: the agents' rewards averaged."""
        batch.set(("next", "reward"), batch.get(("next", self.group, "reward")).mean(dim=-2))
        return batch

    def raw_envs(self) -> list[Any]:
        return library_envs(self.env)  # the MPE worlds / VMAS scenario mid-episode

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:
        inputs = group_observation_batch(observations, self.group, self.build.device)
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            return self.policy(inputs).get((self.group, "action")).cpu().numpy()

    def evaluation_act(self) -> Any:
        return self.act_deterministic
