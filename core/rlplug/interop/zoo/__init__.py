"""``zoo:ALGO/ENV`` recipes: RL Baselines3 Zoo's tuned hyperparameters, translated key by key.

``rlplug.recipes.fields`` asks this package for a ``zoo:`` name only when one is used, so listing recipes never reads
the Zoo. The entry for an environment is the Zoo's own (``zoo:ppo/Acrobot-v1``); an ``ALE/...`` game the Zoo
does not list by name gets its ``atari`` defaults (``zoo:ppo/ALE/Pong-v5``). Nothing here imports torch.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import RecipeError, UnknownNameError
from ...util.suggest import did_you_mean
from .files import INSTALL, hyperparams_dir, load, zoo_version
from .translate import Translation, translate

PREFIX = "zoo:"
ZOO_ALGORITHMS = ("ppo", "a2c", "sac", "td3", "dqn", "ddpg", "qrdqn", "tqc", "crossq", "trpo")
"""The Zoo files for rlplug's algorithms, each translated key by key (``TRANSLATORS``)."""
SPECIAL_ENTRIES = ("default", "atari")
DEFAULT_BACKEND = "skrl"
VERIFIED_FILE = Path(__file__).with_name("verified.toml")

__all__ = ["PREFIX", "INSTALL", "Pair", "Translation", "is_zoo_name", "pairs", "recipe_table", "translation", "verified"]


def is_zoo_name(name: str) -> bool:
    return name.startswith(PREFIX)


def is_atari_id(env: str) -> bool:
    """The ids the Zoo's ``atari`` entry covers (it asks whether the entry point is ``AtariEnv``)."""
    return env.startswith("ALE/") or env.endswith("NoFrameskip-v4")


def split_name(name: str) -> tuple[str, str]:
    """``zoo:ppo/Acrobot-v1`` -> ``("ppo", "Acrobot-v1")``; ``zoo:ppo/ALE/Pong-v5`` -> ``("ppo", "ALE/Pong-v5")``."""
    algorithm, slash, env = name[len(PREFIX):].partition("/")
    if not slash or not algorithm or not env:
        raise UnknownNameError(f"recipe '{name}': a Zoo recipe is named zoo:ALGO/ENV (e.g. zoo:ppo/Acrobot-v1)")
    return algorithm, env


def _entry_for(name: str) -> tuple[str, str, str, dict[str, Any]]:
    """``(algorithm, env, entry name, entry)`` for a ``zoo:`` name, or one line saying what is wrong."""
    algorithm, env = split_name(name)
    if algorithm not in ZOO_ALGORITHMS:
        raise UnknownNameError(f"recipe '{name}': rlplug reads the Zoo's {', '.join(ZOO_ALGORITHMS)} files, not "
                               f"'{algorithm}'" + did_you_mean(algorithm, ZOO_ALGORITHMS))  # fmt: skip
    entries = load(algorithm, name)
    if env in entries and env not in SPECIAL_ENTRIES:
        return algorithm, env, env, entries[env]
    if is_atari_id(env) and "atari" in entries:
        return algorithm, env, "atari", entries["atari"]
    known = [e for e in entries if e not in SPECIAL_ENTRIES]
    hint = " (any ALE/... game takes its 'atari' defaults)" if "atari" in entries else ""
    raise UnknownNameError(f"unknown Zoo pair '{name}': the Zoo has no {algorithm} entry for '{env}'"
                           + did_you_mean(env, known) + hint)  # fmt: skip


@functools.cache
def translation(name: str) -> Translation:
    """The translated entry (cached: ``show`` and the recipe book ask for the same one)."""
    algorithm, env, entry_name, entry = _entry_for(name)
    file = f"RL Baselines3 Zoo {zoo_version()} (rl_zoo3/hyperparams/{algorithm}.yml)"
    result = Translation(ref=name, algorithm=algorithm, env=env, entry=entry_name, file=file)
    kwargs = entry.get("env_kwargs") if isinstance(entry.get("env_kwargs"), dict) else {}
    return translate(result, entry, lambda: _action_space(env, kwargs))


def _action_space(env: str, env_kwargs: dict[str, Any]) -> Any:
    from ...envs.factory import probe_spaces

    return probe_spaces(env, env_kwargs)[1]


def recipe_table(name: str) -> tuple[dict[str, Any], str]:
    """The recipe table of a ``zoo:`` name and where it comes from (the book's entry source)."""
    done = translation(name)
    table = dict(done.table)
    table["hyperparameters"] = dict(table["hyperparameters"])
    target, target_note = _target(done.algorithm, done.env)
    dropped = sorted({row.key.partition(" ")[0] for row in done.dropped})
    description = f"RL Baselines3 Zoo {done.algorithm} '{done.entry}' translated key by key (rlplug show {name})"
    if dropped:
        description += f"; dropped: {', '.join(dropped)}"
    table.update(backend=DEFAULT_BACKEND, target=target, description=f"{description}; {target_note}")
    reference = _reference(done.algorithm, done.env)
    if reference:
        table["reference"] = reference
    return table, done.file


