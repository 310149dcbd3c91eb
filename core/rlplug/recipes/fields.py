"""Recipes: parse registry files, resolve names (``name`` or ``name@version``), ``extends``, overrides.

A recipe file is TOML with one table per recipe under ``[recipes]``; the key is the name, optionally
``name@version``. Fields are listed in ``FIELDS``; a table named after a backend (``[recipes.X.skrl]``)
holds raw settings for that backend. Nothing in a recipe is evaluated or imported.
"""

from __future__ import annotations

import copy
import math
import re
import stat
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RecipeError, UnknownNameError
from .limits import MAX_EXTENDS_DEPTH, MAX_NESTING, MAX_RECIPE_FILE_BYTES, nesting_depth
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


@dataclass(frozen=True)
class _ReferenceParam(Param):
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
    Param("frame_stack", 0, "stack the last N observations on a new leading axis (gymnasium "
          "FrameStackObservation); 0 or 1: off", bounds="[0, 1024]"),
    Param("atari", False, "ALE preprocessing (gymnasium AtariPreprocessing): no-op resets, frame skip 4, 84x84 "
          "grey; rewards clipped to [-1, 1] in training, never in evaluation"),
    Param("terminal_on_life_loss", False, "with atari: a lost life ends a training episode (evaluation plays whole games)"),
    Param("normalize_reward", False, "scale training rewards by a running estimate of the discounted return's "
          "std (gymnasium NormalizeReward; evaluation returns stay raw)"),
    Param("clip_actions", True, "clip Box actions to the action space's bounds before they reach the environment"),
    Param("time_limit", 0, "episode length cap in agent steps (gymnasium TimeLimit); 0: the environment's "
          "registered limit", bounds="[0, 2**31 - 1]"),
    Param("vector_mode", "sync", "how the num_envs training copies are stepped: 'sync' (one after another in this "
          "process) or 'async' (gymnasium AsyncVectorEnv, one worker process each; for envs slower than IPC: "
          "MuJoCo, Atari). A resume of an async run starts new episodes (the env state lives in the workers)",
          choices=("sync", "async")),
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
          "that changes the task (TASK_FIELDS: env, env_kwargs, time_limit, dataset, target_metric) without a target "
          "of its own has none", type=float),
    Param("target_metric", "return", "what `target` is compared with: 'return' (mean evaluation return) or "
          "'normalised_score' (offline: 100 x (R - R_random) / (R_expert - R_random) of the dataset)",
          choices=TARGET_METRICS),
    Param("beat_dataset", False, "offline: also require an evaluation return above the dataset's mean return"),
    Param("eval_episodes", 10, "deterministic evaluation episodes", bounds="[1, 10**6]"),
    Param("tier", "full", "what `rlplug bench --tier` runs: 'quick' (one seed trains in about 10 minutes on a 2-core "
          "CPU) or 'full' (longer: a bigger machine or a GPU; recipes that do not say)", choices=TIERS),
    _ReferenceParam("reference", {}, "the published result the target is set from: a table {value, std, steps, "
                    "seeds, source, url, note} in the target metric's unit, or a string naming the source",
                    check=lambda v: None if v == {} else _reference_problem(v),
                    domain="{value, std, steps, seeds, source, url, note} or a string"),
    Param("search", {}, "`rlplug tune`: per hyperparameter a range {low, high, log}, a list of choices, or a fixed "
          "value, narrowing, widening or fixing the algorithm's declared search (`rlplug show NAME --space`)"),
)}
FIELDS: dict[str, tuple[type, Any, str]] = {name: (p.value_type, p.default, p.doc) for name, p in FIELD_PARAMS.items()}
"""name -> (type, default, one-line doc); ``None`` default means required."""
# Command-line values that are not recipe fields, with their domains (``check_option``); ``--steps`` and
# ``--seed`` use the recipe fields' own.
OPTION_PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("checkpoint_every", None, "steps between checkpoints", type=int, bounds=f"[1, {MAX_STEPS}]"),
    Param("eval_every", None, "steps between evaluations during training (0: only at the end)", type=int,
          bounds=f"[0, {MAX_STEPS}]"),
    Param("episodes", None, "evaluation episodes", type=int, bounds="[1, 10**6]"),
    Param("noise", 0.0, "behaviour-policy noise: epsilon, or a fraction of the half action range", bounds="[0, 1]"),
    Param("transitions", None, "transitions to collect", type=int, bounds=f"[1, {MAX_STEPS}]"),
)}
RECIPE_NAME = re.compile(r"[^\W_][\w.+-]*")
"""A recipe name: a letter or digit, then letters, digits, ``_ . + -`` (no spaces, no ``/``, no ``@``)."""
ZOO_PREFIX = "zoo:"
"""``zoo:ALGO/ENV`` names RL Baselines3 Zoo's tuned entry, translated by ``rlplug.interop.zoo`` when it is used."""
BACKEND_TABLES = ("skrl", "torchrl")
"""Known backend names; a table with one of these names holds raw backend settings."""
TASK_FIELDS = ("env", "env_kwargs", "time_limit", "dataset", "target_metric")
"""The fields a target is set on: the environment, its options and episode length, the offline dataset and what
the number measures. A target holds for the task of the recipe that sets it; a recipe that ``extends`` it, or a
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
    frame_stack: int = 0
    atari: bool = False
    terminal_on_life_loss: bool = False
    normalize_reward: bool = False
    clip_actions: bool = True
    time_limit: int = 0
    vector_mode: str = "sync"
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
    reference: dict[str, Any] = field(default_factory=dict)
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
        if self.reference:  # only recipes that cite a published result carry one
            table["reference"] = copy.deepcopy(self.reference)
        if self.encoder or self.encoder_kwargs:  # likewise: recipes that name no encoder print as before
            table["encoder"] = self.encoder
            table["encoder_kwargs"] = copy.deepcopy(self.encoder_kwargs)
        if self.search:  # only recipes with a search table carry one; others print as they always did
            table["search"] = copy.deepcopy(self.search)
        for backend, settings in self.backend_settings.items():
            table[backend] = copy.deepcopy(settings)
        return table

    @classmethod
    def from_table(cls, table: Mapping[str, Any], source: str = "") -> Recipe:
        table = dict(table)
        settings = {b: dict(table.pop(b)) for b in list(table) if b in BACKEND_TABLES}
        table.pop("extends", None)
        return cls(**table, backend_settings=settings, source=source)


@dataclass
class _Entry:
    name: str
    version: int
    table: dict[str, Any]
    source: str


def split_ref(ref: str) -> tuple[str, int | None]:
    """``"ppo-cartpole@2"`` -> ``("ppo-cartpole", 2)``; ``"ppo-cartpole"`` -> ``("ppo-cartpole", None)``."""
    name, at, version = ref.partition("@")
    if not at:
        return name, None
    if not version.isdigit():
        raise RecipeError(f"recipe reference '{ref}': the version after '@' must be a whole number")
    return name, int(version)


# Dataset declarations (``[datasets.NAME]``): how `rlplug dataset build` and `rlplug bench` make an
# offline dataset that is missing, deterministically from seeds. Checked by ``rlplug.data.collect``.
DatasetTable = dict[str, Any]


def parse_recipe_file(path: Path | str) -> list[_Entry]:
    return read_recipe_file(path)[0]


def read_recipe_file(path: Path | str) -> tuple[list[_Entry], dict[str, DatasetTable]]:
    """The recipes of a TOML file and its dataset declarations."""
    path = Path(path)
    text = _read_bounded(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise RecipeError(f"{path}: malformed TOML: {err}") from None
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise RecipeError(f"{path}: values nested deeper than {MAX_NESTING} levels, the limit for a recipe") from None
    unknown = set(data) - {"recipes", "datasets"}
    if unknown:
        key = sorted(unknown)[0]
        raise RecipeError(f"{path}: unknown top-level table '{key}'" + did_you_mean(key, ["recipes", "datasets"]))
    recipes = data.get("recipes", {})
    datasets = data.get("datasets", {})
    for label, value in (("recipes", recipes), ("datasets", datasets)):
        if not isinstance(value, dict) or not all(isinstance(t, dict) for t in value.values()):
            raise RecipeError(f"{path}: '{label}' must be a table of tables")
    for name, table in datasets.items():
        check_nesting(table, f"dataset '{name}' in {path}")
    entries = [_entry_from_table(key, table, str(path)) for key, table in recipes.items()]
    return entries, {name: {**table, "source": str(path)} for name, table in datasets.items()}


def _read_bounded(path: Path) -> str:
    """A recipe file's text, refused in one line if it is not a regular file or is over the size limit
    (a FIFO would block the open, ``/dev/zero`` never ends)."""
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            raise RecipeError(f"recipe file {path} is a directory; --recipes takes a TOML file")
        if not stat.S_ISREG(mode):
            raise RecipeError(f"recipe file {path} is {_file_kind(mode)}, not a regular file; --recipes takes a TOML file")
        with path.open("rb") as handle:
            data = handle.read(MAX_RECIPE_FILE_BYTES + 1)  # the size stat gave may be stale or 0 (/proc)
    except FileNotFoundError:
        raise RecipeError(f"recipe file {path} does not exist") from None
    except OSError as err:
        raise RecipeError(f"recipe file {path} cannot be read: {err.strerror or type(err).__name__}") from None
    if len(data) > MAX_RECIPE_FILE_BYTES:
        raise RecipeError(f"recipe file {path} is over {MAX_RECIPE_FILE_BYTES // 2**20} MiB, the limit for a recipe file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RecipeError(f"recipe file {path} is not UTF-8 text (byte {err.start}: {err.reason}); a recipe file is TOML") from None


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))  # fmt: skip
    return next((text for test, text in kinds if test(mode)), "not a file")


def check_nesting(table: Any, where: str) -> None:
    """Refuse a recipe (or dataset) table that nests deeper than ``MAX_NESTING``, before anything recurses into it."""
    depth, key = nesting_depth(table)
    if depth > MAX_NESTING:
        under = f" (under '{key}')" if key else ""
        raise RecipeError(f"{where} nests tables and arrays {depth} levels deep{under}; the limit is {MAX_NESTING}")


def _entry_from_table(key: str, table: Any, source: str) -> _Entry:
    if not isinstance(table, dict):
        raise RecipeError(f"{source}: recipe '{key}' must be a table")
    check_nesting(table, f"recipe '{key}' in {source}")
    name, version = split_ref(key)
    check_recipe_name(name, source)
    table = dict(table)
    table.pop("name", None)
    if version is not None:
        if "version" in table and table["version"] != version:
            raise RecipeError(f"{source}: recipe '{key}' says version = {table['version']!r}, its name says {version}")
        table["version"] = version
    version = table.get("version", 1)
    _check_fields(table, f"recipe '{name}' in {source}")
    return _Entry(name, version, table, source)


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


def _check_fields(table: Mapping[str, Any], where: str) -> None:
    """Reject unknown keys and wrong types; hyperparameter names are checked against the algorithm later."""
    for key, value in table.items():
        if key in BACKEND_TABLES:
            if not isinstance(value, dict):
                raise RecipeError(f"{where}: '{key}' must be a table of {key} settings")
            continue
        if key not in FIELDS:
            raise RecipeError(f"{where}: unknown field '{key}'" + did_you_mean(key, [*FIELDS, *BACKEND_TABLES]))
        if _no_target(key, value):
            continue
        try:
            FIELD_PARAMS[key].coerce(value, f"'{key}'")
        except TypeError as err:
            raise RecipeError(f"{where}: {err}") from None


def _deep_merge(base: dict[str, Any], top: Mapping[str, Any], atomic: bool = False) -> dict[str, Any]:
    """``top`` over ``base``, table by table; ``env_kwargs``, ``encoder_kwargs`` and ``reference`` are replaced whole, and so is each entry of a
    ``search`` table (a child's range replaces its parent's, ``log`` included)."""
    merged = copy.deepcopy(base)
    for key, value in top.items():
        if not atomic and isinstance(value, dict) and isinstance(merged.get(key), dict) and key not in ("env_kwargs", "encoder_kwargs", "reference"):
            merged[key] = _deep_merge(merged[key], value, atomic=key == "search")
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def parse_value(text: str) -> Any:
    """``--set`` values are TOML values (``3e-4``, ``true``, ``[64, 64]``, ``"x"``); anything else is a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise RecipeError(f"the value nests arrays or tables deeper than {MAX_NESTING} levels, the limit for a recipe") from None


