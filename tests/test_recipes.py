"""Recipe parsing, versions, extends, overrides and their error lines (no torch needed)."""

from __future__ import annotations

import pytest

from rlplug.errors import RecipeError, UnknownNameError
from rlplug.recipes import RecipeBook, apply_override, parse_value

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
