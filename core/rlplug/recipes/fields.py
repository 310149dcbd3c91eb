"""A recipe's fields: their types, defaults, docs and domains, and the resolved ``Recipe``.

The checks a recipe table meets before anything is resolved live here too.

A recipe file is TOML with one table per recipe under ``[recipes]``; the key is the name, optionally
``name@version``. Fields are listed in ``FIELDS``; a table named after a backend (``[recipes.X.skrl]``)
holds raw settings for that backend. Nothing in a recipe is evaluated or imported.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import RecipeError
from ..schema import Param
from ..util.suggest import did_you_mean

TARGET_METRICS = ("return", "normalised_score")
TIERS = ("quick", "full")
REFERENCE_KEYS = {"value": (int, float), "std": (int, float), "steps": (int,), "seeds": (int,), "source": (str,),
                  "url": (str,), "note": (str,)}  # fmt: skip
"""A recipe's ``reference``: a published result (``value`` ± ``std`` at ``steps`` over ``seeds``, in the unit of
the recipe's target metric) and where it is published (``source``, required; ``url``, ``note``)."""
MAX_STEPS = 10**12
"""The largest step budget a recipe may ask for: about a year of the fastest cell on one machine
(~30k steps/s); a larger budget is a run that never ends."""


def _non_empty(value: str) -> str | None:
    return None if value.strip() else "must not be empty"


def _encoder_name(value: str) -> str | None:
    return None if not value or value.isidentifier() else "must be a registered encoder's name (an identifier) or empty"


def _string_keys(value: dict[str, Any]) -> str | None:
    bad = [k for k in value if not isinstance(k, str) or not k.isidentifier()]
    return f"has key {bad[0]!r}, which is not a keyword-argument name" if bad else None


def _module_name(value: str) -> str | None:
    if value == "" or all(part.isidentifier() for part in value.split(".")):
        return None
    return "is not a module name (dotted Python identifiers, e.g. 'my_envs')"


def _wrapper_entries(value: list[Any]) -> str | None:
    if not value:  # the default: listing commands never import the env layer
        return None
    from ..envs.user_wrappers import check_entries  # torch-free: nothing is imported until the env is resolved

    return check_entries(value)


def _distinct(value: list[int]) -> str | None:
    repeated = sorted({i for i in value if value.count(i) > 1})
    return f"lists index {repeated[0]} twice" if repeated else None


def _reference_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return None if value.strip() else "must name a source"
    unknown = [k for k in value if k not in REFERENCE_KEYS]
    if unknown:
        return f"has key {unknown[0]!r}" + did_you_mean(str(unknown[0]), REFERENCE_KEYS) + f" (keys: {', '.join(REFERENCE_KEYS)})"
    for key, item in value.items():
        types = REFERENCE_KEYS[key]
        if isinstance(item, bool) or not isinstance(item, types):
            return f"has {key} = {item!r}, which is not {'a string' if types == (str,) else 'a number' if float in types else 'a whole number'}"
        if float in types and not math.isfinite(item):
            return f"has {key} = {item!r}, which is not finite"
        if key in ("steps", "seeds") and item < 1 or key == "std" and item < 0:
            return f"has {key} = {item!r}, which is {'negative' if key == 'std' else 'below 1'}"
    if not str(value.get("source", "")).strip():
        return "needs a 'source' (where the result is published)"
    return None


class _HooksParam(Param):  # no @dataclass: it adds no field, and the decorator cost ~10 ms of every command's start
    """``hooks``: training hooks to register on the trainer (``rlplug.hooks.recipe``: the entries' schema),
    each checked here: a known hook, a known destination, arguments its constructor takes."""

    def validate(self, value: Any, where: str) -> Any:
        value = super().validate(value, where)
        if not value:  # no hooks: nothing to look up (and the hook registry is not imported for the default)
            return value
        from ..hooks.recipe import check_hooks

        return check_hooks(value, where)


