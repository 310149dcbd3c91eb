"""Recipe parsing, versions, extends, overrides and their error lines (no torch needed)."""

from __future__ import annotations

import pytest

from rlplug.errors import RecipeError, UnknownNameError
from rlplug.recipes.book import RecipeBook
from rlplug.recipes.overrides import apply_override, parse_value

BASE = """
[recipes.walk]
algorithm = "ppo"
env = "CartPole-v1"
backend = "skrl"
steps = 1000
target = 100.0
[recipes.walk.hyperparameters]
epochs = 3

[recipes."walk@2"]
extends = "walk@1"
steps = 2000
[recipes."walk@2".hyperparameters]
minibatches = 2
[recipes."walk@2".skrl]
rollouts = 8
"""


@pytest.fixture
def book(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(BASE)
    b = RecipeBook()
    b.add_file(path)
    return b


def test_newest_version_by_default_and_pinned_version(book):
    assert book.resolve("walk").version == 2
    assert book.resolve("walk").steps == 2000
    assert book.resolve("walk@1").steps == 1000


def test_extends_merges_tables(book):
    recipe = book.resolve("walk@2")
    assert recipe.hyperparameters == {"epochs": 3, "minibatches": 2}
    assert recipe.backend_settings == {"skrl": {"rollouts": 8}}
    assert recipe.env == "CartPole-v1"


def test_overrides_field_dotted_and_bare_hyperparameter(book):
    recipe = book.resolve("walk", ["env=Acrobot-v1", "hyperparameters.epochs=7", "gamma=0.9", "skrl.rollouts=4"], ["gamma", "epochs"])
    assert recipe.env == "Acrobot-v1"
    assert recipe.hyperparameters["epochs"] == 7
    assert recipe.hyperparameters["gamma"] == 0.9
    assert recipe.backend_settings["skrl"]["rollouts"] == 4


def test_override_value_types():
    assert parse_value("3e-4") == 3e-4
    assert parse_value("true") is True
    assert parse_value("[64, 64]") == [64, 64]
    assert parse_value("Acrobot-v1") == "Acrobot-v1"


def test_override_wrong_type_is_one_line(book):
    with pytest.raises(RecipeError, match="'steps' must be int, got str 'many'"):
        book.resolve("walk", ["steps=many"])


def test_unknown_override_key_suggests(book):
    with pytest.raises(RecipeError, match=r"--set stesp: .*did you mean 'steps'"):
        book.resolve("walk", ["stesp=5"])


def test_unknown_recipe_suggests(book):
    with pytest.raises(UnknownNameError, match=r"unknown recipe 'wlak' \(did you mean 'walk'\?\)"):
        book.resolve("wlak")


def test_unknown_version(book):
    with pytest.raises(UnknownNameError, match=r"recipe 'walk' has no version 9 \(versions: 1, 2\)"):
        book.resolve("walk@9")


def test_malformed_toml_names_file_and_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[recipes.x]\nalgorithm = "ppo"\nsteps = = 3\n')
    with pytest.raises(RecipeError, match=r"bad.toml: malformed TOML: .*line 3"):
        RecipeBook().add_file(path)


def test_wrong_type_in_file(tmp_path):
    path = tmp_path / "typed.toml"
    path.write_text('[recipes.x]\nalgorithm = "ppo"\nsteps = "100"\n')
    with pytest.raises(RecipeError, match=r"recipe 'x' in .*typed.toml: 'steps' must be int, got str '100'"):
        RecipeBook().add_file(path)


def test_unknown_field_in_file_suggests(tmp_path):
    path = tmp_path / "f.toml"
    path.write_text('[recipes.x]\nalgoritm = "ppo"\n')
    with pytest.raises(RecipeError, match=r"unknown field 'algoritm' \(did you mean 'algorithm'\?\)"):
        RecipeBook().add_file(path)


def test_missing_required_field(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('[recipes.x]\nalgorithm = "ppo"\nenv = "CartPole-v1"\nbackend = "skrl"\nsteps = 5\n')
    book = RecipeBook()
    book.add_file(path)
    with pytest.raises(RecipeError, match="missing required field 'target'"):
        book.resolve("x")


def test_extends_cycle_is_refused(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[recipes.a]\nextends = "b"\n[recipes.b]\nextends = "a"\n')
    book = RecipeBook()
    book.add_file(path)
    with pytest.raises(RecipeError, match="extends itself"):
        book.resolve("a")


def test_same_version_twice_from_two_sources_is_refused(tmp_path, book):
    other = tmp_path / "o.toml"
    other.write_text('[recipes."walk@1"]\nsteps = 3\n')
    book.add_file(other)
    with pytest.raises(RecipeError, match="recipe 'walk@1' is defined twice: in .*r.toml and in .*o.toml"):
        book.resolve("walk@1")


def test_apply_override_requires_key_value():
    with pytest.raises(RecipeError, match="--set expects key=value"):
        apply_override({}, "steps", set())


def test_nothing_is_evaluated(book):
    recipe = book.resolve("walk", ["description=__import__('os').system('false')"])
    assert recipe.description == "__import__('os').system('false')"


# ---- bounded inputs: extends depth, nesting, file size (rlplug.recipes.limits) -----------------------------------


def _chain(links: int) -> str:
    """``r{links}`` extends ``r{links-1}`` ... extends ``r0``: ``links`` extends links."""
    parts = ['[recipes.r0]\nalgorithm = "ppo"\nenv = "CartPole-v1"\nbackend = "skrl"\nsteps = 5\ntarget = 1.0\n']
    parts += [f'[recipes.r{i}]\nextends = "r{i - 1}"\n' for i in range(1, links + 1)]
    return "".join(parts)


def test_an_extends_chain_deeper_than_the_limit_is_refused(tmp_path):
    from rlplug.recipes.limits import MAX_EXTENDS_DEPTH

    path = tmp_path / "chain.toml"
    path.write_text(_chain(2000))  # deep enough to exhaust Python's stack without the limit
    book = RecipeBook()
    book.add_file(path)
    assert book.resolve(f"r{MAX_EXTENDS_DEPTH}").steps == 5
    for deep in (MAX_EXTENDS_DEPTH + 1, 2000):
        with pytest.raises(RecipeError, match=rf"recipe 'r{deep}' extends a chain of more than 32 recipes \(r{deep}@1 -> .*\); the limit is 32"):
            book.resolve(f"r{deep}")


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [40, 3000])  # 3000: deeper than tomllib itself can recurse
def test_a_value_nested_deeper_than_the_limit_is_refused_in_a_file(tmp_path, depth):
    path = tmp_path / "deep.toml"
    path.write_text(f'[recipes.x]\nalgorithm = "ppo"\nenv_kwargs = {{a = {_nested(depth)}}}\n')
    expected = "recipe 'x' in .*deep.toml nests tables and arrays 42 levels deep \\(under 'env_kwargs'\\); the limit is 32" \
        if depth == 40 else "deep.toml: values nested deeper than 32 levels, the limit for a recipe"
    with pytest.raises(RecipeError, match=expected):
        RecipeBook().add_file(path)


def test_tables_nested_deeper_than_the_limit_are_refused_in_a_file(tmp_path):
    path = tmp_path / "tables.toml"
    path.write_text(f'[recipes.x]\nalgorithm = "ppo"\n[recipes.x.env_kwargs.{".".join(["a"] * 2000)}]\nb = 1\n')
    with pytest.raises(RecipeError, match="recipe 'x' in .*tables.toml nests tables and arrays 2002 levels deep"):
        RecipeBook().add_file(path)


def test_a_set_value_nested_deeper_than_the_limit_is_refused(book):
    assert "a" in book.resolve("walk", [f"env_kwargs.a={_nested(30)}"]).env_kwargs  # 32 levels: at the limit
    with pytest.raises(RecipeError, match="recipe 'walk' with its --set values nests tables and arrays 42 levels deep \\(under 'env_kwargs'\\); the limit is 32"):
        book.resolve("walk", [f"env_kwargs.a={_nested(40)}"])
    with pytest.raises(RecipeError, match="--set env_kwargs.a: the value nests arrays or tables deeper than 32 levels"):
        book.resolve("walk", [f"env_kwargs.a={_nested(3000)}"])
    with pytest.raises(RecipeError, match="nests tables and arrays 2001 levels deep \\(under 'hyperparameters'\\)"):
        book.resolve("walk", ["hyperparameters." + ".".join(["a"] * 2000) + "=1"])


def test_a_recipe_file_over_the_size_limit_is_refused(tmp_path):
    from rlplug.recipes.limits import MAX_RECIPE_FILE_BYTES

    path = tmp_path / "big.toml"
    path.write_text("# padding\n" * (MAX_RECIPE_FILE_BYTES // 10 + 1))
    with pytest.raises(RecipeError, match=f"recipe file {path} is over 4 MiB, the limit for a recipe file"):
        RecipeBook().add_file(path)


def test_a_recipe_file_that_is_not_a_regular_file_is_refused_unread(tmp_path):
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it to read would wait for a writer forever
    with pytest.raises(RecipeError, match=f"recipe file {fifo} is a FIFO \\(named pipe\\), not a regular file; --recipes takes a TOML file"):
        RecipeBook().add_file(fifo)
    with pytest.raises(RecipeError, match="recipe file /dev/zero is a character device, not a regular file"):
        RecipeBook().add_file("/dev/zero")  # endless


def test_a_recipe_file_s_parse_is_cached_by_its_bytes(tmp_path, monkeypatch):
    """issue 51: `recipes` and `show` read the registry's parse back (marshal) instead of importing tomllib (~9 ms)
    and parsing it again; an edited file is parsed afresh, a TOML date is never cached, a damaged entry is ignored."""
    import marshal
    import tomllib

    from rlplug.util import tomlcache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    text = '[recipes.a]\nsteps = 1_000\nlr = 3e-4\nhidden = [64, 64]\nname = "x"\nflag = true\n'
    assert tomlcache.loads(text) == tomllib.loads(text)
    (entry,) = (tmp_path / "cache" / "rlplug" / "toml").iterdir()
    entry.write_bytes(marshal.dumps({"recipes": {"a": {"steps": 7}}}))  # what a hit returns is the stored parse, not a new one
    assert tomlcache.loads(text) == {"recipes": {"a": {"steps": 7}}}
    edited = text.replace("1_000", "2_000")
    assert tomlcache.loads(edited)["recipes"]["a"]["steps"] == 2000
    dated = "[recipes.a]\nwhen = 2026-12-04\n"
    assert tomlcache.loads(dated) == tomllib.loads(dated) and len(list(entry.parent.iterdir())) == 2
    for damaged in (b"{ not marshal", marshal.dumps(7), b""):  # a damaged entry, or one holding no table, is parsed again
        entry.write_bytes(damaged)
        assert tomlcache.loads(text) == tomllib.loads(text)
    with pytest.raises(tomllib.TOMLDecodeError):
        tomlcache.loads("[recipes.a\n")
