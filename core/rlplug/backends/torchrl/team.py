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
from ...envs.multiagent import MASK_KEY
from ..common.team import team_spaces
from .multiagent import agent_group, group_observation_batch, group_observation_key, library_envs, make_multiagent_env
from .offpolicy import TorchRLOffPolicyTrainer


def team_mask_key(build: Build) -> tuple[str, str] | None:
    """``(group, "action_mask")`` where the agents' observations carry action masks (TorchRL's PettingZoo env moves
    them there), else ``None``: what a ``QValueModule`` and an ``EGreedyModule`` take as ``action_mask_key``."""
    return (agent_group(build.env_id), MASK_KEY) if build.extras["multiagent"].masked else None


class TorchRLTeamOffPolicyTrainer(MultiAgentTrainerBase, TorchRLOffPolicyTrainer):
    """The off-policy loop on an MPE / VMAS / ``pz:`` env's agent group; the policy (``policy_model``) writes
    ``(group, "action")`` and is evaluated on ``[B, n_agents, obs_dim]`` observations in DETERMINISTIC mode."""

    def __init__(self, build: Build) -> None:
        team_spaces(build)  # refuses non-Discrete actions in one line
        self.group = agent_group(build.env_id)
        super().__init__(build)

    def make_env(self, build: Build) -> EnvBase:
        return make_multiagent_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device)

    def lean_collection(self, build: Build) -> bool:
        return False  # the lean path steps a gymnasium vector env; a multi-agent env goes through the Collector

    def random_warmup_frames(self, build: Build) -> int:
        """``learning_starts``; none where the agents have action masks: the env's ``rand_action`` ignores them, so
        the warm-up is the exploration policy's, which a cell makes uniformly random among the valid actions."""
        return 0 if self.masked_warmup else self.learning_starts

    @property
    def masked_warmup(self) -> bool:
        """The random warm-up of a masked env, left to the exploration policy (``random_warmup_frames``)."""
        return self.build.extras["multiagent"].masked and self.learning_starts > 0

    def stored_keys(self, build: Build) -> tuple[Any, ...]:
        # the next step's mask bounds the target's max; no "truncated": VMAS reports none (its ends are terminal)
        inputs = [group_observation_key(build.extras["multiagent"], self.group), *filter(None, [team_mask_key(build)])]
        return (*inputs, (self.group, "action"), *(("next", *key) for key in inputs),
                *(("next", key) for key in ("reward", "done", "terminated")))  # fmt: skip

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
