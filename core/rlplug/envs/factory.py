"""Environments from recipes: ids (``CartPole-v1``, ``module:Name-v0``, ``ALE/Pong-v5``), the suites that
need an optional extra, the wrappers recipe fields ask for, and the spaces of the wrapped environment.

``make_gym_env(spec, training)`` is the one place a single Gymnasium environment is made: the skrl vector env,
the TorchRL env, the evaluation env and the spaces probe all call it, so both backends step the same chain
of Gymnasium's own wrappers, innermost first:

* ``gym.make(id, **env_kwargs)``: a ``module:`` prefix or the recipe's ``env_module`` is imported first (its
  ``gymnasium.register`` calls add ids); ALE and MinAtar ids are registered when one is used; ``time_limit``
  is gym.make's ``max_episode_steps`` (the registered ``TimeLimit`` replaced); ALE under ``atari`` with
  ``frameskip=1`` (``AtariPreprocessing`` skips frames itself); rlplug's ``EnvContractChecker`` takes the
  place of gymnasium's ``PassiveEnvChecker`` around the base env (``rlplug.envs.check``);
* ``AtariPreprocessing`` (``atari``): up to 30 no-op actions after a reset, frame skip 4 (max over the
  last two frames), 84x84 grey uint8, and with ``terminal_on_life_loss`` a lost life ends a training
  episode; then ``TimeLimit`` counting agent steps when ``time_limit`` is given;
* ``ClipReward(-1, 1)`` (``atari``, training only);
* ``FrameStackObservation`` (``frame_stack`` > 1): the last k observations on a new leading axis;
* ``NormalizeReward`` (``normalize_reward``, training only, with the algorithm's ``gamma``);
* ``TransformAction(np.clip)`` (``clip_actions``, Box actions): actions clipped to the space's bounds on
  their way in while the space itself stays bounded (gymnasium's ``ClipAction`` would widen it to
  ±inf, and the models scale their outputs to those bounds). The agents keep the unclipped sample.

Evaluation (``training=False``) never clips or normalises rewards and never ends an episode at a lost
life: its return is the game's score.
"""

from __future__ import annotations

from functools import partial

import importlib
import importlib.util
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..errors import EnvModuleError, RecipeError, RlplugError, SpaceError, SuiteMissingError, UnknownNameError
from ..util.suggest import did_you_mean

# ---- suites that need an optional extra -------------------------------------------------------------


@dataclass(frozen=True)
class Suite:
    """An environment family behind a native package, installed with ``pip install 'rlplug[<extra>]'``."""

    name: str
    label: str
    modules: tuple[str, ...]
    """Import names that must be installed (checked with ``importlib.util.find_spec``, nothing imported)."""
    extra: str
    resumes_mid_episode: bool
    """Whether a checkpoint captures a running episode (``rlplug.envs.state``); otherwise resume restarts it."""


SUITES: dict[str, Suite] = {s.name: s for s in (
    Suite("mujoco", "MuJoCo", ("mujoco",), "mujoco", True),
    Suite("box2d", "Box2D", ("Box2D",), "box2d", False),
    Suite("atari", "the Arcade Learning Environment", ("ale_py",), "atari", False),
    Suite("minatar", "MinAtar", ("minatar",), "minatar", True),
)}
_ENTRY_POINT_SUITES = (
    ("gymnasium.envs.mujoco", "mujoco"), ("gymnasium.envs.box2d", "box2d"), ("ale_py", "atari"), ("minatar", "minatar"),
)
_NAMESPACE_SUITES = {"ALE": "atari", "MinAtar": "minatar"}
ATARI_PREPROCESSING_NEEDS = ("cv2", "OpenCV", "atari")
"""``AtariPreprocessing`` resizes frames with OpenCV (``opencv-python-headless`` in the atari extra)."""


def suite_available(suite: Suite) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in suite.modules)


def split_env_id(env_id: str) -> tuple[str, str]:
    """``"my_envs:Tiny-v0"`` -> ``("my_envs", "Tiny-v0")``; ``"CartPole-v1"`` -> ``("", "CartPole-v1")``.
    Multi-agent ids (``mpe:NAME``, ``vmas:NAME``) name a family, not a module: ``("", env_id)``."""
    from .multiagent import is_multiagent_env

    module, colon, name = env_id.rpartition(":")
    return (module, name) if colon and not is_multiagent_env(env_id) else ("", env_id)


