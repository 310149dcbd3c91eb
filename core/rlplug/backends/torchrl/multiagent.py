"""TorchRL building blocks for multi-agent cells: MPE and VMAS envs, multi-agent actors and critics.

Envs come from TorchRL's own wrappers and keep TorchRL's multi-agent layout: one agent group
(``"agent"`` for MPE, ``"agents"`` for VMAS) holding ``observation``, ``action``, ``reward`` with an
agent dimension, batch size ``[num_envs]``:

* MPE and ``pz:`` envs: ``SerialEnv(num_envs, PettingZooWrapper(parallel env))`` (one process: worker
  processes never pay off for cheap envs on small CPUs, reference §5); a ``pz:`` env's agents form one
  group ``"agents"`` whatever their names; both classes are rlplug's lean subclasses (``lean_pettingzoo``:
  upstream's step outputs, bit for bit, with less per-step plumbing);
* VMAS: ``VmasWrapper`` around the same ``vmas.make_env`` env rlplug's skrl wrapper uses.

Actors and critics are ``MultiAgentMLP``s over the group's observations: the actor decentralised,
the critic centralised (each agent's value sees every agent's observation: MAPPO) or not (IPPO),
parameters shared across agents or not. ``TorchRLMultiAgentRolloutTrainer`` is the on-policy trainer
pointed at the group.

Action masks: TorchRL's ``PettingZooWrapper`` moves a Dict observation's ``action_mask`` to
``(group, "action_mask")`` (bool), leaving ``(group, "observation", "observation")``. The actor samples
from a ``MaskedCategorical`` over the logits and that mask (masked actions: zero probability, finite
entropy), so the loss, which rebuilds the distribution from the stored batch, masks the same way; the
critic reads only the observations.
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
from torchrl.modules import IndependentNormal, MaskedCategorical, MultiAgentMLP, ProbabilisticActor

from ...envs.factory import env_errors
from ...envs.multiagent import MASK_KEY, PETTINGZOO_FAMILIES, MultiAgentSpaces, make_pettingzoo_env, make_vmas_env, parse_env_id
from ...contract.multiagent_trainer import MultiAgentTrainerBase
from ..common.export import ExportedPolicy, policy_signature
from ..common.nets import ACTIVATIONS
from .export import agent_nets
from .lean_pettingzoo import LeanPettingZooWrapper, LeanSerialEnv
from .onpolicy import TorchRLRolloutTrainer

# ---- environments -------------------------------------------------------------------------------


def _pettingzoo_env(env_id: str, env_kwargs: Mapping[str, Any]) -> PettingZooWrapper:
    # upstream's wrapper with a leaner step where it applies (lean_pettingzoo.py), the same step outputs
    env = make_pettingzoo_env(env_id, dict(env_kwargs))
    group_map = {AGENT_GROUPS["pz"]: list(env.possible_agents)} if parse_env_id(env_id)[0] == "pz" else None
    with warnings.catch_warnings():  # "PettingZoo in TorchRL is tested using version == 1.24.3"
        warnings.simplefilter("ignore", UserWarning)
        return LeanPettingZooWrapper(env, categorical_actions=True, use_mask=False, group_map=group_map)


def make_multiagent_env(env_id: str, env_kwargs: Mapping[str, Any], num_envs: int, seed: int, device: str = "cpu") -> EnvBase:
    """The training env of a ``mpe:NAME`` / ``vmas:NAME`` / ``pz:MODULE:FACTORY`` id, batch size ``[num_envs]``, seeded."""
    family, name = parse_env_id(env_id)
    with env_errors(env_id, dict(env_kwargs), "training environment"):
        if family == "vmas":
            return VmasWrapper(make_vmas_env(name, dict(env_kwargs), num_envs, seed, device), categorical_actions=True)
        env = LeanSerialEnv(num_envs, partial(_pettingzoo_env, env_id, dict(env_kwargs)))
        env.set_seed(seed)  # makes the envs
    return env


def library_envs(env: EnvBase) -> list[Any]:
    """The PettingZoo / VMAS envs under a ``make_multiagent_env`` env, whose state a checkpoint keeps."""
    if isinstance(env, SerialEnv):
        return [wrapper._env for wrapper in env._envs]
    return [env._env]


AGENT_GROUPS = {"mpe": "agent", "vmas": "agents", "pz": "agents"}
"""The group TorchRL's PettingZoo and VMAS wrappers put homogeneous agents in (``pz``: rlplug names it)."""


def agent_group(env_id: str) -> str:
    """The one agent group of a multi-agent env id's TorchRL env (``"agent"`` MPE, ``"agents"`` VMAS and ``pz``)."""
    return AGENT_GROUPS[parse_env_id(env_id)[0]]


