"""TorchRL building blocks for multi-agent cells: MPE and VMAS envs, multi-agent actors and critics.

Envs come from TorchRL's own wrappers and keep TorchRL's multi-agent layout: one agent group
(``"agent"`` for MPE, ``"agents"`` for VMAS) holding ``observation``, ``action``, ``reward`` with an
agent dimension, batch size ``[num_envs]``:

* MPE: ``SerialEnv(num_envs, PettingZooWrapper(mpe2 parallel env))`` (one process: worker processes
  never pay off for cheap envs on small CPUs, reference §5);
* VMAS: ``VmasWrapper`` around the same ``vmas.make_env`` env rlplug's skrl wrapper uses.

Actors and critics are ``MultiAgentMLP``s over the group's observations: the actor decentralised,
the critic centralised (each agent's value sees every agent's observation: MAPPO) or not (IPPO),
parameters shared across agents or not. ``TorchRLMultiAgentRolloutTrainer`` is the on-policy trainer
pointed at the group.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict
from tensordict.nn import AddStateIndependentNormalScale, TensorDictModule
from torch import nn
from torch.distributions import Categorical
from torchrl.envs import EnvBase, SerialEnv
from torchrl.envs.libs.pettingzoo import PettingZooWrapper
from torchrl.envs.libs.vmas import VmasWrapper
from torchrl.modules import IndependentNormal, MultiAgentMLP, ProbabilisticActor

from ...envs.factory import env_errors
from ...envs.multiagent import MultiAgentSpaces, make_mpe_env, make_vmas_env, parse_env_id
from ...contract.multiagent_trainer import MultiAgentTrainerBase
from ..common.nets import ACTIVATIONS
from .onpolicy import TorchRLRolloutTrainer

# ---- environments -------------------------------------------------------------------------------


def _pettingzoo_env(name: str, env_kwargs: Mapping[str, Any]) -> PettingZooWrapper:
    with warnings.catch_warnings():  # "PettingZoo in TorchRL is tested using version == 1.24.3"
        warnings.simplefilter("ignore", UserWarning)
        return PettingZooWrapper(make_mpe_env(name, dict(env_kwargs)), categorical_actions=True, use_mask=False)


def make_multiagent_env(env_id: str, env_kwargs: Mapping[str, Any], num_envs: int, seed: int, device: str = "cpu") -> EnvBase:
    """The training env of a ``mpe:NAME`` / ``vmas:NAME`` id, batch size ``[num_envs]``, seeded."""
    family, name = parse_env_id(env_id)
    with env_errors(env_id, dict(env_kwargs), "training environment"):
        if family == "vmas":
            return VmasWrapper(make_vmas_env(name, dict(env_kwargs), num_envs, seed, device), categorical_actions=True)
        env = SerialEnv(num_envs, partial(_pettingzoo_env, name, dict(env_kwargs)))
        env.set_seed(seed)  # makes the envs
    return env


def library_envs(env: EnvBase) -> list[Any]:
    """The PettingZoo / VMAS envs under a ``make_multiagent_env`` env, whose state a checkpoint keeps."""
    if isinstance(env, SerialEnv):
        return [wrapper._env for wrapper in env._envs]
    return [env._env]


AGENT_GROUPS = {"mpe": "agent", "vmas": "agents"}
"""The group TorchRL's PettingZoo and VMAS wrappers put homogeneous agents in."""


def agent_group(env_id: str) -> str:
    """The one agent group of a multi-agent env id's TorchRL env (``"agent"`` MPE, ``"agents"`` VMAS)."""
    return AGENT_GROUPS[parse_env_id(env_id)[0]]


def done_keys(env_id: str) -> tuple[Any, Any]:
    """``(done, terminated)`` keys for the value estimator: per agent for MPE (the PettingZoo wrapper
    reports them, shaped like the rewards), the team's for VMAS (MAGAE broadcasts them over agents)."""
    group = agent_group(env_id)
    if group == AGENT_GROUPS["mpe"]:
        return (group, "done"), (group, "terminated")
    return "done", "terminated"


# ---- actors and critics -------------------------------------------------------------------------


def _agent_mlp(
    spaces: MultiAgentSpaces, outputs: int, hidden_sizes: Sequence[int], activation: str, centralised: bool, share: bool
) -> MultiAgentMLP:
    return MultiAgentMLP(
        n_agent_inputs=int(np.prod(spaces.observation_space.shape)),
        n_agent_outputs=outputs,
        n_agents=spaces.n_agents,
        centralized=centralised,
        share_params=share,
        depth=len(hidden_sizes),
        num_cells=list(hidden_sizes),
        activation_class=ACTIVATIONS[activation],
    )