def suite_of(env_id: str) -> Suite | None:
    """The optional suite an id belongs to (its namespace, or the module of its registered entry point)."""
    _, name = split_env_id(env_id)
    namespace = name.partition("/")[0] if "/" in name else ""
    if namespace in _NAMESPACE_SUITES:
        return SUITES[_NAMESPACE_SUITES[namespace]]
    import gymnasium as gym

    spec = gym.registry.get(name)
    if spec is None:
        return None
    entry = spec.entry_point
    module = entry.partition(":")[0] if isinstance(entry, str) else getattr(entry, "__module__", "") or ""
    for prefix, suite in _ENTRY_POINT_SUITES:
        if module == prefix or module.startswith(prefix + "."):
            return SUITES[suite]
    return None


def reward_threshold(env_id: str) -> float | None:
    """The return Gymnasium registers as solving ``env_id`` (its spec's ``reward_threshold``), without making it."""
    import gymnasium as gym

    threshold = getattr(gym.registry.get(split_env_id(env_id)[1]), "reward_threshold", None)
    return float(threshold) if isinstance(threshold, (int, float)) else None


def require_suite(env_id: str, atari: bool = False) -> Suite | None:
    """Refuse an id whose suite is not installed, naming the extra that installs it; returns the suite."""
    suite = suite_of(env_id)
    if suite is not None and not suite_available(suite):
        raise SuiteMissingError(f"environment '{env_id}' needs {suite.label}: pip install 'rlplug[{suite.extra}]'")
    module, label, extra = ATARI_PREPROCESSING_NEEDS
    if atari and importlib.util.find_spec(module) is None:
        raise SuiteMissingError(f"environment '{env_id}' with atari = true needs {label}: pip install 'rlplug[{extra}]'")
    return suite


_REGISTERED: set[str] = set()


def register_suite(env_id: str) -> None:
    """Register the ids of the installed suite ``env_id`` belongs to, once, when gymnasium does not know it:
    ``ALE/...`` and the ALE's older ids (importing ``ale_py`` registers them) and ``MinAtar/...``
    (``minatar.gym.register_envs()``, which nothing calls on import)."""
    import gymnasium as gym

    _, name = split_env_id(env_id)
    if name in gym.registry:
        return
    if (name.startswith("ALE/") or "/" not in name) and importlib.util.find_spec("ale_py") is not None:
        import ale_py  # an unknown plain id may be one of its v0/v4 ids (PongNoFrameskip-v4)

        gym.register_envs(ale_py)
    elif name.startswith("MinAtar/") and "minatar" not in _REGISTERED and importlib.util.find_spec("minatar") is not None:
        _REGISTERED.add("minatar")
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # minatar logs a warning on import when seaborn (rendering only) is absent
        try:
            from minatar.gym import register_envs
        finally:
            root.setLevel(level)
        register_envs()


def route_mujoco_warnings() -> None:
    """Send MuJoCo's warnings through Python's ``warnings`` (once a process each; ``-W ignore:::mujoco``) instead of
    MuJoCo's own print to the terminal, less those in ``_MUJOCO_QUIET``: gymnasium's HalfCheetah XML alone printed
    a 'settotalmass' deprecation for every env made. A handler someone already installed is kept."""
    import mujoco

    if mujoco.get_mju_user_warning() is None:
        mujoco.set_mju_user_warning(_warn_from_mujoco)


_MUJOCO_WARNED: dict[Any, Any] = {}
"""The warnings registry of MuJoCo's messages: each is shown once a process under Python's default filter."""


_MUJOCO_QUIET = ("compiler attribute 'settotalmass' is deprecated",)
"""MuJoCo messages about gymnasium's own model files, which neither the user nor rlplug can act on: dropped
(every HalfCheetah run printed this one)."""


def _warn_from_mujoco(message: str) -> None:
    import sys
    import warnings

    if any(quiet in message for quiet in _MUJOCO_QUIET):
        return
    try:  # attributed to "mujoco" (one line, no rlplug source line; ``-W ignore:::mujoco`` silences it)
        warnings.warn_explicit(f"MuJoCo: {message}", RuntimeWarning, "mujoco", 0, module="mujoco", registry=_MUJOCO_WARNED)
    except Exception:  # under -W error: an exception must not cross MuJoCo's C callback (the process aborts)
        print(f"rlplug: MuJoCo warning: {message}", file=sys.stderr)


def resume_restart_note(env_id: str) -> str | None:
    """The note a resume of this env prints when its episodes cannot continue (Box2D, ALE), else ``None``."""
    suite = suite_of(env_id)
    if suite is None or suite.resumes_mid_episode:
        return None
    return (f"environment '{env_id}' keeps its state in {suite.label}'s C objects, which a checkpoint cannot hold: "
            "the resumed run starts new episodes (networks, optimisers, memory and counters carry on)")


# ---- what a recipe asks of its environment -----------------------------------------------------------


