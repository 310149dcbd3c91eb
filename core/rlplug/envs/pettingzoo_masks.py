"""``InfoMaskToObservation``: PettingZoo's ``info["action_mask"]`` convention turned into its Dict one."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo.utils.wrappers import BaseParallelWrapper

from .multiagent import MASK_KEY


class InfoMaskToObservation(BaseParallelWrapper):
    """A ``ParallelEnv`` whose agents' ``info["action_mask"]`` becomes their observation's ``"action_mask"``
    key, ``{"observation": the env's observation, "action_mask": int8 [n_actions]}``, so both backends read
    masks from one place (TorchRL's ``PettingZooWrapper`` would lay an info mask out differently)."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self._spaces = {
            agent: gym.spaces.Dict(
                {"observation": env.observation_space(agent), MASK_KEY: gym.spaces.Box(0, 1, (int(env.action_space(agent).n),), np.int8)}
            )
            for agent in env.possible_agents
        }

    def observation_space(self, agent: str) -> gym.Space:
        return self._spaces[agent]

    def _with_masks(self, observations: dict[str, Any], infos: dict[str, Any]) -> dict[str, Any]:
        return {
            agent: {"observation": obs, MASK_KEY: np.asarray(infos[agent][MASK_KEY], dtype=np.int8)}
            for agent, obs in observations.items()
        }

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        observations, infos = self.env.reset(seed=seed, options=options)
        return self._with_masks(observations, infos), infos

    def step(self, actions: dict[str, Any]) -> tuple[Any, Any, Any, Any, Any]:
        observations, rewards, terminated, truncated, infos = self.env.step(actions)
        return self._with_masks(observations, infos), rewards, terminated, truncated, infos