class RecipeBook:
    """All known recipes: first-party ``registry.toml``, plugin contributions, then user files."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[int, _Entry]] = {}
        self.conflicts: dict[str, list[str]] = {}
        self.datasets: dict[str, DatasetTable] = {}
        """Declared datasets by name (``[datasets.NAME]`` tables); a later file's declaration wins."""
        self._zoo: dict[str, _Entry] = {}
        """``zoo:`` recipes translated so far; the Zoo is read only when one is asked for."""

    def add(self, entry: _Entry) -> None:
        """Add a recipe; the same name and version from two sources is an error when that recipe is used."""
        versions = self._entries.setdefault(entry.name, {})
        other = versions.get(entry.version)
        if other is not None and other.source != entry.source:
            self.conflicts.setdefault(f"{entry.name}@{entry.version}", [other.source]).append(entry.source)
            return
        versions[entry.version] = entry

    def add_file(self, path: Path | str) -> None:
        entries, datasets = read_recipe_file(path)
        for entry in entries:
            self.add(entry)
        self.datasets.update(datasets)

    def add_tables(self, tables: Iterable[Mapping[str, Any]], source: str) -> None:
        for table in tables:
            table = dict(table)
            if "name" not in table:
                raise RecipeError(f"a recipe contributed by {source} has no 'name'")
            self.add(_entry_from_table(str(table.pop("name")), table, source))

    def names(self) -> list[str]:
        return sorted(self._entries)

    def refs(self) -> list[tuple[str, int]]:
        return [(n, v) for n in self.names() for v in sorted(self._entries[n])]

    def _entry(self, ref: str) -> _Entry:
        name, version = split_ref(ref)
        if is_zoo_name(name):
            return self._zoo_entry(name, version)
        versions = self._entries.get(name)
        if not versions:
            raise UnknownNameError(f"unknown recipe '{name}'" + did_you_mean(name, self._entries))
        if version is None:
            version = max(versions)
        if version not in versions:
            raise UnknownNameError(
                f"recipe '{name}' has no version {version} (versions: {', '.join(map(str, sorted(versions)))})"
            )
        sources = self.conflicts.get(f"{name}@{version}")
        if sources:
            raise RecipeError(f"recipe '{name}@{version}' is defined twice: in {' and in '.join(sources)}")
        return versions[version]

    def _zoo_entry(self, name: str, version: int | None) -> _Entry:
        """A ``zoo:ALGO/ENV`` recipe (version 1: the installed Zoo's entry), translated on first use."""
        if version not in (None, 1):
            raise UnknownNameError(f"recipe '{name}' has no version {version} (Zoo recipes have one: 1)")
        entry = self._zoo.get(name)
        if entry is None:
            from ..interop.zoo import recipe_table

            table, source = recipe_table(name)
            _check_fields(table, f"recipe '{name}' ({source})")
            entry = self._zoo[name] = _Entry(name, 1, table, source)
        return entry

    def raw(self, ref: str, _seen: tuple[str, ...] = ()) -> tuple[dict[str, Any], _Entry]:
        """The recipe's table with its ``extends`` chain merged in (parents first)."""
        entry = self._entry(ref)
        key = f"{entry.name}@{entry.version}"
        if key in _seen:
            raise RecipeError(f"recipe '{entry.name}' extends itself: {' -> '.join((*_seen, key))}")
        table = entry.table
        parent_ref = table.get("extends")
        if parent_ref and len(_seen) >= MAX_EXTENDS_DEPTH:
            chain = [*_seen[:3], "...", key]
            raise RecipeError(
                f"recipe '{_seen[0].partition('@')[0]}' extends a chain of more than {MAX_EXTENDS_DEPTH} recipes "
                f"({' -> '.join(chain)} -> {parent_ref}); the limit is {MAX_EXTENDS_DEPTH}"
            )
        if parent_ref:
            parent, _ = self.raw(parent_ref, (*_seen, key))
            parent.pop("version", None)
            parent.pop("description", None)
            merged = _deep_merge(parent, table)
            if "target" not in table and task_of(merged) != task_of(parent):
                merged["target"] = None
            table = merged
        return copy.deepcopy(table), entry

    def resolve(self, ref: str, overrides: Iterable[str] = (), hyperparameter_names: Iterable[str] = ()) -> Recipe:
        """Resolve ``ref`` and apply ``--set key=value`` overrides.

        ``hyperparameter_names`` lets a bare hyperparameter name (``--set lr=1e-3``) address
        ``hyperparameters.lr``. Unknown hyperparameter names are caught by validation against the algorithm.
        """
        table, entry = self.raw(ref)
        hp_names = set(hyperparameter_names)
        task, given = task_of(table), set()
        for item in overrides:
            given.add(apply_override(table, item, hp_names))
        if "target" not in given and task_of(table) != task:
            table["target"] = None
        where = f"recipe '{entry.name}'"
        check_nesting(table, f"{where} with its --set values")
        _check_fields(table, where)
        missing = [k for k, (_, default, _) in FIELDS.items() if default is None and k not in table]
        if missing:
            raise RecipeError(f"{where} ({entry.source}) is missing required field '{missing[0]}'")
        for key, (_, default, _) in FIELDS.items():
            if key not in table and key != "extends":
                table[key] = copy.deepcopy(default)
        for key, param in FIELD_PARAMS.items():
            if key in table and not _no_target(key, table[key]):
                try:
                    table[key] = param.validate(table[key], f"'{key}'")
                except (TypeError, ValueError) as err:
                    raise RecipeError(f"{where}: {err}") from None
        if (table["target_metric"] == "normalised_score" or table["beat_dataset"]) and not table["dataset"]:
            raise RecipeError(f"{where}: target_metric 'normalised_score' and beat_dataset need a 'dataset'")
        if table["terminal_on_life_loss"] and not table["atari"]:
            raise RecipeError(f"{where}: terminal_on_life_loss is an option of atari preprocessing; set atari = true too")
        return Recipe.from_table({"name": entry.name, **table}, source=entry.source)


