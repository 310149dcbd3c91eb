"""Making environments: one wrapped Gymnasium environment, a vector of training copies, their spaces.

``make_gym_env`` is the one place a single environment is made (wrapped as ``rlplug.envs.wrappers`` says);
``env_errors`` turns what an environment's constructor raises into one line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any

from ..errors import RlplugError, SpaceError
from .spec import EnvSpec, resolve_env_id
from .wrappers import make_options, wrap


def make_gym_env(env: str | EnvSpec, env_kwargs: Mapping[str, Any] | None = None, *, training: bool = True,
                 batch_checked: bool = False, **make_kwargs: Any) -> Any:
    """The wrapped single environment (the chain ``rlplug.envs.wrappers`` describes); ``make_kwargs`` go to ``gym.make`` too
    (``render_mode="rgb_array"`` for videos). ``batch_checked``: a copy of ``make_gym_vector_env``'s, whose
    values that env checks a batch at a time (``rlplug.envs.check``)."""
    spec = EnvSpec.of(env, env_kwargs)
    name = resolve_env_id(spec)
    kwargs = {**spec.kwargs, **make_kwargs}
    if kwargs.get("render_mode") == "rgb_array":
        # frames are drawn off-screen: else pygame's SDL probes for a Wayland display and prints
        # "error: XDG_RUNTIME_DIR is invalid or not set" on a successful `eval --video`
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    made = make_checked(name, spec.id, batch_checked, **{**kwargs, **make_options(spec)})
    return wrap(made, spec, training)


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
    workers import the env's module themselves, so ``env_module`` registrations reach them), or by EnvPool's
    C++ threads (``"envpool"``: ``rlplug.envs.envpool_vector``, EnvPool's own copy of the task, no wrappers)."""
    import gymnasium as gym

    from .check import AsyncVectorEnv, SyncVectorEnv

    spec = EnvSpec.of(env, env_kwargs)
    resolve_env_id(spec)  # refusals raised here, once, not from inside the vector env's constructor
    if spec.vector_mode == "envpool":
        from .envpool_vector import EnvPoolVectorEnv

        return EnvPoolVectorEnv(spec, num_envs)
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