class _ReferenceParam(Param):  # no @dataclass: it adds no field
    """``reference``: a table (``REFERENCE_KEYS``) or a string, the source alone; stored as a table."""

    @property
    def value_type(self) -> type:
        return dict

    def coerce(self, value: Any, where: str) -> Any:
        if isinstance(value, str):
            return value
        return super().coerce(value, where)

    def validate(self, value: Any, where: str) -> Any:
        value = super().validate(value, where)
        return {"source": value.strip()} if isinstance(value, str) else dict(value)


# A recipe's fields and their domains; ``None`` default means required. Hyperparameters are checked
# against the algorithm's own ``Param``s when the recipe is resolved (``rlplug.pipeline.session``).
FIELD_PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("version", 1, "recipe version; `name` means the newest, `name@N` a given one", bounds="[1, 2**31 - 1]"),
    Param("description", "", "one line shown by `rlplug recipes`"),
    Param("extends", "", "recipe this one starts from (`name` or `name@N`)"),
    Param("algorithm", None, "algorithm name, as `rlplug list` shows it", type=str, check=_non_empty),
    Param("env", None, "Gymnasium environment id (offline recipes: the environment evaluated on)", type=str,
          check=_non_empty),
    Param("dataset", "", "offline recipes: the dataset trained from (a name under the data directory or a path)"),
    Param("env_kwargs", {}, "keyword arguments for the environment constructor", check=_string_keys,
          domain="keyword-argument names"),
    Param("env_module", "", "a module imported before the environment is made (its gymnasium.register calls add "
          "ids); recorded in the run directory, imported again by eval and resume", check=_module_name,
          domain="a dotted module name, or empty"),
    Param("wrappers", [], "Gymnasium wrappers around the environment, innermost first, in training and evaluation: "
          "tables {wrapper = \"module:Name\", kwargs = {...}} (e.g. MiniGrid's minigrid.wrappers:FlatObsWrapper); "
          "imported and checked before anything is built, recorded in the run directory for eval and resume",
          check=_wrapper_entries, domain="tables {wrapper = \"module:Name\", kwargs}"),
    Param("hide_observation", [], "indices of a flat Box observation removed before the agent sees it, in training "
          "and evaluation (gymnasium TransformObservation): a partially observable task, e.g. [1, 3] hides "
          "CartPole's velocities", item_type=int, item_bounds="[0, 2**31 - 1]", length="[0, 2**16]", check=_distinct,
          domain="distinct indices"),
    Param("frame_stack", 0, "stack the last N observations on a new leading axis (gymnasium "
          "FrameStackObservation); 0 or 1: off", bounds="[0, 1024]"),
    Param("atari", False, "ALE preprocessing (gymnasium AtariPreprocessing): no-op resets, frame skip 4, 84x84 "
          "grey; rewards clipped to [-1, 1] in training, never in evaluation"),
    Param("terminal_on_life_loss", False, "with atari: a lost life ends a training episode (evaluation plays whole games)"),
    Param("normalize_reward", False, "scale training rewards by a running estimate of the discounted return's "
          "std (gymnasium NormalizeReward; training and evaluation returns are reported raw)"),
    Param("clip_actions", True, "clip Box actions to the action space's bounds before they reach the environment"),
    Param("time_limit", 0, "episode length cap in agent steps (gymnasium TimeLimit); 0: the environment's "
          "registered limit", bounds="[0, 2**31 - 1]"),
    Param("action_mask", "auto", "where the environment's mask of valid Discrete actions is: 'auto' (its Dict "
          "observation key 'action_mask', when it has one), 'info' (info['action_mask'] of each reset and step) or "
          "'ignore' (train without it); masked actions are never taken (the documentation site's \"Action masks\" page)",
          choices=("auto", "info", "ignore")),
    Param("vector_mode", "sync", "how the num_envs training copies are stepped: 'sync' (one after another in this "
          "process), 'async' (gymnasium AsyncVectorEnv, one worker process each; for envs slower than IPC: "
          "MuJoCo, Atari) or 'envpool' (EnvPool's C++ thread pool, its own copy of the task, no wrapper fields; "
          "rlplug[envpool]). A resume of an async or envpool run starts new episodes (the env state is out of reach)",
          choices=("sync", "async", "envpool")),
    Param("backend", None, "default backend", type=str, check=_non_empty),
    Param("steps", None, "environment-step budget (transitions, summed over environments); offline: gradient updates",
          type=int, bounds=f"[1, {MAX_STEPS}]"),
    Param("seed", 0, "random seed", bounds="[0, 2**32 - 1]"),
    Param("num_envs", 1, "vectorised environments", bounds="[1, 65536]"),
    Param("loss", "", "registered loss name; empty means the algorithm's default"),
    Param("encoder", "", "registered observation encoder (`mlp`, `nature_cnn`, `minatar_cnn`, `multi_input`, a "
          "plugin's); empty means the first one that accepts the observation space", check=_encoder_name,
          domain="an encoder name"),
    Param("encoder_kwargs", {}, "options of the encoder (nature_cnn: channels, kernels, strides, features, "
          "channels_last; multi_input: by_key and its keys' encoders' options)", check=_string_keys,
          domain="option names"),
    Param("hyperparameters", {}, "backend-neutral hyperparameters"),
    Param("target", None, "what `rlplug bench` requires of the evaluation (see target_metric); a recipe or --set "
          "that changes the task (TASK_FIELDS: env, env_kwargs, hide_observation, time_limit, dataset, target_metric) without a target "
          "of its own has none", type=float),
    Param("target_metric", "return", "what `target` is compared with: 'return' (mean evaluation return) or "
          "'normalised_score' (offline: 100 x (R - R_random) / (R_expert - R_random) of the dataset)",
          choices=TARGET_METRICS),
    Param("beat_dataset", False, "offline: also require an evaluation return above the dataset's mean return"),
    Param("eval_episodes", 10, "deterministic evaluation episodes", bounds="[1, 10**6]"),
    Param("baseline_of", "", "the recipe this one is the baseline of (a recipe built to miss its target, as a feed-forward "
          "policy on a task that needs memory): `rlplug bench` and the seeded table show its result beside that recipe's, "
          "not as a failure, and count only real recipes as passing"),
    Param("tier", "full", "what `rlplug bench --tier` runs: 'quick' (one seed trains in about 10 minutes on a 2-core "
          "CPU) or 'full' (longer: a bigger machine or a GPU; recipes that do not say)", choices=TIERS),
    _ReferenceParam("reference", {}, "the published result the target is set from: a table {value, std, steps, "
                    "seeds, source, url, note} in the target metric's unit, or a string naming the source",
                    check=lambda v: None if v == {} else _reference_problem(v),
                    domain="{value, std, steps, seeds, source, url, note} or a string"),
    Param("search", {}, "`rlplug tune`: per hyperparameter a range {low, high, log}, a list of choices, or a fixed "
          "value, narrowing, widening or fixing the algorithm's declared search (`rlplug show NAME --space`)"),
    _HooksParam("hooks", [], "training hooks registered on the trainer, in order: tables {hook = NAME, dest, name, "
                "arguments...}, NAME one of rlplug's (early_stopping, reward_scaling, log_scalar) or "
                "torchrl.trainers.<Hook> (the guide's \"Hook points\")",
                domain="tables {hook, dest, name, arguments...}"),
)}
FIELDS: dict[str, tuple[type, Any, str]] = {name: (p.value_type, p.default, p.doc) for name, p in FIELD_PARAMS.items()}
"""name -> (type, default, one-line doc); ``None`` default means required."""
RECIPE_NAME = re.compile(r"[^\W_][\w.+-]*")
"""A recipe name: a letter or digit, then letters, digits, ``_ . + -`` (no spaces, no ``/``, no ``@``)."""
ZOO_PREFIX = "zoo:"
"""``zoo:ALGO/ENV`` names RL Baselines3 Zoo's tuned entry, translated by ``rlplug.interop.zoo`` when it is used."""
BACKEND_TABLES = ("skrl", "torchrl")
"""Known backend names; a table with one of these names holds raw backend settings."""
TASK_FIELDS = ("env", "env_kwargs", "hide_observation", "time_limit", "dataset", "target_metric")
"""The fields a target is set on: the environment, its options, what of its observation is hidden and its episode
length, the offline dataset and what the number measures. A target holds for the task of the recipe that sets it; a recipe that ``extends`` it, or a
``--set``, that changes one of these fields without giving a ``target`` of its own has no target (``None``):
the number was set on another task."""


