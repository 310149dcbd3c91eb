"""The Gymnasium contract, checked on what a user's environment itself returns, and blamed on it by name.

``EnvContractChecker`` takes the place of gymnasium's ``PassiveEnvChecker`` in every environment
``rlplug.envs.factory.make_gym_env`` makes (both backends' training copies, the evaluation env), directly around
the base env, so it sees the env's own results before ``TimeLimit`` unpacks them or ``NormalizeReward``
and ``ClipReward`` change them. Where gymnasium's checker warns, this one refuses in one line naming the
env id, the check, what was declared and what came back:

* at the first ``reset``: the pair ``(observation, info)``; at the first ``step``: the five values
  ``(observation, reward, terminated, truncated, info)`` (not gym < 0.26's four) and a numeric reward;
  both times an observation of the declared space's shape, dtype (one that casts safely to it, the rule
  of gymnasium's ``Box.contains``) and ``Dict`` keys (``EnvContractError``);
* every ``reset`` and ``step``: finite float observations and a finite reward, so a NaN is named at its
  source before it reaches the networks and their divergence guard (``EnvContractError``). The training
  copies are checked a batch at a time by this module's ``SyncVectorEnv``/``AsyncVectorEnv`` (one
  ``np.isfinite`` per array of the batch; the copy whose env returned the NaN then names it); a single env
  (evaluation) checks each step itself;
* an exception raised inside the env's ``reset`` or ``step``: named with the env and the step it came
  in (``EnvStepError``).

Under ``vector_mode = "async"`` the copies step in worker processes; ``AsyncVectorEnv`` brings their line
back alone.

An action mask (``rlplug.envs.masks``: a Dict key ``action_mask``, or ``info["action_mask"]``) is checked by the
outermost wrapper that reads it, ``ActionMaskObservation``: a declared mask space of one entry per action at
construction, then at every reset and step a mask that is there, of ``n`` zeros and ones, with a valid action
unless the step ended the episode (``ActionMaskError``, naming the env and the step).

The checker keeps gymnasium's checker's constructor checks and attribute names (``checked_reset``,
``checked_step``), so the wrapper chains stay as long as before and checkpoints written before it
restore into it (``rlplug.envs.state``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.wrappers.common import PassiveEnvChecker

from .factory import error_text
from ..errors import EnvContractError, EnvStepError, RlplugError

KeyPath = tuple[Any, ...]


class EnvContractChecker(PassiveEnvChecker):
    """gymnasium's ``PassiveEnvChecker`` whose reset and step checks refuse in one line (module doc)."""

    def __init__(self, env: gym.Env, env_id: str, each_step: bool = True) -> None:
        super().__init__(env)
        self.env_id = env_id
        self.each_step = each_step
        """Whether every step's values are checked here; a copy in a ``SyncVectorEnv``/``AsyncVectorEnv`` of
        this module leaves that to the batch (one ``np.isfinite`` per vector step), which calls
        ``check_last_step`` on it when the batch holds a NaN."""
        self.steps = 0
        """Steps since the env was made (over its episodes), and in the episode under way: the lines name them."""
        self.episode_steps = 0
        self._float_paths = float_paths(env.observation_space)
        self._last: tuple[Any, Any] = (None, 0.0)

    # ---- the two calls -------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        try:
            result = self.env.reset(seed=seed, options=options)
        except Exception as err:  # noqa: BLE001 - whatever the user's env raises, the line names the env
            raise self._raised(err, "reset", None) from err
        if not self.checked_reset:
            self.checked_reset = True
            if not isinstance(result, tuple) or len(result) != 2:
                self._refuse(f"reset returned {_described(result)}, not the pair (observation, info)")
            if not isinstance(result[1], dict):
                self._refuse(f"reset returned info of type {type(result[1]).__name__}, not a dict")
            self._check_observation(result[0], "reset")
        self.episode_steps = 0
        self._check_finite_observation(result[0], "reset")
        return result

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        try:
            result = self.env.step(action)
        except Exception as err:  # noqa: BLE001 - whatever the user's env raises, the line names the env
            raise self._raised(err, "step", action) from err
        self.steps += 1
        self.episode_steps += 1
        if not self.checked_step:
            self.checked_step = True
            self._check_step(result)
        self._last = result[0], result[1]  # references, no copies: the batch check may ask for them
        if self.each_step or self.steps == 1:
            self.check_last_step()
        return result

    def check_last_step(self) -> None:
        """Refuse a NaN or infinite observation or reward in what the env returned from its last step."""
        observation, reward = self._last
        if not math.isfinite(reward):
            self._refuse(f"returned reward {float(reward)} in {self._when()}; rewards must be finite", contract=False)
        self._check_finite_observation(observation, "step")

    # ---- the checks ----------------------------------------------------------------------------------

    def _check_step(self, result: Any) -> None:
        if not isinstance(result, tuple) or len(result) != 5:
            count = f"{len(result)} values" if isinstance(result, tuple) else _described(result)
            old = " (obs, reward, done, info: the gym < 0.26 API)" if isinstance(result, tuple) and len(result) == 4 else ""
            self._refuse(f"step returned {count}{old}, not the five (observation, reward, terminated, truncated, info)")
        reward, info = result[1], result[4]
        if np.ndim(reward) != 0 or np.asarray(reward).dtype.kind not in "iuf":  # a 0-d array of a number passes
            self._refuse(f"step returned a reward of type {type(reward).__name__} ({_short(reward)}), not a number")
        if not isinstance(info, dict):
            self._refuse(f"step returned info of type {type(info).__name__}, not a dict")
        self._check_observation(result[0], "step")

    def _check_observation(self, observation: Any, call: str) -> None:
        problem = observation_problem(observation, self.env.observation_space)
        if problem:
            self._refuse(f"{call} returned an observation {problem}")

    def _check_finite_observation(self, observation: Any, call: str) -> None:
        for path in self._float_paths:
            value = part(observation, path)
            if not np.isfinite(value).all():
                bad = np.asarray(value).reshape(-1)
                first = bad[~np.isfinite(bad)][0]
                named = "observation" + "".join(f"[{key!r}]" for key in path)
                when = self._when() if call == "step" else "reset"
                self._refuse(f"returned {first} in its {named} in {when}; observations must be finite", contract=False)

    # ---- the lines -----------------------------------------------------------------------------------

    def _when(self) -> str:
        return f"step {self.episode_steps} of an episode ({self.steps} steps since it was made)"

    def _refuse(self, what: str, contract: bool = True) -> None:
        rule = " breaks the Gymnasium API:" if contract else ""
        raise EnvContractError(f"environment '{self.env_id}'{rule} {what}")

    def _raised(self, err: Exception, call: str, action: Any) -> EnvStepError:
        when = f"step {self.episode_steps + 1} of an episode ({self.steps + 1} steps since it was made)" if call == "step" \
            else f"reset (after {self.steps} steps)"
        given = ""
        if call == "step" and not _contains(self.env.action_space, action):
            given = f" (the action it was given, {_short(action)}, is outside its action space {self.env.action_space})"
        return EnvStepError(f"environment '{self.env_id}' raised {type(err).__name__} in {when}: {error_text(err)}{given}")