def check_fields(recipe: Recipe) -> None:
    """A ``Recipe`` made elsewhere (a run directory's ``recipe.json``, a user's) meets the same field domains
    as one resolved from a file; values are converted in place (a whole-number float becomes an int)."""
    where = f"recipe '{recipe.name}'"
    if not is_zoo_name(str(recipe.name)):
        check_recipe_name(str(recipe.name), where)
    for key, param in FIELD_PARAMS.items():
        if hasattr(recipe, key) and not _no_target(key, getattr(recipe, key)):
            try:
                setattr(recipe, key, param.validate(getattr(recipe, key), f"'{key}'"))
            except (TypeError, ValueError) as err:
                raise RecipeError(f"{where}: {err}") from None


def task_of(table: Mapping[str, Any]) -> list[Any]:
    """A recipe table's ``TASK_FIELDS``, defaults filled in (an explicit default is no change of task)."""
    return [table.get(key, FIELDS[key][1]) for key in TASK_FIELDS]


def _no_target(key: str, value: Any) -> bool:
    """The one value outside a field's domain a resolved recipe may hold: a target dropped with its task."""
    return key == "target" and value is None


def task_label(recipe: str, env: str, backend: str) -> str:
    """How a run is named in every line about it: the recipe, the environment it ran on, the backend
    (``ppo-cartpole@1 (Acrobot-v1) on skrl``), so a run on another env never reads as the recipe's own task."""
    return f"{recipe} ({env}) on {backend}"


