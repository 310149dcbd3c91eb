"""``vector_mode = "envpool"``: the training copies stepped by EnvPool's C++ thread pool, behind gymnasium's
``VectorEnv`` API with the SAME_STEP autoreset both backends read (``rlplug.envs.factory``).

EnvPool resets an ended episode on the *next* ``step`` call (the action given then is ignored). Here an ended
env is reset at once instead (``pool.reset(env_id)``, EnvPool's partial reset): the step returns the reset
observation, the last one goes to ``info["final_obs"]`` with its mask ``info["_final_obs"]``, exactly as
gymnasium's ``SyncVectorEnv`` does in SAME_STEP mode, so time-limit bootstrapping and episode returns read the
same on every vector mode. Sub-env ``i`` is seeded ``seed + i``, as gymnasium's vector envs seed theirs;
EnvPool seeds at construction, so a reset with a new seed rebuilds the pool.

EnvPool runs its own copy of each task (same ids, dynamics and time limits as gymnasium's for classic control,
Box2D and MuJoCo), so none of rlplug's per-copy wrappers can sit around it: recipes that ask for one are
refused in one line (``check_envpool``). Box actions are clipped to their bounds here (``clip_actions``).
Evaluation steps gymnasium's env of the same id, as for every vector mode.
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import gymnasium as gym  # this module is imported only when a recipe asks for EnvPool
import numpy as np

from ..errors import RecipeError, SuiteMissingError, UnknownNameError
from ..util.suggest import did_you_mean

INSTALL = "pip install 'rlplug[envpool]'"
UNSUPPORTED_FIELDS = ("wrappers", "hide_observation", "frame_stack", "atari", "normalize_reward")
"""Recipe fields that wrap each copy in gymnasium wrappers, which EnvPool's C++ copies cannot carry."""


def check_envpool(spec: Any) -> str:
    """Refuse what EnvPool cannot run (not installed, an id it lacks, a wrapper field); returns its task id."""
    if importlib.util.find_spec("envpool") is None:
        raise SuiteMissingError(f"vector_mode = \"envpool\" needs EnvPool: {INSTALL}")
    where = f"environment '{spec.id}' with vector_mode = \"envpool\""
    for name in UNSUPPORTED_FIELDS:
        if getattr(spec, name):
            raise RecipeError(f"{where}: {name} wraps each gymnasium copy, and EnvPool's copies are its own C++ envs; "
                              "use vector_mode = \"sync\" or \"async\" for it")  # fmt: skip
    if spec.module or ":" in spec.id:
        raise RecipeError(f"{where}: EnvPool steps only its own tasks, not a module's registration")
    import envpool

    known = envpool.list_all_envs()
    if spec.id not in known:
        raise UnknownNameError(f"{where}: EnvPool has no task '{spec.id}'" + did_you_mean(spec.id, known))
    return spec.id


class EnvPoolVectorEnv(gym.vector.VectorEnv):
    """EnvPool's pool as a gymnasium ``VectorEnv`` (SAME_STEP autoreset; see the module doc)."""

    state_out_of_reach = True
    """A checkpoint cannot hold the C++ copies' state: a resume starts new episodes (``rlplug.envs.state``)."""

    def __init__(self, spec: Any, num_envs: int, seed: int = 0) -> None:
        self.spec_ = spec
        self.task = check_envpool(spec)
        self.num_envs = num_envs
        self.clip = spec.clip_actions
        self._seed = seed
        self.pool = self._make(seed)
        with warnings.catch_warnings():  # EnvPool builds its spaces anew on each read, from float64 bounds
            warnings.simplefilter("ignore")
            self.single_observation_space = self.pool.observation_space
            self.single_action_space = self.pool.action_space
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self.autoreset_mode = gym.vector.AutoresetMode.SAME_STEP
        self.metadata = {"autoreset_mode": self.autoreset_mode}
        self.render_mode = None
        self.closed = False
        self._discrete = isinstance(self.single_action_space, gym.spaces.Discrete)

    def _make(self, seed: int) -> Any:
        import envpool

        options = dict(self.spec_.kwargs)
        if self.spec_.time_limit:
            options["max_episode_steps"] = self.spec_.time_limit
        try:
            with warnings.catch_warnings():  # gymnasium's notes on EnvPool's float64 Box bounds cast to float32
                warnings.simplefilter("ignore")
                return envpool.make_gymnasium(self.task, num_envs=self.num_envs, seed=seed, **options)
        except (TypeError, ValueError, KeyError) as err:  # an unknown option of the task
            message = " ".join(str(err).split())[:200]
            raise RecipeError(f"environment '{self.spec_.id}' with vector_mode = \"envpool\" refused env_kwargs "
                              f"{options}: {message}") from None  # fmt: skip

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        if seed is not None:
            first = int(seed[0] if isinstance(seed, (list, tuple)) else seed)
            if first != self._seed:
                self.pool.close()
                self._seed, self.pool = first, self._make(first)
        observations, _ = self.pool.reset()
        return observations, {}

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        actions = np.asarray(actions)
        if self._discrete:
            actions = actions.astype(np.int32).reshape(self.num_envs)
        elif self.clip:
            actions = np.clip(actions, self.single_action_space.low, self.single_action_space.high)
        observations, rewards, terminated, truncated, _ = self.pool.step(actions)
        rewards = rewards.astype(np.float64)
        ended = np.logical_or(terminated, truncated)
        infos: dict[str, Any] = {}
        if ended.any():
            ids = np.flatnonzero(ended).astype(np.int32)
            final = np.full(self.num_envs, None, dtype=object)
            for i in ids:
                final[i] = observations[i].copy()
            reset, _ = self.pool.reset(ids)
            observations = observations.copy()
            observations[ids] = reset
            infos = {"final_obs": final, "_final_obs": ended.copy(), "final_info": {}, "_final_info": ended.copy()}
        if not (np.isfinite(rewards).all() and (not np.issubdtype(observations.dtype, np.floating) or np.isfinite(observations).all())):
            from ..errors import EnvContractError

            raise EnvContractError(f"environment '{self.spec_.id}' (EnvPool) returned a NaN or infinite observation or "
                                   "reward; observations and rewards must be finite")  # fmt: skip
        return observations, rewards, terminated.astype(bool), truncated.astype(bool), infos

    def close_extras(self, **kwargs: Any) -> None:
        self.pool.close()