class _BatchCheck:
    """A vector env's step checks its whole batch: one ``np.isfinite`` over the rewards and one per float
    array of the observations. On a NaN or an infinity each copy's ``EnvContractChecker`` checks what its env
    returned, and the one that returned it raises its line; if none did, a wrapper of rlplug's made it."""

    def _check_batches_of(self, env_id: str) -> None:
        self.env_id = env_id
        self._float_paths = float_paths(self.single_observation_space)

    def step(self, actions: Any) -> Any:
        result = super().step(actions)
        observations = result[0]
        finite = np.isfinite(result[1]).all()
        for path in self._float_paths:
            finite = finite and np.isfinite(part(observations, path)).all()
        if not finite:
            self.call("check_last_step")
            raise EnvContractError(
                f"environment '{self.env_id}': a NaN or infinite observation or reward came out of rlplug's wrappers "
                "(its own values were finite); observations and rewards must be finite"
            )
        return result


class SyncVectorEnv(_BatchCheck, gym.vector.SyncVectorEnv):
    """gymnasium's, checking each step's batch (``_BatchCheck``)."""

    def __init__(self, env_fns: Any, env_id: str, **kwargs: Any) -> None:
        super().__init__(env_fns, **kwargs)
        self._check_batches_of(env_id)


class AsyncVectorEnv(_BatchCheck, gym.vector.AsyncVectorEnv):
    """gymnasium's, checking each step's batch (``_BatchCheck``); a worker's rlplug error (the checker's line)
    comes back alone: gymnasium logs the worker's traceback as warnings first, which stays so for any other."""

    def __init__(self, env_fns: Any, env_id: str, **kwargs: Any) -> None:
        super().__init__(env_fns, **kwargs)
        self._check_batches_of(env_id)

    def _raise_if_errors(self, successes: Any) -> None:
        try:
            with warnings.catch_warnings(record=True) as logged:
                warnings.simplefilter("always")
                super()._raise_if_errors(successes)
        except RlplugError:
            raise
        except BaseException:
            for warning in logged:
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
            raise


