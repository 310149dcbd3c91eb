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
import numpy as np
import torch
from torch import nn

from ...contract.hookspecs import Build
from ...contract.multiagent_trainer import MultiAgentTrainerBase
from ...envs.state import deep_restore, deep_snapshot
from ...envs.torch_native import FINAL_OBS_KEY
from ..common.export import ExportedPolicy, policy_signature
from ..common.team import team_spaces
from .multiagent import joint_flat_observations, make_multiagent_vector_env
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


class JointFlatPolicy(nn.Module):
    """A team policy over per-agent inputs ``[B, n_agents, ...]`` (a masked agent's ``action_mask`` and
    ``observation``, sorted by name): each agent's inputs concatenated, then the agents' side by side, as
    ``TeamView`` joins them; ``policy`` maps those joint observations to ``[B, n_agents]`` actions."""

    def __init__(self, policy: nn.Module) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.policy(torch.cat([x.reshape(*x.shape[:2], -1) for x in inputs], dim=-1).flatten(1))


class SkrlTeamOffPolicyTrainer(MultiAgentTrainerBase, SkrlOffPolicyTrainer):
    """``SkrlOffPolicyTrainer`` on a multi-agent env's team (``TeamView``): the agent (``agent_class``) acts on
    joint observations with joint actions; the warm-up draws every agent's action uniformly (among its valid ones
    where the env gives action masks); evaluation and export read ``[B, n_agents, obs_dim]`` observations (or a
    masked env's ``action_mask`` and ``observation`` of that shape) and return ``[B, n_agents]`` actions through
    ``policy_role`` / ``policy_output``. The MPE worlds / VMAS scenario are checkpointed mid-episode.
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

    def _actions(self, observations: torch.Tensor, timestep: int) -> torch.Tensor:
        spaces = self.build.extras["multiagent"]
        if self.env_steps >= self.random_warmup or not spaces.masked:
            return super()._actions(observations, timestep)
        # the uniform warm-up among each agent's valid actions, drawn from the joint space's seeded (and checkpointed) generator
        masks = observations.unflatten(-1, (spaces.n_agents, -1))[..., : spaces.mask_size].cpu().numpy() > 0.5
        generator = self.random_actions.np_random
        sample = [[generator.choice(np.flatnonzero(agent)) for agent in env] for env in masks]
        return torch.as_tensor(np.asarray(sample, dtype=np.int64), device=self.build.device)

    def act_deterministic(self, observations: Any) -> Any:
        joint = joint_flat_observations(observations, self.build.device).flatten(1)  # each agent's inputs, side by side
        with torch.no_grad():
            return self.deterministic_policy()(joint).cpu().numpy()

    def export_policy(self) -> nn.Module:
        """One module over ``[B, n_agents, ...]`` inputs: the agents' joint observations, then ``policy_role``'s
        ``policy_output`` (every agent's action)."""
        return ExportedPolicy(JointFlatPolicy(self.deterministic_policy()), policy_signature(self.build))
