"""Multi-agent environments: ``mpe:NAME``, ``vmas:NAME`` and ``pz:MODULE:FACTORY`` ids, and their spaces.

A recipe names a multi-agent environment as ``family:scenario``: ``mpe:simple_spread`` is the
``mpe2`` package's PettingZoo parallel env ``simple_spread_v3`` (its ``env_kwargs`` are the env's own
options: ``N``, ``max_cycles``, ``local_ratio``, ``continuous_actions``), ``vmas:navigation`` is the
VMAS scenario (``env_kwargs`` are ``vmas.make_env`` options such as ``max_steps`` plus the
scenario's own, such as ``n_agents``), ``pz:my_package.envs:make_env`` is a user's own PettingZoo
``ParallelEnv``, returned by calling ``make_env(**env_kwargs)``. rlplug's multi-agent cells need
homogeneous agents (one observation and one action space shared by all of them).

Action masks follow PettingZoo's convention: each agent's observation is a Dict ``{"observation": Box,
"action_mask": [n_actions]}`` (1 = allowed) over Discrete actions; a ``pz`` env that puts the mask in
``info["action_mask"]`` instead is wrapped (``pettingzoo_masks.InfoMaskToObservation``) so both backends see the Dict.
``MultiAgentSpaces.observation_space`` is then that Dict (what the exported policy takes) and
``feature_space`` the ``"observation"`` Box the networks read; the global state holds no masks.

Parsing ids is torch-free; probing and evaluating import ``mpe2`` (numpy) or ``vmas`` (torch) only
when called, which happens only when a multi-agent recipe is prepared.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import BackendMissingError, EnvModuleError, SpaceError, UnknownNameError
from ..util.suggest import did_you_mean
from .masks import ACTION_MASK_KEY as MASK_KEY  # PettingZoo's key, the same as a single-agent env's

FAMILIES = ("mpe", "vmas", "pz")
PETTINGZOO_FAMILIES = ("mpe", "pz")
"""Families whose envs are PettingZoo ``ParallelEnv``s (made by ``make_pettingzoo_env``)."""
VMAS_DEFAULT_MAX_STEPS = 100
"""VMAS scenarios run forever unless ``max_steps`` is given; rlplug cuts episodes here by default."""


def is_multiagent_env(env_id: str) -> bool:
    """``True`` for ``mpe:NAME`` / ``vmas:NAME`` / ``pz:MODULE:FACTORY`` ids (a Gymnasium id never has this prefix)."""
    family, sep, _ = env_id.partition(":")
    return bool(sep) and family in FAMILIES


def parse_env_id(env_id: str) -> tuple[str, str]:
    """``"mpe:simple_spread"`` -> ``("mpe", "simple_spread")``; ``"pz:pkg.mod:make"`` -> ``("pz", "pkg.mod:make")``."""
    family, sep, name = env_id.partition(":")
    if not sep or family not in FAMILIES or not name:
        raise UnknownNameError(f"'{env_id}' is not a multi-agent environment id (mpe:NAME, vmas:NAME, pz:MODULE:FACTORY)")
    if family == "pz":
        module, colon, factory = name.rpartition(":")
        if not colon or not module or not factory.isidentifier():
            raise UnknownNameError(f"'{env_id}' is not a PettingZoo env id; write pz:MODULE:FACTORY, e.g. pz:my_envs.board:make_env")
    return family, name


def check_env_kind(algorithm: str, kind: str, recipe_name: str, env_id: str) -> None:
    """Refuse a single-agent env in a multi-agent recipe and the reverse, before anything is probed."""
    multi = is_multiagent_env(env_id)
    if kind == "multi-agent" and not multi:
        raise SpaceError(
            f"recipe '{recipe_name}': {algorithm} is a multi-agent algorithm but '{env_id}' is a single-agent "
            "environment; use a multi-agent id such as 'mpe:simple_spread' or 'vmas:navigation'"
        )
    if kind != "multi-agent" and multi:
        raise SpaceError(
            f"recipe '{recipe_name}': {algorithm} is a single-agent algorithm but '{env_id}' is a multi-agent "
            "environment; use a multi-agent algorithm such as mappo"
        )


# ---- making the environments ----------------------------------------------------------------------


def _require(module: str, env_id: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise BackendMissingError(f"environment '{env_id}' needs the '{module}' package: pip install {module}") from None


def mpe_module(name: str, env_id: str = "") -> Any:
    """The ``mpe2`` module of scenario ``name`` (``simple_spread`` -> ``mpe2.simple_spread_v3``)."""
    mpe2 = _require("mpe2", env_id or f"mpe:{name}")
    versions = {}
    for info in pkgutil.iter_modules(mpe2.__path__):
        match = re.fullmatch(r"(\w+)_v(\d+)", info.name)
        if match:
            versions[match.group(1)] = info.name
    if name not in versions:
        raise UnknownNameError(f"unknown MPE scenario '{name}'" + did_you_mean(name, versions))
    return importlib.import_module(f"mpe2.{versions[name]}")


def make_mpe_env(name: str, env_kwargs: dict[str, Any]) -> Any:
    """A PettingZoo ``ParallelEnv`` of the MPE scenario ``name`` (discrete actions unless asked otherwise).

    ``module.parallel_env`` minus two of its AEC wrappers: ``OrderEnforcingWrapper`` and
    ``AssertOutOfBoundsWrapper`` only check the caller (our policies always send in-bounds actions in
    order) and cost ~40 % of every step (simple_spread: 1.5k vs 0.9k steps/s). Continuous actions keep
    ``ClipOutOfBoundsWrapper``, which changes what the env receives.
    """
    from pettingzoo.utils import wrappers
    from pettingzoo.utils.conversions import aec_to_parallel

    module = mpe_module(name)
    try:
        env = module.raw_env(**env_kwargs)
    except TypeError as err:
        raise SpaceError(f"environment 'mpe:{name}' rejected env_kwargs {env_kwargs}: {err}") from None
    if env.continuous_actions:
        env = wrappers.ClipOutOfBoundsWrapper(env)
    return aec_to_parallel(env)


def make_pz_env(name: str, env_kwargs: dict[str, Any]) -> Any:
    """The user's ``ParallelEnv`` of ``pz:MODULE:FACTORY``: ``FACTORY(**env_kwargs)`` from ``MODULE``; masks
    given in ``info["action_mask"]`` are moved into the observations (``InfoMaskToObservation``)."""
    from pettingzoo.utils.env import ParallelEnv

    env_id = f"pz:{name}"
    module_name, _, factory_name = name.rpartition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise EnvModuleError(f"environment '{env_id}': cannot import module '{module_name}' ({err})") from None
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        public = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
        raise UnknownNameError(f"environment '{env_id}': module '{module_name}' has no callable '{factory_name}'" + did_you_mean(factory_name, public))
    try:
        env = factory(**env_kwargs)
    except TypeError as err:
        raise SpaceError(f"environment '{env_id}' rejected env_kwargs {env_kwargs}: {err}") from None
    if not isinstance(env, ParallelEnv):
        raise SpaceError(f"environment '{env_id}': {factory_name}() returned a {type(env).__name__}, not a PettingZoo ParallelEnv")
    if not _has_dict_mask(env.observation_space(env.possible_agents[0])):
        _, infos = env.reset(seed=0)
        if MASK_KEY in (infos.get(env.possible_agents[0]) or {}):
            from .pettingzoo_masks import InfoMaskToObservation  # imports pettingzoo's wrappers

            return InfoMaskToObservation(env)
    return env


def _has_dict_mask(space: Any) -> bool:
    return hasattr(space, "spaces") and isinstance(space.spaces, Mapping) and MASK_KEY in space.spaces


def boxed_mask(space: Any) -> Any:
    """A masked observation space with its ``action_mask`` as an int8 ``Box(0, 1)`` (skrl cannot read
    ``MultiBinary``); any other space as it is."""
    if not _has_dict_mask(space):
        return space
    import gymnasium as gym
    import numpy as np

    shape = tuple(space.spaces[MASK_KEY].shape)
    return gym.spaces.Dict({**space.spaces, MASK_KEY: gym.spaces.Box(0, 1, shape, np.int8)})


def make_pettingzoo_env(env_id: str, env_kwargs: dict[str, Any]) -> Any:
    """The ``ParallelEnv`` of an ``mpe:`` or ``pz:`` id."""
    family, name = parse_env_id(env_id)
    return make_mpe_env(name, env_kwargs) if family == "mpe" else make_pz_env(name, env_kwargs)


def vmas_kwargs(env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """``env_kwargs`` with rlplug's VMAS defaults: a ``max_steps`` cut, continuous actions clamped to bounds."""
    return {"max_steps": VMAS_DEFAULT_MAX_STEPS, "continuous_actions": True, **env_kwargs}