@dataclass
class Recipe:
    """A fully resolved recipe (``extends`` applied, overrides applied, types checked)."""

    name: str
    version: int
    algorithm: str
    env: str
    backend: str
    steps: int
    target: float | None  # None: the task was changed without a target for it (``TASK_FIELDS``)
    dataset: str = ""
    seed: int = 0
    num_envs: int = 1
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    env_module: str = ""
    wrappers: list[dict[str, Any]] = field(default_factory=list)
    hide_observation: list[int] = field(default_factory=list)
    frame_stack: int = 0
    atari: bool = False
    terminal_on_life_loss: bool = False
    normalize_reward: bool = False
    clip_actions: bool = True
    time_limit: int = 0
    vector_mode: str = "sync"
    action_mask: str = "auto"
    loss: str = ""
    encoder: str = ""
    encoder_kwargs: dict[str, Any] = field(default_factory=dict)
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    backend_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    eval_episodes: int = 10
    target_metric: str = "return"
    beat_dataset: bool = False
    description: str = ""
    search: dict[str, Any] = field(default_factory=dict)
    tier: str = "full"
    baseline_of: str = ""
    reference: dict[str, Any] = field(default_factory=dict)
    hooks: list[dict[str, Any]] = field(default_factory=list)
    source: str = ""

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    def to_table(self) -> dict[str, Any]:
        """The recipe as a plain table (what ``rlplug show`` prints and run directories store)."""
        table = {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "algorithm": self.algorithm,
            "env": self.env,
            "dataset": self.dataset,
            "env_kwargs": dict(self.env_kwargs),
            "env_module": self.env_module,
            "hide_observation": list(self.hide_observation),
            "frame_stack": self.frame_stack,
            "atari": self.atari,
            "terminal_on_life_loss": self.terminal_on_life_loss,
            "normalize_reward": self.normalize_reward,
            "clip_actions": self.clip_actions,
            "time_limit": self.time_limit,
            "vector_mode": self.vector_mode,
            "backend": self.backend,
            "steps": self.steps,
            "seed": self.seed,
            "num_envs": self.num_envs,
            "loss": self.loss,
            "target": self.target,
            "target_metric": self.target_metric,
            "beat_dataset": self.beat_dataset,
            "eval_episodes": self.eval_episodes,
            "tier": self.tier,
            "hyperparameters": copy.deepcopy(self.hyperparameters),
        }
        if not self.hide_observation:  # only recipes of a partially observable task print it
            del table["hide_observation"]
        if self.baseline_of:  # only a baseline says whose
            table["baseline_of"] = self.baseline_of
        if self.reference:  # only recipes that cite a published result carry one
            table["reference"] = copy.deepcopy(self.reference)
        if self.action_mask != "auto":  # likewise: only recipes that say where the mask is (or to ignore it)
            table["action_mask"] = self.action_mask
        if self.encoder or self.encoder_kwargs:  # likewise: recipes that name no encoder print as before
            table["encoder"] = self.encoder
            table["encoder_kwargs"] = copy.deepcopy(self.encoder_kwargs)
        if self.search:  # only recipes with a search table carry one; others print as they always did
            table["search"] = copy.deepcopy(self.search)
        if self.hooks:  # likewise: only recipes that name training hooks
            table["hooks"] = copy.deepcopy(self.hooks)
        if self.wrappers:  # likewise: only recipes that wrap their env
            table["wrappers"] = copy.deepcopy(self.wrappers)
        for backend, settings in self.backend_settings.items():
            table[backend] = copy.deepcopy(settings)
        return table

    @classmethod
    def from_table(cls, table: Mapping[str, Any], source: str = "") -> Recipe:
        table = dict(table)
        settings = {b: dict(table.pop(b)) for b in list(table) if b in BACKEND_TABLES}
        table.pop("extends", None)
        return cls(**table, backend_settings=settings, source=source)


