"""A cooperative multi-agent env seen as one agent, the team, and the off-policy loop over it.

Value-decomposition learners (QMIX, VDN) learn from joint transitions: every agent's observation and
action of one env step, the team's reward, the team's episode end. ``TeamView`` presents an MPE / VMAS /
``pz:`` vector env (``make_multiagent_vector_env``) that way, so skrl's single-agent machinery (a DQN-shaped
agent, its replay memory, target network, checkpoints) and rlplug's off-policy loop (``SkrlOffPolicyTrainer``:
seeded warm-up, ``utd_ratio`` gradient steps, hooks, resume) serve a team unchanged:

* observations ``[num_envs, n_agents * obs_dim]``: the agents' flat observations side by side, in agent order
  (the first agent's first), which is also the global state rlplug's mixers read (MPE's ``state()`` is this);
* actions ``[num_envs, n_agents]``, one index per agent (a ``MultiDiscrete`` joint action space);
* the reward: the agents' rewards averaged, so the team's return is the mean per-agent return rlplug reports
  for every multi-agent cell; episodes end for the whole team.

An episode cut by a PettingZoo env's step limit (MPE's ``max_cycles``: truncated, not terminated) is reported
truncated, with the joint last observations under ``infos["final_obs"]``, so the learner bootstraps from the state
it was cut in, as every single-agent off-policy cell does and as TorchRL's PettingZoo env reports it (its root
``terminated`` stays false there). VMAS tells no step limit apart: its ends are terminations on both backends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import torch

from ...contract.hookspecs import Build
from ...contract.multiagent_trainer import MultiAgentTrainerBase
from ...envs.state import deep_restore, deep_snapshot
from ...envs.torch_native import FINAL_OBS_KEY
from ..common.team import team_spaces
from .multiagent import make_multiagent_vector_env
from .offpolicy import SkrlOffPolicyTrainer


class TeamView:
    """A skrl multi-agent vector env (per-agent dicts of ``[num_envs, ...]`` tensors) as one agent's env."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.agents = list(env.possible_agents)
        self.num_envs = env.num_envs

    def joint(self, observations: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([observations[uid].reshape(self.num_envs, -1) for uid in self.agents], dim=-1)

    def reset(self) -> tuple[torch.Tensor, dict[str, Any]]:
        observations, infos = self.env.reset()
        return self.joint(observations), infos

    def step(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        per_agent = {uid: actions[:, i : i + 1] for i, uid in enumerate(self.agents)}
        observations, rewards, terminated, truncated, infos = self.env.step(per_agent)
        team_reward = torch.stack([rewards[uid].reshape(self.num_envs, 1) for uid in self.agents]).mean(0)
        first = self.agents[0]  # the wrappers end episodes for the whole team, marked terminated
        terminated, truncated = terminated[first], truncated[first]
        time_limits = getattr(self.env, "time_limit_ends", None)  # VectorPettingZooEnv's (VMAS: none)
        if time_limits is not None:
            terminated, truncated = terminated & ~time_limits, truncated | time_limits
            infos = {**infos, FINAL_OBS_KEY: self.joint(self.env.final_observations)}
        return self.joint(observations), team_reward, terminated, truncated, infos

    def close(self) -> None:
        self.env.close()


class SkrlTeamOffPolicyTrainer(MultiAgentTrainerBase, SkrlOffPolicyTrainer):
    """``SkrlOffPolicyTrainer`` on a multi-agent env's team (``TeamView``): the agent (``agent_class``) acts on
    joint observations with joint actions; the warm-up draws every agent's action uniformly; evaluation and
    export read ``[B, n_agents, obs_dim]`` observations (flattened to the joint ones) and return ``[B, n_agents]``
    actions through ``policy_role`` / ``policy_output``. The MPE worlds / VMAS scenario are checkpointed mid-episode.
    """

    def make_env(self, build: Build) -> TeamView:
        return TeamView(make_multiagent_vector_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device))

    def agent_spaces(self, build: Build) -> tuple[gym.Space, gym.Space]:
        return team_spaces(build)

    def agent_kwargs(self, build: Build) -> dict[str, Any]:
        return {**super().agent_kwargs(build), "observation_space": self.observation_space, "action_space": self.action_space}

    def snapshot_env(self) -> Any:
        return deep_snapshot(self.env.env)  # the MPE worlds / VMAS scenario mid-episode, their RNGs

    def restore_env(self, state: Any) -> None:
        deep_restore(self.env.env, state)
        return None  # the episodes resume where they were