def make_vmas_env(name: str, env_kwargs: dict[str, Any], num_envs: int, seed: int, device: str = "cpu") -> Any:
    """A VMAS ``Environment`` of ``num_envs`` vectorised copies of scenario ``name``, seeded."""
    vmas = _require("vmas", f"vmas:{name}")
    try:
        return vmas.make_env(
            scenario=name, num_envs=num_envs, device=device, seed=seed, clamp_actions=True, **vmas_kwargs(env_kwargs)
        )
    except (TypeError, ValueError) as err:
        raise SpaceError(f"environment 'vmas:{name}' rejected env_kwargs {env_kwargs}: {err}") from None
    except (ModuleNotFoundError, AttributeError) as err:
        raise UnknownNameError(f"unknown VMAS scenario '{name}' ({err})") from None


# ---- spaces -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MultiAgentSpaces:
    """What a multi-agent env looks like: agent names, per-agent spaces, and the global state's space.

    ``state_space`` is the env's global state: PettingZoo's ``state()`` (MPE: every agent's observation
    concatenated), for VMAS the agents' observations concatenated the same way.
    """

    agents: tuple[str, ...]
    observation_space: Any
    action_space: Any
    state_space: Any

    @property
    def n_agents(self) -> int:
        return len(self.agents)

    @property
    def masked(self) -> bool:
        """Each agent's observation carries an ``action_mask`` (a Dict ``{"observation", "action_mask"}``)."""
        return _has_dict_mask(self.observation_space)

    @property
    def feature_space(self) -> Any:
        """What the networks read: the ``"observation"`` Box of a masked env, else the observation space."""
        return self.observation_space["observation"] if self.masked else self.observation_space

    @property
    def mask_size(self) -> int:
        """The mask's length (the number of actions) of a masked env, else 0."""
        return int(self.action_space.n) if self.masked else 0