@dataclass(frozen=True)
class EnvSpec:
    """A single-agent Gymnasium environment as a recipe describes it: id, constructor arguments, the
    module that registers it, and the wrapper fields (see the module doc for the chain)."""

    id: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    module: str = ""
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
            frame_stack=getattr(recipe, "frame_stack", 0),
            atari=getattr(recipe, "atari", False),
            terminal_on_life_loss=getattr(recipe, "terminal_on_life_loss", False),
            normalize_reward=getattr(recipe, "normalize_reward", False),
            clip_actions=getattr(recipe, "clip_actions", True),
            time_limit=getattr(recipe, "time_limit", 0),
            gamma=float(gamma if gamma is not None else hyperparameters.get("gamma", 0.99)),
            vector_mode=getattr(recipe, "vector_mode", "sync"),
        )

    @property
    def modules(self) -> list[str]:
        """The modules imported before the environment is made: ``env_module``, then the id's ``module:``."""
        return list(dict.fromkeys(m for m in (self.module, split_env_id(self.id)[0]) if m))


def _replace(spec: EnvSpec, **changes: Any) -> EnvSpec:
    import dataclasses

    return dataclasses.replace(spec, **changes)


def env_modules(recipe: Any) -> list[str]:
    """The modules a recipe's environment needs imported (recorded in run directories for ``eval``/``resume``)."""
    return EnvSpec.from_recipe(recipe).modules


def import_env_module(module: str, env_id: str) -> None:
    """Import a module that registers environments, or refuse in one line naming it."""
    try:
        importlib.import_module(module)
    except Exception as err:  # noqa: BLE001 - whatever the module raises on import, the line names it
        message = " ".join(str(err).split()) or "(no message)"
        raise EnvModuleError(
            f"environment '{env_id}': module '{module}' cannot be imported ({type(err).__name__}: {message[:200]}); "
            "install it or put it on PYTHONPATH"
        ) from None


def resolve_env_id(spec: EnvSpec) -> str:
    """Import what the id needs, register its suite, check its extra is installed and that it is registered;
    returns the id as gymnasium's registry knows it (the ``module:`` prefix dropped)."""
    import gymnasium as gym

    for module in spec.modules:
        import_env_module(module, spec.id)
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


# ---- making one environment ---------------------------------------------------------------------------


def make_gym_env(env: str | EnvSpec, env_kwargs: Mapping[str, Any] | None = None, *, training: bool = True,
                 batch_checked: bool = False, **make_kwargs: Any) -> Any:
    """The wrapped single environment (see the module doc); ``make_kwargs`` go to ``gym.make`` too
    (``render_mode="rgb_array"`` for videos). ``batch_checked``: a copy of ``make_gym_vector_env``'s, whose
    values that env checks a batch at a time (``rlplug.envs.check``)."""
    import gymnasium as gym
    import numpy as np

    spec = EnvSpec.of(env, env_kwargs)
    name = resolve_env_id(spec)
    kwargs = {**spec.kwargs, **make_kwargs}
    if kwargs.get("render_mode") == "rgb_array":
        # frames are drawn off-screen: else pygame's SDL probes for a Wayland display and prints
        # "error: XDG_RUNTIME_DIR is invalid or not set" on a successful `eval --video`
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    if spec.atari:
        kwargs["frameskip"] = 1
    elif spec.time_limit:
        kwargs["max_episode_steps"] = spec.time_limit
    made = make_checked(name, spec.id, batch_checked, **kwargs)
    if spec.atari:
        made = gym.wrappers.AtariPreprocessing(
            made, noop_max=30, frame_skip=4, screen_size=84, grayscale_obs=True, scale_obs=False,
            terminal_on_life_loss=spec.terminal_on_life_loss and training,
        )
        if spec.time_limit:
            made = gym.wrappers.TimeLimit(made, spec.time_limit)
        if training:
            made = gym.wrappers.ClipReward(made, -1.0, 1.0)
    if spec.frame_stack > 1:
        made = gym.wrappers.FrameStackObservation(made, spec.frame_stack)
    if spec.normalize_reward and training:
        made = gym.wrappers.NormalizeReward(made, gamma=spec.gamma)
    space = made.action_space
    if spec.clip_actions and isinstance(space, gym.spaces.Box):
        low, high = space.low, space.high
        made = gym.wrappers.TransformAction(made, lambda action: np.clip(action, low, high), space)
    return made


def make_checked(name: str, env_id: str, batch_checked: bool = False, **kwargs: Any) -> Any:
    """``gym.make(name, **kwargs)`` with rlplug's ``EnvContractChecker`` (named ``env_id``) in the place of
    gymnasium's ``PassiveEnvChecker``: directly around the base env, under gym.make's wrappers
    (``OrderEnforcing``, ``TimeLimit``), so it sees what the env itself returns (``rlplug.envs.check``)."""
    import gymnasium as gym

    from .check import EnvContractChecker

    made = gym.make(name, **{**kwargs, "disable_env_checker": True})
    if made is made.unwrapped:
        return EnvContractChecker(made, env_id, each_step=not batch_checked)
    layer = made
    while layer.env is not made.unwrapped:
        layer = layer.env
    layer.env = EnvContractChecker(layer.env, env_id, each_step=not batch_checked)
    return made


