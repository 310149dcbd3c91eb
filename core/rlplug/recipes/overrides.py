"""Values from the command line: ``--set key=value`` overrides and option values in their domains."""

from __future__ import annotations

from typing import Any

from ..errors import RecipeError
from ..schema import Param
from ..util.suggest import did_you_mean
from .fields import BACKEND_TABLES, FIELD_PARAMS, FIELDS, MAX_STEPS
from .limits import MAX_NESTING

# Command-line values that are not recipe fields, with their domains (``check_option``); ``--steps`` and
# ``--seed`` use the recipe fields' own.
OPTION_PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("checkpoint_every", None, "steps between checkpoints", type=int, bounds=f"[1, {MAX_STEPS}]"),
    Param("eval_every", None, "steps between evaluations during training (0: only at the end)", type=int,
          bounds=f"[0, {MAX_STEPS}]"),
    Param("episodes", None, "evaluation episodes", type=int, bounds="[1, 10**6]"),
    Param("noise", 0.0, "behaviour-policy noise: epsilon, or a fraction of the half action range", bounds="[0, 1]"),
    Param("transitions", None, "transitions to collect", type=int, bounds=f"[1, {MAX_STEPS}]"),
    Param("collect_envs", 1, "environments stepped together while collecting", type=int, bounds="[1, 1024]"),
)}


def parse_value(text: str) -> Any:
    """``--set`` values are TOML values (``3e-4``, ``true``, ``[64, 64]``, ``"x"``); anything else is a string."""
    import tomllib  # here: only a --set value needs it (it costs the listing commands ~9 ms to import)

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise RecipeError(f"the value nests arrays or tables deeper than {MAX_NESTING} levels, the limit for a recipe") from None


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
