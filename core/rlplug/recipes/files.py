"""Reading recipe files: a TOML file's recipes and dataset declarations, within the input limits.

``first_party_registry`` says where the registry shipped with rlplug is.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RecipeError
from ..util.suggest import did_you_mean
from .fields import check_recipe_name, check_table_fields
from .limits import MAX_NESTING, MAX_RECIPE_FILE_BYTES, nesting_depth


@dataclass
class Entry:
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


def parse_recipe_file(path: Path | str) -> list[Entry]:
    return read_recipe_file(path)[0]


def read_recipe_file(path: Path | str) -> tuple[list[Entry], dict[str, DatasetTable]]:
    """The recipes of a TOML file and its dataset declarations."""
    path = Path(path)
    text = _read_bounded(path)
    from ..util import tomlcache  # tomllib itself is imported only for a text not parsed before

    try:
        data = tomlcache.loads(text)
    except ValueError as err:  # tomllib.TOMLDecodeError, without importing tomllib to name it
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
    entries = [entry_from_table(key, table, str(path)) for key, table in recipes.items()]
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


def entry_from_table(key: str, table: Any, source: str) -> Entry:
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
    check_table_fields(table, f"recipe '{name}' in {source}")
    return Entry(name, version, table, source)


def first_party_registry() -> Path | None:
    """``registry.toml`` shipped inside the wheel, or at the source tree's top in a checkout."""
    here = Path(__file__).resolve().parents[1]  # the rlplug package
    for candidate in (here / "registry.toml", here.parent.parent / "registry.toml"):
        if candidate.is_file():
            return candidate
    return None