def field_domains() -> dict[str, str]:
    """Each recipe field's domain in a few characters (``steps``: ``[1, 10**12]``), for ``rlplug show``."""
    return {name: p.domain_text for name, p in FIELD_PARAMS.items() if p.domain_text}


def check_option(name: str, value: Any, flag: str) -> Any:
    """A command-line value in its domain (``check_option("steps", args.steps, "--steps")``), converted; else a
    one-line ``RecipeError`` naming the flag. ``name`` is a recipe field (``steps``, ``seed``, ``num_envs``,
    ``eval_episodes``) or one of ``OPTION_PARAMS`` (``checkpoint_every``, ``eval_every``, ``episodes``, ``noise``,
    ``transitions``).
    A value still in text (``--steps 1e6`` parsed with ``type=parse_value``) is read as ``--set`` reads it."""
    param = OPTION_PARAMS.get(name) or FIELD_PARAMS[name]
    try:
        return param.validate(value, flag)
    except (TypeError, ValueError) as err:
        raise RecipeError(str(err)) from None


def apply_override(table: dict[str, Any], item: str, hp_names: set[str]) -> str:
    """Apply one ``key=value``: a recipe field, a dotted path, or a bare hyperparameter name; returns the key."""
    key, eq, text = item.partition("=")
    key = key.strip()
    if not eq or not key:
        raise RecipeError(f"--set expects key=value, got '{item}'")
    try:
        value = parse_value(text.strip())
    except RecipeError as err:
        raise RecipeError(f"--set {key}: {err}") from None
    path = key.split(".")
    if len(path) == 1:
        if key in FIELDS:
            expected = FIELDS[key][0]
            if expected is str and not isinstance(value, str):
                value = text.strip()  # `--set env=1` style values stay strings where a string is expected
            table[key] = value
            return key
        if key in hp_names:
            table.setdefault("hyperparameters", {})[key] = value
            return key
        raise RecipeError(
            f"--set {key}: not a recipe field or a hyperparameter of this algorithm"
            + did_you_mean(key, [*FIELDS, *hp_names])
        )
    head = path[0]
    if head not in ("hyperparameters", "env_kwargs", "encoder_kwargs", "search", *BACKEND_TABLES):
        raise RecipeError(
            f"--set {key}: '{head}' is not a table"
            + did_you_mean(head, ["hyperparameters", "env_kwargs", "encoder_kwargs", "search", *BACKEND_TABLES])
        )
    node = table
    for part in path[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise RecipeError(f"--set {key}: '{part}' is not a table")
    node[path[-1]] = value
    return key


def first_party_registry() -> Path | None:
    """``registry.toml`` shipped inside the wheel, or at the source tree's top in a checkout."""
    here = Path(__file__).resolve().parents[1]  # the rlplug package
    for candidate in (here / "registry.toml", here.parent.parent / "registry.toml"):
        if candidate.is_file():
            return candidate
    return None
