"""The wrappers that give every env's action mask its one internal form (``rlplug.envs.masks``): a ``Dict``
observation with a bool ``action_mask`` key of shape ``[n_actions]``.

``ActionMaskObservation`` is the outermost wrapper of a masked env (``rlplug.envs.wrappers.wrap``): it takes
the mask from the observation's ``action_mask`` key or from ``info["action_mask"]`` and puts it, as bools,
into the observation. ``DropActionMask`` is ``action_mask = "ignore"``: the observation without its key.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from ..errors import ActionMaskError
from .masks import ACTION_MASK_KEY, FEATURES_KEY, feature_space, mask_problem


class ActionMaskObservation(gym.Wrapper):
    """The env's mask, from its observation key or its ``info``, as a bool ``Box(0, 1, (n,))`` observation key.

    ``from_info``: the mask is ``info["action_mask"]`` of each ``reset`` and ``step``; a non-Dict observation
    then goes under ``"observation"`` and a Dict observation gets the key. Either way the mask is checked
    against the action space (``n`` zeros and ones) and refused with one line naming the env when a step that
    did not end its episode leaves no valid action.
    """

    def __init__(self, env: gym.Env, env_id: str, from_info: bool = False) -> None:
        super().__init__(env)
        if not isinstance(env.action_space, gym.spaces.Discrete):
            source = "info['action_mask']" if from_info else "observation key 'action_mask'"
            raise ActionMaskError(
                f"environment '{env_id}' supplies an action mask ({source}) but its action space is {env.action_space}; "
                "action masks are for Discrete actions (set action_mask = \"ignore\" to train without it)"
            )
        self.env_id, self.from_info = env_id, from_info
        self.n = int(env.action_space.n)
        mask_space = gym.spaces.Box(0, 1, (self.n,), np.bool_)
        inner = env.observation_space
        if from_info:
            spaces = dict(inner.spaces) if isinstance(inner, gym.spaces.Dict) else {FEATURES_KEY: inner}
        else:
            spaces = dict(inner.spaces)
            declared = tuple(getattr(spaces[ACTION_MASK_KEY], "shape", None) or ())
            if declared != (self.n,):
                raise ActionMaskError(
                    f"environment '{env_id}' declares an action mask (observation key 'action_mask') of shape {declared}; "
                    f"its action space Discrete({self.n}) needs ({self.n},): one entry per action"
                )
        spaces[ACTION_MASK_KEY] = mask_space
        self.observation_space = gym.spaces.Dict(spaces)
        self.episode_steps = 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self.episode_steps = 0
        return self._masked(observation, info, "reset", ended=False)

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.episode_steps += 1
        observation, info = self._masked(observation, info, "step", ended=bool(terminated))
        return observation, reward, terminated, truncated, info

    def _masked(self, observation: Any, info: dict[str, Any], call: str, ended: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        """The observation with its bool mask, and the info (without the mask it held: one mask per step, in the
        observation, where TorchRL's wrapper would otherwise read the info's over it)."""
        if self.from_info:
            if ACTION_MASK_KEY not in info:
                self._refuse("returned no info['action_mask']", call, " (the recipe's action_mask = \"info\" reads it there)")
            mask = info[ACTION_MASK_KEY]
            info = {key: value for key, value in info.items() if key != ACTION_MASK_KEY}
            out = dict(observation) if isinstance(observation, dict) else {FEATURES_KEY: observation}
        else:
            out = dict(observation)
            mask = out[ACTION_MASK_KEY]
        problem = mask_problem(mask, self.n)
        if problem:
            self._refuse(f"returned an action mask {problem}", call)
        valid = np.asarray(mask).astype(np.bool_)
        if not ended and not valid.any():
            self._refuse("returned an action mask with no valid action", call, " that did not end the episode")
        out[ACTION_MASK_KEY] = valid
        return out, info

    def _refuse(self, what: str, call: str, after: str = "") -> None:
        when = "reset" if call == "reset" else f"step {self.episode_steps} of an episode"
        raise ActionMaskError(f"environment '{self.env_id}' {what} in {when}{after}")


class DropActionMask(gym.ObservationWrapper):
    """``action_mask = "ignore"``: the observation without its ``action_mask`` key (its ``"observation"``
    alone when that is all that is left), as if the env supplied no mask."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = feature_space(env.observation_space)
        self.unwrapped_key = not isinstance(self.observation_space, gym.spaces.Dict)

    def observation(self, observation: Any) -> Any:
        if self.unwrapped_key:
            return observation[FEATURES_KEY]
        return {key: value for key, value in observation.items() if key != ACTION_MASK_KEY}
