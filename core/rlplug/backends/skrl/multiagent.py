"""skrl building blocks for multi-agent cells: vectorised MPE and VMAS envs, per-agent models, and the
rollout trainer multi-agent cells subclass.

Both envs are skrl ``MultiAgentEnvWrapper``s that return per-agent dicts of ``[num_envs, ...]``
tensors, reset ended episodes themselves, and expose the global state (every agent's observation
concatenated) through ``state()``, as skrl's MAPPO expects:

* ``VectorPettingZooEnv``: ``num_envs`` PettingZoo envs (MPE or a user's ``pz:`` env), each behind
  skrl's own ``PettingZooWrapper`` (which handles one env and leaves resets to skrl's trainer),
  stepped in turn;
* ``VmasEnvWrapper``: skrl has no VMAS wrapper; this one puts a VMAS ``Environment`` (natively
  vectorised, torch tensors) behind skrl's multi-agent wrapper base.

An episode that ends (MPE's ``max_cycles``, VMAS's ``max_steps`` or every goal reached) is reported
as ``terminated`` for every agent and reset in the same step: the returned observations are the next
episode's first ones. A masked agent's observation reaches the models flattened as skrl flattens a
Dict, keys sorted: ``[action_mask (n_actions), observation]``; ``MaskedCategoricalPolicy`` and
``AgentValue`` split it there, and a ``pz:`` env's global state is the agents' ``observation`` parts
(no masks) concatenated. rlplug's on-policy multi-agent cells treat the step limit as the end of the return
on both backends (MPE and VMAS episodes are fixed-horizon tasks), so they need no true last observation;
``VectorPettingZooEnv`` still keeps the last observations and which ends were the step limit, for the team
learners that bootstrap there (``rlplug.backends.skrl.team``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import skrl
import torch
from skrl.envs.wrappers.torch.pettingzoo_envs import PettingZooWrapper
from skrl.envs.wrappers.torch.base import MultiAgentEnvWrapper
from skrl.models.torch import CategoricalMixin, DeterministicMixin, Model

from ...envs.factory import env_errors
from ...envs.state import deep_restore, deep_snapshot
from ...envs.multiagent import MultiAgentSpaces, boxed_mask, gymnasium_space, make_pettingzoo_env, make_vmas_env, parse_env_id
from ...errors import SpaceError
from ...contract.multiagent_trainer import MultiAgentTrainerBase
from ..common.nets import mlp
from .export import skrl_joint_policy_export
from .models import policy_mean_or_argmax, stochastic_policy
from .onpolicy import SkrlRolloutTrainer
from .rollout_agent import rollout_config

# ---- environments -------------------------------------------------------------------------------


class ParallelEnvWrapper(PettingZooWrapper):
    """skrl's ``PettingZooWrapper`` reading spaces through the ``ParallelEnv`` API's ``observation_space(agent)``
    / ``action_space(agent)``: a user's env need not have the ``observation_spaces`` dicts skrl reads.
    A ``MultiBinary`` action mask is read as a ``Box`` (``boxed_mask``)."""

    observation_spaces = property(lambda self: {uid: boxed_mask(self._env.observation_space(uid)) for uid in self.possible_agents})
    action_spaces = property(lambda self: {uid: self._env.action_space(uid) for uid in self.possible_agents})


class VectorPettingZooEnv(MultiAgentEnvWrapper):
    """``num_envs`` PettingZoo parallel envs behind skrl's ``PettingZooWrapper``, auto-reset, stacked."""

    def __init__(self, envs: Sequence[PettingZooWrapper], device: str = "cpu", state_skip: int | None = None) -> None:
        """``state_skip``: ``None`` reads the env's ``state()`` (MPE); a number makes the state every agent's
        flattened observation minus its first ``state_skip`` values (a mask) concatenated (``pz:`` envs)."""
        super().__init__(envs[0]._env)
        self._envs = list(envs)
        self._device = torch.device(device)
        self._agents = list(envs[0].possible_agents)
        self._state_skip = state_skip
        self._states: dict[str, torch.Tensor] = {}

    @property
    def num_envs(self) -> int:
        return len(self._envs)

    @property
    def possible_agents(self) -> list[str]:
        return self._agents

    @property
    def agents(self) -> list[str]:  # every agent lives until its env resets them all
        return self._agents

    def _stack(self, per_env: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        return {uid: torch.cat([values[uid] for values in per_env]).to(self._device) for uid in self._agents}

    def _update_states(self, observations: dict[str, torch.Tensor]) -> None:
        if self._state_skip is None:
            state = torch.cat([env.state()[self._agents[0]].reshape(1, -1) for env in self._envs]).to(self._device)
        else:
            state = torch.cat([observations[uid][:, self._state_skip :] for uid in self._agents], dim=-1)
        self._states = dict.fromkeys(self._agents, state)

    def reset(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        observations = self._stack([env.reset()[0] for env in self._envs])
        self._update_states(observations)
        return observations, {}

    def step(self, actions: Mapping[str, torch.Tensor]) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        observations, rewards, ended, finals, time_limits = [], [], [], [], []
        for i, env in enumerate(self._envs):
            next_obs, reward, terminated, truncated, _ = env.step({uid: actions[uid][i : i + 1] for uid in self._agents})
            done = any(bool(terminated[uid].any() or truncated[uid].any()) for uid in self._agents)
            finals.append(next_obs)
            time_limits.append(done and not any(bool(terminated[uid].any()) for uid in self._agents))
            if done:  # skrl's trainer would reset here; this wrapper owns the reset instead
                next_obs, _ = env.reset()
            observations.append(next_obs)
            rewards.append(reward)
            ended.append(done)
        # what a learner that bootstraps at a time limit needs (TeamView): the episodes' last observations and
        # which ends were the step limit (MPE's max_cycles) rather than a termination
        self.final_observations = self._stack(finals)
        self.time_limit_ends = torch.tensor(time_limits, device=self._device).reshape(-1, 1)
        stacked = self._stack(observations)
        self._update_states(stacked)
        terminated = torch.tensor(ended, device=self._device).reshape(-1, 1)
        truncated = torch.zeros_like(terminated)
        return (
            stacked,
            self._stack(rewards),
            dict.fromkeys(self._agents, terminated),
            dict.fromkeys(self._agents, truncated),
            {},
        )

    def state(self) -> dict[str, torch.Tensor]:
        return self._states

    def render(self, *args: Any, **kwargs: Any) -> Any:
        return None

    def close(self) -> None:
        for env in self._envs:
            env.close()


class VmasEnvWrapper(MultiAgentEnvWrapper):
    """A VMAS ``Environment`` (already vectorised) behind skrl's multi-agent wrapper base."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self._device = torch.device(env.device)
        self._agents = [agent.name for agent in env.agents]
        # VMAS builds legacy gym spaces; skrl's space utilities need gymnasium's
        self._observation_spaces = {uid: gymnasium_space(s) for uid, s in zip(self._agents, env.observation_space)}
        self._action_spaces = {uid: gymnasium_space(s) for uid, s in zip(self._agents, env.action_space)}
        size = sum(int(space.shape[0]) for space in env.observation_space)
        self._state_space = gym.spaces.Box(-float("inf"), float("inf"), (size,))
        self._states: dict[str, torch.Tensor] = {}

    num_envs = property(lambda self: self._env.num_envs)
    possible_agents = property(lambda self: self._agents)
    agents = property(lambda self: self._agents)
    observation_spaces = property(lambda self: self._observation_spaces)
    action_spaces = property(lambda self: self._action_spaces)
    state_spaces = property(lambda self: dict.fromkeys(self._agents, self._state_space))

    def _observe(self, observations: Sequence[torch.Tensor]) -> dict[str, torch.Tensor]:
        self._states = dict.fromkeys(self._agents, torch.cat(list(observations), dim=-1))
        return dict(zip(self._agents, observations))

    def reset(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        return self._observe(self._env.reset()), {}

    def step(self, actions: Mapping[str, torch.Tensor]) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        observations, rewards, dones, _ = self._env.step([actions[uid] for uid in self._agents])
        if dones.all():
            observations = self._env.reset()
        elif dones.any():
            for index in dones.nonzero().flatten().tolist():
                observations = self._env.reset_at(index)
        terminated = dones.reshape(-1, 1)
        truncated = torch.zeros_like(terminated)
        return (
            self._observe(observations),
            {uid: reward.reshape(-1, 1) for uid, reward in zip(self._agents, rewards)},
            dict.fromkeys(self._agents, terminated),
            dict.fromkeys(self._agents, truncated),
            {},
        )

    def state(self) -> dict[str, torch.Tensor]:
        return self._states

    def render(self, *args: Any, **kwargs: Any) -> Any:
        return None

    def close(self) -> None:
        pass


def make_multiagent_vector_env(
    env_id: str, env_kwargs: Mapping[str, Any], num_envs: int, seed: int, device: str = "cpu"
) -> MultiAgentEnvWrapper:
    """The training env of a ``mpe:NAME`` / ``vmas:NAME`` / ``pz:MODULE:FACTORY`` id: ``num_envs`` copies,
    seeded (PettingZoo copy ``i`` with ``seed + i``)."""
    family, name = parse_env_id(env_id)
    with env_errors(env_id, dict(env_kwargs), "training environment"):
        if family == "vmas":
            return VmasEnvWrapper(make_vmas_env(name, dict(env_kwargs), num_envs, seed, device))
        envs = []
        for i in range(num_envs):
            skrl.config.torch.key = seed + i  # PettingZooWrapper seeds its first reset with the key it captures
            envs.append(ParallelEnvWrapper(make_pettingzoo_env(env_id, dict(env_kwargs))))
    state_skip = None
    if family == "pz":  # the state from the observations, less each agent's mask (sorted first in the flat vector)
        first = envs[0].possible_agents[0]
        state_skip = int(envs[0].action_spaces[first].n) if "action_mask" in getattr(envs[0].observation_spaces[first], "spaces", {}) else 0
    return VectorPettingZooEnv(envs, device, state_skip)


# ---- models -------------------------------------------------------------------------------------


class MaskedCategoricalPolicy(CategoricalMixin, Model):
    """A Categorical over the actions an agent's ``action_mask`` allows: MLP logits from the observation
    part of the flat ``[action_mask, observation]`` input, masked actions' logits set to the dtype's
    minimum, so they get zero probability (never sampled, never the argmax) while log-probs and entropy
    stay finite."""

    def __init__(
        self, observation_space: gym.Space, action_space: gym.Space, device: str, hidden_sizes: Sequence[int], activation: str = "tanh"
    ) -> None:
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        CategoricalMixin.__init__(self, unnormalized_log_prob=True)
        self.mask_size = int(action_space.n)
        self.net = mlp(self.num_observations - self.mask_size, hidden_sizes, self.mask_size, activation)

    def compute(self, inputs: Mapping[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        x = inputs["observations"]
        logits = self.net(x[:, self.mask_size :])
        allowed = x[:, : self.mask_size] > 0.5
        return logits.masked_fill(~allowed, torch.finfo(logits.dtype).min), {}


class AgentValue(DeterministicMixin, Model):
    """One agent's V: from its own observation (IPPO), or, centralised (MAPPO), from the global state
    concatenated with its own observation, so a critic shared by all agents still tells them apart.
    A masked agent's mask (the first ``mask_size`` inputs) is no input of V."""

    def __init__(
        self,
        observation_space: gym.Space,
        state_space: gym.Space,
        action_space: gym.Space,
        device: str,
        hidden_sizes: Sequence[int],
        activation: str = "tanh",
        centralised: bool = True,
        mask_size: int = 0,
    ) -> None:
        Model.__init__(
            self, observation_space=observation_space, state_space=state_space, action_space=action_space, device=device
        )
        DeterministicMixin.__init__(self, clip_actions=False)
        self.centralised = centralised
        self.mask_size = mask_size
        input_size = self.num_observations - mask_size + (self.num_states if centralised else 0)
        self.net = mlp(input_size, hidden_sizes, 1, activation)

    def compute(self, inputs: Mapping[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        x = inputs["observations"][:, self.mask_size :]
        if self.centralised:
            x = torch.cat([inputs["states"], x], dim=-1)
        return self.net(x), {}


def agent_models(
    spaces: MultiAgentSpaces,
    device: str,
    hidden_sizes: Sequence[int],
    activation: str,
    centralised_critic: bool,
    share_parameters: bool,
    initial_log_std: float = 0.0,
) -> dict[str, dict[str, Model]]:
    """``{uid: {"policy", "value"}}``; with ``share_parameters`` every agent holds the same two objects."""

    def pair() -> dict[str, Model]:
        if spaces.masked:
            policy = MaskedCategoricalPolicy(spaces.observation_space, spaces.action_space, device, hidden_sizes, activation)
        else:
            policy = stochastic_policy(
                spaces.observation_space, spaces.action_space, device, hidden_sizes, activation, initial_log_std
            )
        value = AgentValue(
            spaces.observation_space, spaces.state_space, spaces.action_space, device, hidden_sizes, activation,
            centralised_critic, spaces.mask_size,
        )  # fmt: skip
        return {"policy": policy, "value": value}

    if share_parameters:
        shared = pair()
        return {uid: shared for uid in spaces.agents}
    return {uid: pair() for uid in spaces.agents}


def joint_flat_observations(observations: Any, device: Any) -> torch.Tensor:
    """``[B, n_agents, obs_dim]`` observations, or a dict of ``[B, n_agents, ...]`` arrays (masked agents),
    as float32 ``[B, n_agents, size]``: a dict's keys concatenated in sorted order, as skrl flattens them."""
    if isinstance(observations, Mapping):
        parts = [torch.as_tensor(np.asarray(observations[k]), dtype=torch.float32, device=device) for k in sorted(observations)]
        return torch.cat([p.reshape(*p.shape[:2], -1) for p in parts], dim=-1)
    return torch.as_tensor(np.asarray(observations), dtype=torch.float32, device=device)


def joint_deterministic_actions(policies: Mapping[str, Model], agents: Sequence[str], observations: torch.Tensor) -> torch.Tensor:
    """Greedy / mean actions of every agent for ``observations[B, n_agents, obs_dim]`` (no RNG draws)."""
    return torch.stack(
        [policy_mean_or_argmax(policies[uid], observations[:, i]) for i, uid in enumerate(agents)], dim=1
    )


# ---- the multi-agent rollout trainer --------------------------------------------------------------

PER_AGENT_KWARGS = (
    "learning_rate_scheduler_kwargs",
    "observation_preprocessor_kwargs",
    "state_preprocessor_kwargs",
    "value_preprocessor_kwargs",
)


def complete_per_agent_kwargs(cfg: Any, possible_agents: Sequence[str]) -> Any:
    """Work around skrl 2.1.1's ``MultiAgentCfg.expand``: a ``*_kwargs`` field left at its default ``{}``
    is read as a per-agent dict naming no agent and raises ``ValueError: Specified keys (set()) do not
    match possible agents``, so even ``MAPPO(cfg=MAPPO_CFG())`` fails. Give each agent its own ``{}``."""
    for name in PER_AGENT_KWARGS:
        if getattr(cfg, name) == {}:
            setattr(cfg, name, {uid: {} for uid in possible_agents})
    return cfg


def multiagent_config(build: Any, cfg_class: type) -> Any:
    """A skrl multi-agent config (``MAPPO_CFG``, ``IPPO_CFG``) from the settings, the same values for every
    agent. The trainer marks every episode end (a step limit included) terminated: nothing to bootstrap."""
    agents = list(build.extras["multiagent"].agents)
    cfg = rollout_config(build, cfg_class, time_limit_bootstrap=False)
    cfg.value_preprocessor_kwargs = {uid: dict(cfg.value_preprocessor_kwargs) for uid in agents}
    return complete_per_agent_kwargs(cfg, agents)


class SkrlMultiAgentRolloutTrainer(MultiAgentTrainerBase, SkrlRolloutTrainer):
    """The on-policy rollout trainer on an MPE / VMAS env: one ``step()`` = one rollout of
    ``rollouts`` vector steps and every agent's update. Subclasses name ``agent_class`` (an
    ``OnPolicyAgent`` over skrl's multi-agent class) and ``config_class``.

    The env's per-agent dicts: each step's reward averaged over agents feeds the episode returns,
    every episode end (the wrappers mark it terminated) ends the return, the MPE worlds / VMAS
    scenario are checkpointed mid-episode, and every agent acts with its policy's mean or argmax.
    """

    def __init__(self, build: Any) -> None:
        self.agents = list(build.extras["multiagent"].agents)
        super().__init__(build)

    def make_env(self, build: Any) -> Any:
        return make_multiagent_vector_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device)

    def agent_config(self, build: Any) -> Any:
        return multiagent_config(build, self.config_class)

    def make_agent(self, build: Any) -> Any:
        spaces = build.extras["multiagent"]
        if spaces.masked and build.settings.get("observation_preprocessor"):  # it would standardise the masks too
            raise SpaceError(f"environment '{build.env_id}' has action masks; normalize_observations is not supported with them on skrl")
        return self.agent_class(
            possible_agents=self.agents,
            models=build.models,
            memories=build.memory,
            observation_spaces=dict.fromkeys(self.agents, spaces.observation_space),
            state_spaces=dict.fromkeys(self.agents, spaces.state_space),
            action_spaces=dict.fromkeys(self.agents, spaces.action_space),
            device=build.device,
            cfg=self.agent_config(build),
            loss=build.loss,
            terms=build.loss_entry.terms,
            reported=build.loss_entry.reported,
        )

    def track_episodes(self, rewards: Any, terminated: Any, truncated: Any, infos: Any) -> None:
        """Per-agent returns: the agents' rewards averaged each step; the wrappers end episodes for the whole team."""
        team_reward = torch.stack([rewards[uid] for uid in self.agents]).mean(0)
        self.episodes.update(team_reward.cpu().numpy(), terminated[self.agents[0]].cpu().numpy())

    def stored_outcome(self, next_observations: Any, terminated: Any, truncated: Any, infos: Any) -> tuple[Any, Any, Any]:
        return next_observations, terminated, truncated  # the wrappers mark every episode end terminated

    def logged_metrics(self) -> frozenset[str]:
        return frozenset({f"loss/{name}" for name in self.agent.logged_terms} | {"train/lr", "train/update_ms", "train/episode_return"}
                         | ({"train/clip_ratio"} if self.clip_schedule is not None else set()))

    def update_metrics(self, tracked: Any) -> dict[str, float]:
        """Per-term means over agents."""
        metrics = {
            f"loss/{name}": float(np.mean([tracked[f"Loss / {name} ({uid})"][-1] for uid in self.agents]))
            for name in self.agent.logged_terms
        }
        metrics["train/lr"] = self.agent.optimizers[self.agents[0]].param_groups[0]["lr"]
        return metrics

    def act_deterministic(self, observations: Any) -> Any:
        with torch.no_grad():
            x = joint_flat_observations(observations, self.build.device)
            return joint_deterministic_actions(self.agent.policies, self.agents, x).cpu().numpy()

    def export_policy(self) -> torch.nn.Module:
        """One module over ``[B, n_agents, obs_dim]``: each agent's policy mean (clamped) or argmax."""
        return skrl_joint_policy_export(self.build, self.agent.policies, self.agents)

    def snapshot_env(self) -> Any:
        return deep_snapshot(self.env)  # the MPE worlds / VMAS scenario mid-episode, their RNGs

    def restore_env(self, state: Any) -> None:
        deep_restore(self.env, state)

