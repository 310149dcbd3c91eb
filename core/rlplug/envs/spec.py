"""``EnvSpec``, what a recipe asks of its environment, and resolving its id for Gymnasium.

Resolving imports the modules the id needs, registers its suite and checks the suite is installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import EnvModuleError, RecipeError, UnknownNameError
from ..util.here import import_from_here
from ..util.suggest import did_you_mean
from .user_wrappers import modules as wrapper_modules
from .user_wrappers import normalised, resolve_wrappers
from .suites import SUITES, register_suite, require_suite, route_mujoco_warnings, split_env_id, suite_of


@dataclass(frozen=True)
class EnvSpec:
    """A single-agent Gymnasium environment as a recipe describes it: id, constructor arguments, the
    module that registers it, and the wrapper fields (see the module doc for the chain)."""

    id: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    module: str = ""
    hide_observation: tuple[int, ...] = ()
    frame_stack: int = 0
    atari: bool = False
    terminal_on_life_loss: bool = False
    normalize_reward: bool = False
    clip_actions: bool = True
    time_limit: int = 0
    gamma: float = 0.99
    """The discount ``NormalizeReward`` scales returns with (the algorithm's ``gamma`` when it has one)."""
    vector_mode: str = "sync"
    """``sync``: the training copies stepped in this process; ``async``: one worker process each."""
    action_mask: str = "auto"
    """Where the env's action mask is: ``auto`` (its Dict key), ``info`` or ``ignore`` (``rlplug.envs.masks``)."""
    wrappers: tuple[Mapping[str, Any], ...] = ()
    """The recipe's ``wrappers``: ``{"wrapper": "module:Name", "kwargs": {...}}`` each (``rlplug.envs.user_wrappers``)."""

    @classmethod
    def of(cls, env: str | EnvSpec, env_kwargs: Mapping[str, Any] | None = None) -> EnvSpec:
        """``env`` as a spec; ``env_kwargs`` (when given) replace its constructor arguments."""
        if isinstance(env, EnvSpec):
            return env if env_kwargs is None else _replace(env, kwargs=dict(env_kwargs))
        return cls(id=env, kwargs=dict(env_kwargs or {}))

    @classmethod
    def from_recipe(cls, recipe: Any, env_id: str | None = None, env_kwargs: Mapping[str, Any] | None = None,
                    gamma: float | None = None) -> EnvSpec:
        """The recipe's environment; a hand-made recipe object without the wrapper fields gets their defaults."""
        hyperparameters = getattr(recipe, "hyperparameters", None) or {}
        return cls(
            id=env_id if env_id is not None else recipe.env,
            kwargs=dict(env_kwargs if env_kwargs is not None else getattr(recipe, "env_kwargs", {})),
            module=getattr(recipe, "env_module", ""),
            hide_observation=tuple(getattr(recipe, "hide_observation", ())),
            frame_stack=getattr(recipe, "frame_stack", 0),
            atari=getattr(recipe, "atari", False),
            terminal_on_life_loss=getattr(recipe, "terminal_on_life_loss", False),
            normalize_reward=getattr(recipe, "normalize_reward", False),
            clip_actions=getattr(recipe, "clip_actions", True),
            time_limit=getattr(recipe, "time_limit", 0),
            gamma=float(gamma if gamma is not None else hyperparameters.get("gamma", 0.99)),
            vector_mode=getattr(recipe, "vector_mode", "sync"),
            action_mask=getattr(recipe, "action_mask", "auto"),
            wrappers=normalised(getattr(recipe, "wrappers", ())),
        )

    @property
    def modules(self) -> list[str]:
        """The modules imported before the environment is made: ``env_module``, the id's ``module:``, then the
        modules of its ``wrappers``."""
        return list(dict.fromkeys(m for m in (self.module, split_env_id(self.id)[0], *wrapper_modules(self.wrappers)) if m))


def _replace(spec: EnvSpec, **changes: Any) -> EnvSpec:
    import dataclasses

    return dataclasses.replace(spec, **changes)


def env_modules(recipe: Any) -> list[str]:
    """The modules a recipe's environment needs imported (recorded in run directories for ``eval``/``resume``)."""
    return EnvSpec.from_recipe(recipe).modules


def import_env_module(module: str, env_id: str) -> None:
    """Import a module that registers environments, or refuse in one line naming it. A module in the current
    directory is found as ``python -m`` finds it (``rlplug`` the console script starts with its own directory first
    on ``sys.path``, not the current one)."""
    try:
        import_from_here(module)
    except Exception as err:  # noqa: BLE001 - whatever the module raises on import, the line names it
        message = " ".join(str(err).split()) or "(no message)"
        raise EnvModuleError(
            f"environment '{env_id}': module '{module}' cannot be imported ({type(err).__name__}: {message[:200]}); "
            "install it, run rlplug in the directory that holds it, or put that directory on PYTHONPATH"
        ) from None


def resolve_env_id(spec: EnvSpec) -> str:
    """Import what the id needs, register its suite, check its extra is installed and that it is registered;
    returns the id as gymnasium's registry knows it (the ``module:`` prefix dropped)."""
    import gymnasium as gym

    for module in dict.fromkeys(m for m in (spec.module, split_env_id(spec.id)[0]) if m):
        import_env_module(module, spec.id)
    resolve_wrappers(spec.wrappers, spec.id)  # each entry's import and callable, one line naming the entry
    if spec.vector_mode == "envpool":
        from .envpool_vector import check_envpool

        check_envpool(spec)
    module, name = split_env_id(spec.id)
    register_suite(spec.id)
    if require_suite(spec.id, spec.atari) is SUITES["mujoco"]:
        route_mujoco_warnings()
    if name not in gym.registry:
        known = gym.registry.keys()
        if module:
            mine = [key for key, entry in gym.registry.items() if _entry_module(entry).partition(".")[0] == module.partition(".")[0]]
            listed = did_you_mean(name, mine) if mine else "; it registers no environments (gymnasium.register)"
            raise UnknownNameError(f"unknown environment '{spec.id}': module '{module}' does not register '{name}'{listed}")
        imported = f" (after importing env_module '{spec.module}')" if spec.module else ""
        raise UnknownNameError(f"unknown environment '{spec.id}'{imported}" + did_you_mean(name, known))
    if spec.atari:
        suite = suite_of(spec.id)
        if suite is None or suite.name != "atari":
            raise RecipeError(f"atari = true preprocesses Arcade Learning Environment games (ALE/...); '{spec.id}' is not one")
        frameskip = spec.kwargs.get("frameskip", 1)
        if frameskip != 1:
            raise RecipeError(f"atari = true skips frames itself (4); env_kwargs.frameskip = {frameskip!r} would skip again: drop it")
    return name


def _entry_module(entry: Any) -> str:
    point = entry.entry_point
    return point.partition(":")[0] if isinstance(point, str) else getattr(point, "__module__", "") or ""