def _reference(algorithm: str, env: str) -> dict[str, Any]:
    """The Zoo's own result for the pair (``verified.toml``), as a recipe ``reference``; empty if not recorded."""
    pair = verified().get(f"{algorithm}/{env}", {})
    if not isinstance(pair.get("zoo_score"), (int, float)):
        return {}
    reference: dict[str, Any] = {"value": float(pair["zoo_score"]),
                                 "source": f"RL Baselines3 Zoo benchmark.md, {algorithm} {env}"}
    for key, field in (("zoo_std", "std"), ("zoo_steps", "steps"), ("zoo_note", "note")):
        if key in pair:
            reference[field] = pair[key]
    return reference


PASS_FRACTION = 0.9
"""A verified pair's target: this fraction of the way from a random policy's return to the Zoo's score
(a normalised score of 0.9, with 0 = random measured by rlplug and 1 = the Zoo's one agent)."""


def zoo_target(zoo_score: float, random_return: float) -> float:
    """``random + 0.9 * (zoo - random)``, rounded to one decimal: the pass mark of a verified pair."""
    return round(random_return + PASS_FRACTION * (zoo_score - random_return), 1)


def _target(algorithm: str, env: str) -> tuple[float, str]:
    pair = verified().get(f"{algorithm}/{env}", {})
    if isinstance(pair.get("target"), (int, float)):
        return float(pair["target"]), "target from its verification"
    if isinstance(pair.get("zoo_score"), (int, float)) and isinstance(pair.get("random_return"), (int, float)):
        target = zoo_target(float(pair["zoo_score"]), float(pair["random_return"]))
        return target, f"target: a normalised score of {PASS_FRACTION} between random and the Zoo's score"
    from ...envs.suites import reward_threshold

    threshold = reward_threshold(env)
    if threshold is not None:
        return threshold, "target: Gymnasium's reward_threshold (not verified yet)"
    return 0.0, "no target yet (0.0: not verified, and Gymnasium names no reward_threshold)"


@functools.cache
def verified() -> dict[str, dict[str, Any]]:
    """The verified pairs (``verified.toml``): ``"ppo/Acrobot-v1"`` -> its target, the Zoo's score, the result."""
    try:
        data = tomllib.loads(VERIFIED_FILE.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise RecipeError(f"{VERIFIED_FILE} cannot be read: {err}") from None
    return {str(k): dict(v) for k, v in data.get("pairs", {}).items() if isinstance(v, dict)}


# ---- listing the Zoo's pairs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    name: str
    algorithm: str
    env: str
    env_status: str
    """``installed``, or why it cannot be made here (the extra to install, a package rlplug does not know)."""
    verified: str


def pairs(algorithms: Any = ZOO_ALGORITHMS) -> list[Pair]:
    """Every Zoo entry of ``algorithms`` (the ``atari`` defaults as ``ALE/*``), with whether its environment can
    be made here (a registry lookup: nothing is made) and whether the pair was verified."""
    hyperparams_dir(f"{PREFIX}...")  # the one-line missing-extra error before anything else
    done = verified()
    rows = []
    for algorithm in ZOO_ALGORITHMS:
        if algorithm not in algorithms:
            continue
        for env in load(algorithm):
            if env == "default":
                continue
            shown = "ALE/*" if env == "atari" else env
            result = done.get(f"{algorithm}/{shown}", {}).get("result")
            rows.append(Pair(f"{PREFIX}{algorithm}/{shown}", algorithm, shown, env_status(shown), str(result or "not yet")))
    return rows


ZOO_ENV_PACKAGES = (
    ("Bullet", "pybullet_envs_gymnasium"),
    ("MiniGrid-", "minigrid"),
    ("donkey-", "gym-donkeycar"),
    ("Fetch", "gymnasium-robotics"),
    ("Panda", "panda-gym"),
    ("parking-", "highway-env"),
    ("highway-", "highway-env"),
    ("RocketLander", "rocket-lander-gym"),
)
"""(part of an env id, the PyPI package that registers it): the packages rl_zoo3's ``import_envs.py`` imports to
register the envs its hyperparameter files name (and gymnasium-robotics for the Fetch tasks)."""


def env_package(env: str) -> str | None:
    """The package to install for a Zoo env id that gymnasium does not know here, or ``None`` when none is known."""
    return next((package for part, package in ZOO_ENV_PACKAGES if part in env), None)


def env_status(env: str) -> str:
    """Whether ``env`` can be made here, from gymnasium's registry and the suites' packages (nothing imported
    beyond gymnasium's registry)."""
    import importlib.util

    import gymnasium as gym

    from ...envs.suites import SUITES, suite_available, suite_of

    if env == "ALE/*":
        suite = SUITES["atari"]
        return "installed" if suite_available(suite) else f"needs {suite.label}: pip install 'rlplug[{suite.extra}]'"
    spec = gym.registry.get(env)
    if spec is None:
        package = env_package(env)
        if package is None:
            return "not registered here (no package on PyPI registers it: one of the Zoo authors' own envs)"
        return f"not registered here: pip install {package}"
    point = spec.entry_point
    if callable(point) and getattr(point, "__name__", "").startswith("_raise"):
        return "not makeable with gymnasium 1.x (needs mujoco-py)"
    suite = suite_of(env)
    if suite is not None and not suite_available(suite):
        return f"needs {suite.label}: pip install 'rlplug[{suite.extra}]'"
    module = point.partition(":")[0] if isinstance(point, str) else ""
    if module and importlib.util.find_spec(module.partition(".")[0]) is None:
        return f"not installed (needs the '{module.partition('.')[0]}' package)"
    return "installed"
