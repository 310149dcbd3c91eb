"""The environment suites behind an optional extra (MuJoCo, Box2D, the ALE, MinAtar, MiniGrid, DeepMind Control).

Which suite an id belongs to, whether it is installed, registering its ids, its warnings, and what a resume of it
keeps.
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass
from typing import Any

from ..errors import SuiteMissingError


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
    # MiniGrid's grid, agent and objects are Python objects a checkpoint does not capture: a resume starts new episodes
    Suite("minigrid", "MiniGrid", ("minigrid",), "minigrid", False),
    # DeepMind Control through Shimmy's gymnasium ids (dm_control/DOMAIN-TASK-v0); its physics lives in dm_control's
    # own objects, which a checkpoint does not capture: a resume starts new episodes
    Suite("dm_control", "DeepMind Control (through Shimmy)", ("dm_control", "shimmy"), "dm-control", False),
)}
_ENTRY_POINT_SUITES = (
    ("gymnasium.envs.mujoco", "mujoco"), ("gymnasium.envs.box2d", "box2d"), ("ale_py", "atari"), ("minatar", "minatar"),
)
_NAMESPACE_SUITES = {"ALE": "atari", "MinAtar": "minatar", "dm_control": "dm_control"}
_PREFIX_SUITES = (("MiniGrid-", "minigrid"), ("BabyAI-", "minigrid"))
"""Suites whose ids carry no namespace but a name prefix, registered only once their package is imported."""
ATARI_PREPROCESSING_NEEDS = ("cv2", "OpenCV", "atari")
"""``AtariPreprocessing`` resizes frames with OpenCV (``opencv-python-headless`` in the atari extra)."""


def suite_available(suite: Suite) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in suite.modules)


def split_env_id(env_id: str) -> tuple[str, str]:
    """``"my_envs:Tiny-v0"`` -> ``("my_envs", "Tiny-v0")``; ``"CartPole-v1"`` -> ``("", "CartPole-v1")``.
    Multi-agent ids (``mpe:NAME``, ``vmas:NAME``) name a family, not a module: ``("", env_id)``; so do
    torch-native ids (``torch:MODULE:FACTORY``, ``rlplug.envs.torch_native``), which import their module themselves."""
    from .multiagent import is_multiagent_env
    from .torch_native import is_torch_env

    module, colon, name = env_id.rpartition(":")
    return (module, name) if colon and not is_multiagent_env(env_id) and not is_torch_env(env_id) else ("", env_id)


def suite_of(env_id: str) -> Suite | None:
    """The optional suite an id belongs to (its namespace, or the module of its registered entry point)."""
    _, name = split_env_id(env_id)
    namespace = name.partition("/")[0] if "/" in name else ""
    if namespace in _NAMESPACE_SUITES:
        return SUITES[_NAMESPACE_SUITES[namespace]]
    for prefix, suite in _PREFIX_SUITES:
        if name.startswith(prefix):
            return SUITES[suite]
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
    ``ALE/...`` and the ALE's older ids (importing ``ale_py`` registers them), ``MinAtar/...``
    (``minatar.gym.register_envs()``, which nothing calls on import) and ``MiniGrid-...``/``BabyAI-...``
    (importing ``minigrid`` registers them)."""
    import gymnasium as gym

    _, name = split_env_id(env_id)
    if name in gym.registry:
        return
    if name.startswith(tuple(prefix for prefix, _ in _PREFIX_SUITES)) and importlib.util.find_spec("minigrid") is not None:
        import minigrid  # noqa: F401 - its import registers the MiniGrid and BabyAI ids

        return
    if name.startswith("dm_control/") and suite_available(SUITES["dm_control"]):
        register_dm_control()
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


def register_dm_control() -> None:
    """Shimmy's ``dm_control/DOMAIN-TASK-v0`` ids, registered once. dm_control picks an OpenGL backend on import and,
    with no display, GLFW warns about it (a warning per process, about rendering that training never does)."""
    import warnings

    import gymnasium as gym

    if "dm_control" in _REGISTERED:
        return
    _REGISTERED.add("dm_control")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import shimmy

        gym.register_envs(shimmy)


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


def _warn_from_mujoco(message: str | bytes) -> None:
    import sys
    import warnings

    if isinstance(message, bytes):  # MuJoCo 4.0.1's callback hands over the C string as bytes
        message = message.decode("utf-8", errors="replace")

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