def _homogeneous(env_id: str, what: str, spaces: list[Any]) -> Any:
    if any(space != spaces[0] for space in spaces[1:]):
        raise SpaceError(f"environment '{env_id}' has agents with different {what} spaces; rlplug needs identical agents")
    return spaces[0]


def gymnasium_space(space: Any) -> Any:
    """VMAS builds its spaces with the legacy ``gym`` package; rlplug's models expect gymnasium's."""
    import gymnasium as gym

    if isinstance(space, gym.Space):
        return space
    import numpy as np

    if hasattr(space, "n"):
        return gym.spaces.Discrete(int(space.n))
    return gym.spaces.Box(np.asarray(space.low), np.asarray(space.high), tuple(space.shape), np.float32)


def probe_multiagent_spaces(env_id: str, env_kwargs: dict[str, Any]) -> MultiAgentSpaces:
    """Make the environment once and return its agents and spaces."""
    import gymnasium as gym
    import numpy as np

    family, name = parse_env_id(env_id)
    if family in PETTINGZOO_FAMILIES:
        env = make_mpe_env(name, env_kwargs) if family == "mpe" else make_pz_env(name, env_kwargs)
        try:
            agents = tuple(env.possible_agents)
            observation = _homogeneous(env_id, "observation", [env.observation_space(a) for a in agents])
            action = _homogeneous(env_id, "action", [env.action_space(a) for a in agents])
            state_space = env.state_space if family == "mpe" else None
        finally:
            env.close()
        if family == "mpe":
            return MultiAgentSpaces(agents, observation, action, state_space)
        return _pz_spaces(env_id, agents, observation, action)
    env = make_vmas_env(name, env_kwargs, num_envs=1, seed=0)
    agents = tuple(agent.name for agent in env.agents)
    observation = _homogeneous(env_id, "observation", [gymnasium_space(s) for s in env.observation_space])
    action = _homogeneous(env_id, "action", [gymnasium_space(s) for s in env.action_space])
    if not isinstance(observation, gym.spaces.Box):
        raise SpaceError(f"environment '{env_id}' has observation space {observation}; rlplug needs a flat Box")
    size = int(np.prod(observation.shape)) * len(agents)
    state = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)
    return MultiAgentSpaces(agents, observation, action, state)


def _pz_spaces(env_id: str, agents: tuple[str, ...], observation: Any, action: Any) -> MultiAgentSpaces:
    """A ``pz:`` env's spaces: a flat Box observation, or ``{"observation": Box, "action_mask": [n]}`` over
    ``Discrete(n)`` actions; the global state is the agents' observations (never their masks) concatenated."""
    import gymnasium as gym
    import numpy as np

    features = observation
    if _has_dict_mask(observation):
        extra = sorted(set(observation.spaces) - {"observation", MASK_KEY})
        if extra or "observation" not in observation.spaces:
            raise SpaceError(f"environment '{env_id}': a masked observation must be a Dict of 'observation' and '{MASK_KEY}' only, got keys {sorted(observation.spaces)}")
        if not isinstance(action, gym.spaces.Discrete):
            raise SpaceError(f"environment '{env_id}': action masks need Discrete actions, got {action}")
        mask_shape = tuple(observation.spaces[MASK_KEY].shape)
        if mask_shape != (int(action.n),):
            raise SpaceError(f"environment '{env_id}': '{MASK_KEY}' has shape {mask_shape}, expected ({int(action.n)},) for {action}")
        features = observation.spaces["observation"]
    if not isinstance(features, gym.spaces.Box) or len(features.shape) != 1:
        raise SpaceError(f"environment '{env_id}' has observation space {features}; rlplug needs a flat Box (with an optional '{MASK_KEY}')")
    state = gym.spaces.Box(-np.inf, np.inf, (int(features.shape[0]) * len(agents),), np.float32)
    return MultiAgentSpaces(agents, boxed_mask(observation), action, state)
