"""A tiny masked multi-agent PettingZoo ``ParallelEnv`` for the tests: ``env = "pz:masked_ma_envs:make_pick"``.

Two agents each pick one of 4 actions per step; only 2 of them are valid (drawn anew every step) and one
of those is cued. A cued valid pick earns 1, another valid pick 0.2; an invalid pick by either agent ends
the episode for both with no reward for it. Every agent observes the cue (one-hot) and the valid actions
(as floats), so a policy that ignores masks can still learn validity, only more slowly.

``mask_in`` picks where the mask goes: ``"observation"`` (PettingZoo's Dict ``{"observation",
"action_mask"}``), ``"info"`` (``info[agent]["action_mask"]``, flat observations) or ``"none"`` (no mask,
flat observations: the mask-ignoring baseline). ``MaskedPickEnv.invalid_actions`` counts invalid picks of
every instance in this process, so a test can assert that masked training never chose one.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from pettingzoo.utils.env import ParallelEnv

N_ACTIONS = 4
VALID_PER_STEP = 2


class MaskedPickEnv(ParallelEnv):
    metadata = {"name": "masked_pick_v0", "render_modes": []}
    invalid_actions = 0  # across instances: the envs live inside the backends' vector envs
    valid_actions = 0

    def __init__(self, mask_in: str = "observation", length: int = 16, n_agents: int = 2) -> None:
        if mask_in not in ("observation", "info", "none"):
            raise ValueError(f"mask_in must be 'observation', 'info' or 'none', got {mask_in!r}")
        self.mask_in, self.length = mask_in, length
        self.possible_agents = [f"picker_{i}" for i in range(n_agents)]
        self.agents: list[str] = []
        features = gym.spaces.Box(0.0, 1.0, (2 * N_ACTIONS,), np.float32)
        if mask_in == "observation":
            space = gym.spaces.Dict({"observation": features, "action_mask": gym.spaces.MultiBinary(N_ACTIONS)})
        else:
            space = features
        self._observation_space, self._action_space = space, gym.spaces.Discrete(N_ACTIONS)
        self._rng = np.random.default_rng()

    def observation_space(self, agent: str) -> gym.Space:
        return self._observation_space

    def action_space(self, agent: str) -> gym.Space:
        return self._action_space

    def _draw(self) -> None:
        self._masks, self._cues = {}, {}
        for agent in self.possible_agents:
            valid = self._rng.choice(N_ACTIONS, VALID_PER_STEP, replace=False)
            mask = np.zeros(N_ACTIONS, np.int8)
            mask[valid] = 1
            self._masks[agent], self._cues[agent] = mask, int(valid[0])

    def _observe(self) -> tuple[dict, dict]:
        observations, infos = {}, {}
        for agent in self.possible_agents:
            features = np.concatenate([np.eye(N_ACTIONS, dtype=np.float32)[self._cues[agent]], self._masks[agent].astype(np.float32)])
            if self.mask_in == "observation":
                observations[agent] = {"observation": features, "action_mask": self._masks[agent].copy()}
            else:
                observations[agent] = features
            infos[agent] = {"action_mask": self._masks[agent].copy()} if self.mask_in == "info" else {}
        return observations, infos

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents, self._t = list(self.possible_agents), 0
        self._draw()
        return self._observe()

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        rewards, failed = {}, False
        for agent in self.possible_agents:
            action = int(actions[agent])
            if self._masks[agent][action]:
                MaskedPickEnv.valid_actions += 1
                rewards[agent] = 1.0 if action == self._cues[agent] else 0.2
            else:
                MaskedPickEnv.invalid_actions += 1
                rewards[agent], failed = 0.0, True
        self._t += 1
        self._draw()
        observations, infos = self._observe()
        terminated = dict.fromkeys(self.possible_agents, failed)
        truncated = dict.fromkeys(self.possible_agents, self._t >= self.length and not failed)
        if failed or self._t >= self.length:
            self.agents = []
        return observations, rewards, terminated, truncated, infos


def make_pick(**kwargs) -> MaskedPickEnv:
    return MaskedPickEnv(**kwargs)


def make_heterogeneous() -> MaskedPickEnv:
    """Agents with different action spaces: refused by rlplug."""
    env = MaskedPickEnv()
    spaces = {"picker_0": gym.spaces.Discrete(N_ACTIONS), "picker_1": gym.spaces.Discrete(N_ACTIONS + 1)}
    env.action_space = spaces.__getitem__  # type: ignore[method-assign]
    return env


def make_not_parallel() -> gym.Env:
    return gym.make("CartPole-v1")
