"""Multi-agent evaluation: deterministic PettingZoo (MPE, ``pz:``) or VMAS episodes, scored per agent.

Imports numpy; the torch-free env-id parsing and probing are in ``rlplug.envs.multiagent``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .factory import env_errors
from .evaluation import EVAL_SEED_OFFSET, episodes_done
from .multiagent import PETTINGZOO_FAMILIES, make_pettingzoo_env, make_vmas_env, parse_env_id, vmas_kwargs


def evaluate_multiagent(
    env_id: str,
    env_kwargs: dict[str, Any],
    act: Callable[[np.ndarray], np.ndarray],
    episodes: int,
    seed: int,
) -> list[float]:
    """Mean per-agent return of ``episodes`` deterministic episodes on a separate environment.

    ``act(observations[B, n_agents, obs_dim]) -> actions[B, n_agents(, act_dim)]`` must choose
    deterministically (argmax / Gaussian mean). An episode's score is the agents' returns averaged
    over agents. PettingZoo episodes run one after another, seeded ``seed + EVAL_SEED_OFFSET + episode``;
    VMAS runs all of them at once in one vectorised env seeded ``seed + EVAL_SEED_OFFSET``. Masked agents'
    observations come as a dict of ``[B, n_agents, ...]`` arrays, ``{"action_mask", "observation"}``.
    """
    family, name = parse_env_id(env_id)
    if family in PETTINGZOO_FAMILIES:
        return _evaluate_pettingzoo(env_id, env_kwargs, act, episodes, seed)
    return _evaluate_vmas(name, env_kwargs, act, episodes, seed)


def stack_agents(observations: dict[str, Any], agents: list[str]) -> Any:
    """Per-agent observations as ``[1, n_agents, ...]``: one array, or one per key of Dict observations."""
    first = observations[agents[0]]
    if isinstance(first, dict):
        return {key: np.stack([np.asarray(observations[a][key], dtype=np.float32) for a in agents])[None] for key in sorted(first)}
    return np.stack([np.asarray(observations[a], dtype=np.float32) for a in agents])[None]


def _evaluate_pettingzoo(env_id: str, env_kwargs: dict[str, Any], act: Callable, episodes: int, seed: int) -> list[float]:
    import gymnasium as gym

    with env_errors(env_id, env_kwargs, "evaluation"):
        env = make_pettingzoo_env(env_id, env_kwargs)
    agents = list(env.possible_agents)
    discrete = isinstance(env.action_space(agents[0]), gym.spaces.Discrete)
    returns = []
    try:
        for episode in range(episodes):
            observations, _ = env.reset(seed=seed + EVAL_SEED_OFFSET + episode)
            totals = dict.fromkeys(agents, 0.0)
            while env.agents:
                actions = act(stack_agents(observations, agents))[0]
                step_actions = {a: (int(actions[i]) if discrete else np.asarray(actions[i])) for i, a in enumerate(agents)}
                observations, rewards, _, _, _ = env.step(step_actions)
                for agent, reward in rewards.items():
                    totals[agent] += float(reward)
            returns.append(float(np.mean(list(totals.values()))))
            episodes_done()
    finally:
        env.close()
    return returns


def _evaluate_vmas(name: str, env_kwargs: dict[str, Any], act: Callable, episodes: int, seed: int) -> list[float]:
    from vmas.simulator.environment import Environment

    # every VMAS env draws from one random state shared by the class; give the training env its stream back
    saved = list(Environment.vmas_random_state)
    try:
        return _run_vmas_episodes(name, env_kwargs, act, episodes, seed)
    finally:
        Environment.vmas_random_state[:] = saved


def _run_vmas_episodes(name: str, env_kwargs: dict[str, Any], act: Callable, episodes: int, seed: int) -> list[float]:
    import torch

    with env_errors(f"vmas:{name}", env_kwargs, "evaluation"):
        env = make_vmas_env(name, env_kwargs, num_envs=episodes, seed=seed + EVAL_SEED_OFFSET)
    observations = env.reset()
    totals = torch.zeros(episodes, dtype=torch.float64)
    running = torch.ones(episodes, dtype=torch.bool)
    for _ in range(vmas_kwargs(env_kwargs)["max_steps"]):
        batch = torch.stack(observations, dim=1).numpy()
        actions = torch.as_tensor(act(batch))
        observations, rewards, dones, _ = env.step([actions[:, i] for i in range(env.n_agents)])
        totals += torch.stack(rewards, dim=1).double().mean(1) * running
        running &= ~dones
        if not running.any():
            break
    episodes_done(episodes)  # VMAS plays them all at once
    return totals.tolist()
