"""Multi-agent environments: ``mpe:NAME`` and ``vmas:NAME`` ids, their spaces, and the evaluation loop.

A recipe names a multi-agent environment as ``family:scenario``: ``mpe:simple_spread`` is the
``mpe2`` package's PettingZoo parallel env ``simple_spread_v3`` (its ``env_kwargs`` are the env's own
options: ``N``, ``max_cycles``, ``local_ratio``, ``continuous_actions``), ``vmas:navigation`` is the
VMAS scenario (``env_kwargs`` are ``vmas.make_env`` options such as ``max_steps`` plus the
scenario's own, such as ``n_agents``). rlplug's multi-agent cells need homogeneous agents (one
observation and one action space shared by all of them), which both families provide.

Parsing ids is torch-free; probing and evaluating import ``mpe2`` (numpy) or ``vmas`` (torch) only
when called, which happens only when a multi-agent recipe is prepared.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass
from typing import Any

from ..errors import BackendMissingError, SpaceError, UnknownNameError
from ..util.suggest import did_you_mean

FAMILIES = ("mpe", "vmas")
VMAS_DEFAULT_MAX_STEPS = 100
"""VMAS scenarios run forever unless ``max_steps`` is given; rlplug cuts episodes here by default."""


def is_multiagent_env(env_id: str) -> bool:
    """``True`` for ``mpe:NAME`` / ``vmas:NAME`` ids (a Gymnasium id never has this prefix)."""
    family, sep, _ = env_id.partition(":")
    return bool(sep) and family in FAMILIES


def parse_env_id(env_id: str) -> tuple[str, str]:
    """``"mpe:simple_spread"`` -> ``("mpe", "simple_spread")``."""
    family, sep, name = env_id.partition(":")
    if not sep or family not in FAMILIES or not name:
        raise UnknownNameError(f"'{env_id}' is not a multi-agent environment id ({', '.join(f + ':NAME' for f in FAMILIES)})")
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
    if family == "mpe":
        env = make_mpe_env(name, env_kwargs)
        try:
            agents = tuple(env.possible_agents)
            observation = _homogeneous(env_id, "observation", [env.observation_space(a) for a in agents])
            action = _homogeneous(env_id, "action", [env.action_space(a) for a in agents])
            return MultiAgentSpaces(agents, observation, action, env.state_space)
        finally:
            env.close()
    env = make_vmas_env(name, env_kwargs, num_envs=1, seed=0)
    agents = tuple(agent.name for agent in env.agents)
    observation = _homogeneous(env_id, "observation", [gymnasium_space(s) for s in env.observation_space])
    action = _homogeneous(env_id, "action", [gymnasium_space(s) for s in env.action_space])
    if not isinstance(observation, gym.spaces.Box):
        raise SpaceError(f"environment '{env_id}' has observation space {observation}; rlplug needs a flat Box")
    size = int(np.prod(observation.shape)) * len(agents)
    state = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)
    return MultiAgentSpaces(agents, observation, action, state)