# ---- the observation space -------------------------------------------------------------------------


def float_paths(space: gym.Space) -> list[KeyPath]:
    """The keys leading to each float array of an observation of ``space`` (``[()]`` for a float Box):
    the arrays whose values must be finite. Integer and boolean ones always are."""
    if isinstance(space, gym.spaces.Box):
        return [()] if np.issubdtype(space.dtype, np.floating) else []
    if isinstance(space, gym.spaces.Dict):
        return [(key, *path) for key, sub in space.spaces.items() for path in float_paths(sub)]
    if isinstance(space, gym.spaces.Tuple):
        return [(index, *path) for index, sub in enumerate(space.spaces) for path in float_paths(sub)]
    return []


def part(observation: Any, path: KeyPath) -> Any:
    """The array at ``path`` in an observation (or a batch of them: a vector env batches ``Dict`` key by key)."""
    for key in path:
        observation = observation[key]
    return observation


def observation_problem(observation: Any, space: gym.Space, where: str = "") -> str:
    """What is wrong with ``observation`` as one of ``space`` ("of shape (3,) where ... declares (2,) (...)"),
    or ``""``: the shape, dtype and ``Dict`` keys; values outside a Box's bounds pass (as gymnasium's own
    checker only warns of them, and the models do not need them inside)."""
    named = f"{where} " if where else ""
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(observation, Mapping):
            return f"{named}of type {type(observation).__name__} where its observation_space declares a Dict ({space})"
        if set(observation) != set(space.spaces):
            return f"{named}with keys {sorted(map(str, observation))} where its observation_space declares {sorted(map(str, space.spaces))}"
        for key, sub in space.spaces.items():
            problem = observation_problem(observation[key], sub, f"{where}[{key!r}]" if where else f"[{key!r}]")
            if problem:
                return problem
        return ""
    if isinstance(space, gym.spaces.Tuple):
        if not isinstance(observation, tuple) or len(observation) != len(space.spaces):
            return f"{named}{_described(observation)} where its observation_space declares a Tuple of {len(space.spaces)} ({space})"
        for index, sub in enumerate(space.spaces):
            problem = observation_problem(observation[index], sub, f"{where}[{index}]")
            if problem:
                return problem
        return ""
    if isinstance(space, gym.spaces.Box):
        array = np.asarray(observation)
        if array.shape != space.shape:
            return f"{named}of shape {array.shape} where its observation_space declares shape {space.shape} ({space})"
        if isinstance(observation, np.ndarray) and not np.can_cast(observation.dtype, space.dtype):
            return f"{named}of dtype {observation.dtype} where its observation_space declares {space.dtype} ({space})"
        return ""
    if not _contains(space, observation):
        return f"{named}{_short(observation)} outside its observation_space {space}"
    return ""


def _contains(space: gym.Space, value: Any) -> bool:
    try:
        return bool(space.contains(value))
    except Exception:  # noqa: BLE001 - a value so wrong that the space cannot even compare it
        return False


def _described(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} values"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    return f"a {type(value).__name__}"


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."