def is_zoo_name(name: str) -> bool:
    return name.startswith(ZOO_PREFIX)


def file_stem(name: str) -> str:
    """A recipe name as part of a file or directory name (``zoo:ppo/ALE/Pong-v5`` -> ``zoo-ppo-ALE-Pong-v5``)."""
    return name.replace(":", "-").replace("/", "-") if is_zoo_name(name) else name


def check_recipe_name(name: str, source: str) -> None:
    if not RECIPE_NAME.fullmatch(name):
        raise RecipeError(
            f"{source}: recipe name {name!r} is not a name: it needs a letter or digit first, then letters, digits "
            "or _ . + - (no spaces, no '/')"
        )


def check_table_fields(table: Mapping[str, Any], where: str) -> None:
    """Reject unknown keys and wrong types; hyperparameter names are checked against the algorithm later."""
    for key, value in table.items():
        if key in BACKEND_TABLES:
            if not isinstance(value, dict):
                raise RecipeError(f"{where}: '{key}' must be a table of {key} settings")
            continue
        if key not in FIELDS:
            raise RecipeError(f"{where}: unknown field '{key}'" + did_you_mean(key, [*FIELDS, *BACKEND_TABLES]))
        if dropped_target(key, value):
            continue
        try:
            FIELD_PARAMS[key].coerce(value, f"'{key}'")
        except TypeError as err:
            raise RecipeError(f"{where}: {err}") from None