def make_gym_vector_env(env: str | EnvSpec, env_kwargs: Mapping[str, Any] | None, num_envs: int, *, training: bool = True) -> Any:
    """``num_envs`` wrapped copies with SAME_STEP autoreset (both backends' training envs; ``gym.make_vec``'s
    modes, with rlplug's wrapper chain around each copy): stepped in this process (``vector_mode = "sync"``),
    or each in its own worker process (``"async"``: ``AsyncVectorEnv``, which steps them in parallel; the
    workers import the env's module themselves, so ``env_module`` registrations reach them)."""
    import gymnasium as gym

    from .check import AsyncVectorEnv, SyncVectorEnv

    spec = EnvSpec.of(env, env_kwargs)
    resolve_env_id(spec)  # refusals raised here, once, not from inside the vector env's constructor
    mode = gym.vector.AutoresetMode.SAME_STEP
    if spec.vector_mode == "async":
        return AsyncVectorEnv([partial(make_gym_env, spec, training=training, batch_checked=True)] * num_envs, spec.id,
                              autoreset_mode=mode)

    def one() -> Any:
        return make_gym_env(spec, training=training, batch_checked=True)

    return SyncVectorEnv([one] * num_envs, spec.id, autoreset_mode=mode)


# ---- probing -------------------------------------------------------------------------------------------


def probe_spaces(env: str | EnvSpec, env_kwargs: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
    """Make the (wrapped, training) environment once and return ``(observation_space, action_space)``."""
    spec = EnvSpec.of(env, env_kwargs)
    try:
        made = make_gym_env(spec)
    except TypeError as err:
        raise SpaceError(f"environment '{spec.id}' rejected env_kwargs {dict(spec.kwargs)}: {err}") from None
    try:
        return made.observation_space, made.action_space
    finally:
        made.close()


def action_space_kind(space: Any) -> str:
    """``discrete``, ``continuous`` or ``multi-discrete``; anything else is refused."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Discrete):
        return "discrete"
    if isinstance(space, gym.spaces.Box):
        return "continuous"
    if isinstance(space, gym.spaces.MultiDiscrete):
        return "multi-discrete"
    raise SpaceError(f"action space {space} is not supported (discrete, continuous or multi-discrete)")


WRAPPER_FIELDS = ("frame_stack", "atari", "terminal_on_life_loss", "normalize_reward", "time_limit")
"""Recipe fields that wrap a Gymnasium environment (``clip_actions`` too, but its default is on)."""


def check_wrapper_fields(recipe: Any, multiagent: bool) -> None:
    """Wrapper fields need a single-agent Gymnasium env; ``terminal_on_life_loss`` needs ``atari``."""
    where = f"recipe '{recipe.name}'"
    if getattr(recipe, "terminal_on_life_loss", False) and not getattr(recipe, "atari", False):
        raise RecipeError(f"{where}: terminal_on_life_loss is an option of atari preprocessing; set atari = true too")
    if multiagent:
        given = [name for name in WRAPPER_FIELDS if getattr(recipe, name, 0)]
        if not getattr(recipe, "clip_actions", True):
            given.append("clip_actions")
        if given:
            raise RecipeError(f"{where}: {given[0]} wraps single-agent Gymnasium environments, not '{recipe.env}'")


@contextmanager
def env_errors(env_id: str, env_kwargs: dict[str, Any], where: str = "") -> Iterator[None]:
    """Make an environment inside this block: whatever its constructor raises becomes one line naming the
    env and its ``env_kwargs`` (``mpe:simple_spread`` with ``N = 0`` raises a numpy ``ValueError``, VMAS an
    ``AssertionError`` for an unknown scenario). rlplug's own errors pass through unchanged.

    Used around the probe in ``Session.prepare``; the run layer wraps its own environment constructions
    (the training and evaluation envs) the same way.
    """
    try:
        yield
    except RlplugError:
        raise
    except Exception as err:  # noqa: BLE001 - third-party constructors raise anything (AssertionError too)
        kwargs = f" with env_kwargs {env_kwargs}" if env_kwargs else ""
        raise SpaceError(
            f"{where + ': ' if where else ''}environment '{env_id}' failed to start{kwargs}: {type(err).__name__}: {error_text(err)}"
        ) from err


def error_text(err: BaseException) -> str:
    """An environment's exception message on one line of at most 200 characters, for the line naming it."""
    message = " ".join(str(err).split()) or "(no message)"
    return message if len(message) <= 200 else message[:197] + "..."