def multiagent_actor(
    spaces: MultiAgentSpaces,
    group: str,
    hidden_sizes: Sequence[int],
    activation: str,
    share_parameters: bool,
    initial_log_std: float = 0.0,
) -> ProbabilisticActor:
    """Each agent acts on its own observation: Categorical over Discrete actions (index actions),
    diagonal Gaussian over Box actions with a learned state-independent log std (samples unbounded;
    the envs clamp them to the bounds). Writes ``(group, "action")`` and ``(group, "action_log_prob")``."""
    space = spaces.action_space
    observation = (group, "observation")
    if isinstance(space, gym.spaces.Discrete):
        net = _agent_mlp(spaces, int(space.n), hidden_sizes, activation, False, share_parameters)
        module = TensorDictModule(net, in_keys=[observation], out_keys=[(group, "logits")])
        in_keys, distribution = [(group, "logits")], Categorical
    else:
        action_size = int(np.prod(space.shape))
        scale_shape = action_size if share_parameters else (spaces.n_agents, action_size)
        net = nn.Sequential(
            _agent_mlp(spaces, action_size, hidden_sizes, activation, False, share_parameters),
            AddStateIndependentNormalScale(scale_shape, scale_mapping="exp", init_value=initial_log_std),
        )
        module = TensorDictModule(net, in_keys=[observation], out_keys=[(group, "loc"), (group, "scale")])
        in_keys, distribution = {"loc": (group, "loc"), "scale": (group, "scale")}, IndependentNormal
    return ProbabilisticActor(
        module,
        in_keys=in_keys,
        out_keys=[(group, "action")],
        distribution_class=distribution,
        return_log_prob=True,
        log_prob_key=(group, "action_log_prob"),
    )


def multiagent_critic(
    spaces: MultiAgentSpaces, group: str, hidden_sizes: Sequence[int], activation: str, centralised: bool, share_parameters: bool
) -> TensorDictModule:
    """``(group, "state_value")`` per agent, from every agent's observation (centralised) or its own."""
    net = _agent_mlp(spaces, 1, hidden_sizes, activation, centralised, share_parameters)
    return TensorDictModule(net, in_keys=[(group, "observation")], out_keys=[(group, "state_value")])


def group_observation_batch(observations: np.ndarray, group: str, device: str = "cpu") -> TensorDict:
    """``[B, n_agents, obs_dim]`` observations as the tensordict multi-agent actors read."""
    x = torch.as_tensor(observations, dtype=torch.float32, device=device)
    return TensorDict({group: TensorDict({"observation": x}, batch_size=x.shape[:2])}, batch_size=x.shape[:1])


# ---- the multi-agent rollout trainer --------------------------------------------------------------


class TorchRLMultiAgentRolloutTrainer(MultiAgentTrainerBase, TorchRLRolloutTrainer):
    """The on-policy rollout trainer on an MPE / VMAS env's agent group: one ``step()`` = one collector
    batch (``rollout_steps`` x ``num_envs`` env steps) and the update, keys under the group.

    Training returns are per agent (the agents' rewards averaged each step, episodes cut by the team's
    done); an episode's end, its step limit included, ends the return (as on rlplug's skrl backend): MPE
    and VMAS episodes are fixed-horizon tasks, so the cut is part of the task. The MPE worlds / VMAS
    scenario are checkpointed mid-episode.
    """

    def __init__(self, build: Any) -> None:
        self.group = agent_group(build.env_id)
        self.observation_key, self.value_key, self.action_key = ((self.group, key) for key in ("observation", "state_value", "action"))
        self.done_key, self.terminated_key = done_keys(build.env_id)
        super().__init__(build)

    def make_env(self, build: Any) -> EnvBase:
        return make_multiagent_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device)

    def step_rewards(self, batch: TensorDict) -> torch.Tensor:
        """Per-agent returns: the agents' rewards averaged each step, episodes cut by the team's done."""
        return batch["next", self.group, "reward"].mean(dim=-2).reshape(batch.shape)

    def observation_batch(self, observations: np.ndarray) -> TensorDict:
        return group_observation_batch(observations, self.group, self.build.device)

    def raw_envs(self) -> list[Any]:
        return library_envs(self.env)  # the MPE worlds / VMAS scenario mid-episode