def check_fields(recipe: Recipe) -> None:
    """A ``Recipe`` made elsewhere (a run directory's ``recipe.json``, a user's) meets the same field domains
    as one resolved from a file; values are converted in place (a whole-number float becomes an int)."""
    where = f"recipe '{recipe.name}'"
    if not is_zoo_name(str(recipe.name)):
        check_recipe_name(str(recipe.name), where)
    for key, param in FIELD_PARAMS.items():
        if hasattr(recipe, key) and not dropped_target(key, getattr(recipe, key)):
            try:
                setattr(recipe, key, param.validate(getattr(recipe, key), f"'{key}'"))
            except (TypeError, ValueError) as err:
                raise RecipeError(f"{where}: {err}") from None


def task_of(table: Mapping[str, Any]) -> list[Any]:
    """A recipe table's ``TASK_FIELDS``, defaults filled in (an explicit default is no change of task)."""
    return [table.get(key, FIELDS[key][1]) for key in TASK_FIELDS]


def dropped_target(key: str, value: Any) -> bool:
    """The one value outside a field's domain a resolved recipe may hold: a target dropped with its task."""
    return key == "target" and value is None


def task_label(recipe: str, env: str, backend: str) -> str:
    """How a run is named in every line about it: the recipe, the environment it ran on, the backend
    (``ppo-cartpole@1 (Acrobot-v1) on skrl``), so a run on another env never reads as the recipe's own task."""
    return f"{recipe} ({env}) on {backend}"


def field_domains() -> dict[str, str]:
    """Each recipe field's domain in a few characters (``steps``: ``[1, 10**12]``), for ``rlplug show``."""
    return {name: p.domain_text for name, p in FIELD_PARAMS.items() if p.domain_text}