def done_keys(env_id: str) -> tuple[Any, Any]:
    """``(done, terminated)`` keys for the value estimator: per agent for PettingZoo envs (the wrapper
    reports them, shaped like the rewards), the team's for VMAS (MAGAE broadcasts them over agents)."""
    group = agent_group(env_id)
    if parse_env_id(env_id)[0] in PETTINGZOO_FAMILIES:
        return (group, "done"), (group, "terminated")
    return "done", "terminated"


def group_observation_key(spaces: MultiAgentSpaces, group: str) -> tuple[str, ...]:
    """Where the networks' input lives: ``(group, "observation")``, or under it for masked agents (TorchRL
    keeps the rest of a Dict observation whose ``action_mask`` it moved out)."""
    return (group, "observation", "observation") if spaces.masked else (group, "observation")


# ---- actors and critics -------------------------------------------------------------------------


def agent_mlp(
    spaces: MultiAgentSpaces, outputs: int, hidden_sizes: Sequence[int], activation: str, centralised: bool, share: bool
) -> MultiAgentMLP:
    """A ``MultiAgentMLP`` from every agent's observation features to ``outputs`` values each: ``centralised``
    reads all agents' observations, ``share`` one set of weights for all agents."""
    return MultiAgentMLP(
        n_agent_inputs=int(np.prod(spaces.feature_space.shape)),
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
    the envs clamp them to the bounds), MaskedCategorical over the allowed actions of masked agents.
    Writes ``(group, "action")`` and ``(group, "action_log_prob")``."""
    space = spaces.action_space
    observation = group_observation_key(spaces, group)
    if isinstance(space, gym.spaces.Discrete):
        net = agent_mlp(spaces, int(space.n), hidden_sizes, activation, False, share_parameters)
        module = TensorDictModule(net, in_keys=[observation], out_keys=[(group, "logits")])
        in_keys, distribution = [(group, "logits")], Categorical
        if spaces.masked:
            in_keys, distribution = {"logits": (group, "logits"), "mask": (group, MASK_KEY)}, MaskedCategorical
    else:
        action_size = int(np.prod(space.shape))
        scale_shape = action_size if share_parameters else (spaces.n_agents, action_size)
        net = nn.Sequential(
            agent_mlp(spaces, action_size, hidden_sizes, activation, False, share_parameters),
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
    net = agent_mlp(spaces, 1, hidden_sizes, activation, centralised, share_parameters)
    return TensorDictModule(net, in_keys=[group_observation_key(spaces, group)], out_keys=[(group, "state_value")])


def group_observation_batch(observations: Any, group: str, device: str = "cpu") -> TensorDict:
    """``[B, n_agents, obs_dim]`` observations (or masked agents' ``{"action_mask", "observation"}`` of
    those) as the tensordict multi-agent actors read."""
    if isinstance(observations, Mapping):
        x = torch.as_tensor(np.asarray(observations["observation"]), dtype=torch.float32, device=device)
        mask = torch.as_tensor(np.asarray(observations[MASK_KEY]), device=device) > 0.5  # as the export reads it
        agents = {"observation": TensorDict({"observation": x}, batch_size=x.shape[:2]), MASK_KEY: mask}
        return TensorDict({group: TensorDict(agents, batch_size=x.shape[:2])}, batch_size=x.shape[:1])
    x = torch.as_tensor(observations, dtype=torch.float32, device=device)
    return TensorDict({group: TensorDict({"observation": x}, batch_size=x.shape[:2])}, batch_size=x.shape[:1])


class MaskedJointArgmax(nn.Module):
    """A masked multi-agent actor's deterministic action as a plain module: ``(action_mask, observation)``,
    each ``[B, n_agents, ...]`` (the exported inputs, sorted by name), in; the argmax of each agent's
    logits over its allowed actions out."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, action_mask: torch.Tensor, observation: torch.Tensor) -> torch.Tensor:
        logits = self.net(observation)
        return logits.masked_fill(action_mask <= 0.5, torch.finfo(logits.dtype).min).argmax(dim=-1)


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
        self.value_key, self.action_key = ((self.group, key) for key in ("state_value", "action"))
        self.observation_key = group_observation_key(build.extras["multiagent"], self.group)
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

    def export_policy(self) -> nn.Module:
        """Masked agents: ``(action_mask, observation) -> argmax over allowed actions``; else the family's export."""
        if not self.build.extras["multiagent"].masked:
            return super().export_policy()
        net = self.actor.module[0].module  # the logits' MultiAgentMLP (multiagent_actor)
        return ExportedPolicy(MaskedJointArgmax(agent_nets(net)), policy_signature(self.build))
