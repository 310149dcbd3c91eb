"""``rlplug tune``: search spaces declared with the schema and narrowed by recipes, the refusals, and
small studies end to end (SQLite, one process and two ``--jobs`` processes sharing one study)."""

from __future__ import annotations

import re
import sys
import textwrap
import tomllib

import pytest
from conftest import run_cli

from rlplug import Param, RlplugError, Search
from rlplug.errors import RecipeError, UnknownNameError
from rlplug.pipeline.session import Session
from rlplug.cli import main
from rlplug.recipes.search_space import pinned_by, recipe_space

FIRST_PARTY = ("ppo", "sac", "td3", "ddpg", "dqn", "mappo", "iql", "cql")
TINY = ["--steps", "512", "--seeds", "1", "--set", "hidden_sizes=[8]", "--eval-seeds", "1", "--no-progress"]


@pytest.fixture(scope="module")
def session():
    return Session()


def recipes_file(tmp_path, body: str):
    path = tmp_path / "recipes.toml"
    path.write_text(textwrap.dedent(body))
    return str(path)


# ---- declarations ---------------------------------------------------------------------------------


def test_param_search_is_checked_against_its_domain_when_declared():
    assert Param("lr", 3e-4, "learning rate", bounds="(0, inf)", search=Search(1e-5, 1e-2, log=True)).search.log
    assert Param("epochs", 10, "passes", bounds="[1, 100]", search=(1, 5, 10)).search.choices == (1, 5, 10)
    assert Param("lr", 3e-4, "lr", search={"low": 1e-5, "high": 1e-3, "log": True}).search == Search(1e-5, 1e-3, True)
    bad = [
        (dict(default=0.5, bounds="[0, 1]", search=Search(0.5, 2.0)), "high = 2.0 is outside [0, 1]"),
        (dict(default=0.5, search=Search(0.9, 0.1)), "empty range"),
        (dict(default=0.5, search=Search(0.0, 0.1, log=True)), "log-scale range needs low > 0"),
        (dict(default="a", choices=("a", "b"), search=Search(0, 1)), "must be a list of choices"),
        (dict(default="a", choices=("a", "b"), search=("a", "c")), "is not one of"),
        (dict(default=4, search=Search(1.5, 8)), "whole numbers"),
    ]
    for kwargs, expected in bad:
        with pytest.raises(ValueError, match=re.escape(expected)):
            Param("x", doc="a value", **kwargs)


def test_every_first_party_algorithm_declares_a_search_space(session):
    for name in FIRST_PARTY:
        searched = [p.name for p in session.host.algorithm(name).params if p.search is not None]
        assert len(searched) >= 4, (name, searched)


# ---- a recipe's search table ----------------------------------------------------------------------


def test_a_recipe_narrows_widens_and_fixes_the_declared_space(tmp_path):
    path = recipes_file(tmp_path, """
        [recipes.narrow]
        extends = "ppo-cartpole"
        [recipes.narrow.search]
        learning_rate = {low = 1e-4, high = 1e-3, log = true}
        epochs = [5, 10]
        gamma = 0.99
        hidden_sizes = [[8], [16, 16]]
        value_clip = {low = 0.1, high = 0.3}
        [recipes.child]
        extends = "narrow"
        [recipes.child.search]
        learning_rate = {low = 2e-4, high = 5e-4}
    """)
    session = Session(recipe_files=[path])
    recipe = session.resolve("narrow")
    space = recipe_space(session.host.algorithm("ppo"), recipe)
    assert space.searched["learning_rate"] == Search(1e-4, 1e-3, log=True)
    assert space.searched["epochs"].choices == (5, 10)  # the recipe's own table is taken as written
    assert space.searched["hidden_sizes"].choices == ([8], [16, 16])
    assert space.searched["value_clip"] == Search(0.1, 0.3)  # a parameter without a declared search
    assert space.fixed == {"gamma": 0.99} and "gamma" not in space.searched
    assert space.source["learning_rate"] == "recipe" and space.source["gae_lambda"] == "declared"
    # a declared search holds the recipe's own value (ppo-cartpole trains 8 epochs, lr_schedule kl_adaptive)
    plain = recipe_space(session.host.algorithm("ppo"), session.resolve("ppo-cartpole"))
    assert 8 in plain.searched["epochs"].choices and "kl_adaptive" in plain.searched["lr_schedule"].choices
    # an entry of a child's search table replaces its parent's whole (log included)
    child = recipe_space(session.host.algorithm("ppo"), session.resolve("child"))
    assert child.searched["learning_rate"] == Search(2e-4, 5e-4) and child.searched["epochs"].choices == (5, 10)
    # --set search.X=... reaches the table; --set X=... pins X at its value
    over = session.resolve("ppo-cartpole", ["search.epochs=[3, 4]"])
    assert recipe_space(session.host.algorithm("ppo"), over).searched["epochs"].choices == (3, 4)
    pinned = pinned_by(["hidden_sizes=[8]", "hyperparameters.epochs=2", "steps=10"], session.host.algorithm("ppo").param_map)
    assert pinned == {"hidden_sizes", "epochs"}
    assert "hidden_sizes" not in recipe_space(session.host.algorithm("ppo"), over, pinned).searched


@pytest.mark.parametrize("entry,error,expected", [
    ("learning_rat = {low = 1e-4, high = 1e-3}", UnknownNameError,
     "'search' names 'learning_rat', which is not a hyperparameter of ppo (did you mean 'learning_rate'?)"),
    ("learning_rate = {low = 1e-3, high = 1e-4}", RecipeError,
     "'search.learning_rate' is an empty range: low = 0.001 is not below high = 0.0001"),
    ("gamma = {low = 0.9, high = 1.5}", RecipeError, "'search.gamma' high = 1.5 is outside [0, 1] (discount factor)"),
    ("gamma = 1.2", RecipeError, "'search.gamma' = 1.2 is outside [0, 1]"),
    ('epochs = [5, "ten"]', RecipeError, "'search.epochs' choice must be int, got str 'ten'"),
    ("activation = {low = 0, high = 1}", RecipeError, "'search.activation' must be a list of choices, not a range"),
    ("learning_rate = {low = 1e-4, hi = 1e-3}", RecipeError, "'search.learning_rate' has key 'hi' (did you mean 'high'?)"),
    ("entropy_coef = {low = 0.0, high = 0.1, log = true}", RecipeError, "a log-scale range needs low > 0"),
])  # fmt: skip
def test_a_bad_search_table_is_refused_in_one_line(tmp_path, entry, error, expected):
    path = recipes_file(tmp_path, f"""
        [recipes.bad]
        extends = "ppo-cartpole"
        [recipes.bad.search]
        {entry}
    """)
    with pytest.raises(error) as caught:
        Session(recipe_files=[path]).resolve("bad")
    assert str(caught.value).startswith("recipe 'bad': ") and "\n" not in str(caught.value)
    assert expected in str(caught.value)


def test_show_space_prints_the_space_and_train_refuses_a_bad_table(tmp_path, capsys):
    assert main(["show", "dqn-cartpole", "--space"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"learning_rate +log-uniform \[1e-05, 0.01\] +0.0023 +declared", out), out
    path = recipes_file(tmp_path, """
        [recipes.bad]
        extends = "ppo-cartpole"
        search = {epochs = {low = 5, high = 1}}
    """)
    assert main(["train", "bad", "--recipes", path, "--no-write"]) == 2
    assert capsys.readouterr().err.strip() == (
        "rlplug: error: recipe 'bad': 'search.epochs' is an empty range: low = 5 is not below high = 1")


def test_the_cheap_commands_and_show_space_import_neither_optuna_nor_torch():
    import subprocess

    code = ("import sys, contextlib, io\n"
            "from rlplug.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['show', 'ppo-cartpole', '--space']) == 0 and main(['list']) == 0\n"
            "print(sorted(m for m in ('optuna', 'sqlalchemy', 'torch', 'numpy') if m in sys.modules))\n")  # fmt: skip
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "[]", (result.stdout, result.stderr)


# ---- refusals of `rlplug tune` --------------------------------------------------------------------


NO_SPACE = """
from rlplug import AlgorithmPlugin, AlgorithmSpec, BackendSpec, Param

SPEC = AlgorithmSpec(name="plain", summary="no search space", kind="on-policy", api_version=1,
                     backends={"skrl": BackendSpec(module="nowhere", action_spaces=("discrete",))},
                     params=(Param("alpha", 1.0, "a number"),))
plugin = AlgorithmPlugin(SPEC, source="test")
"""


def test_tune_refusals_are_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def refused(*argv: str) -> str:
        assert main(["tune", *argv]) == 2
        captured = capsys.readouterr()
        assert len(captured.err.strip().splitlines()) == 1, captured.err
        return captured.err.strip()

    with monkeypatch.context() as patched:
        patched.setitem(sys.modules, "optuna", None)  # as if not installed
        assert refused("ppo-cartpole", "--trials", "2") == "rlplug: error: rlplug tune needs Optuna: pip install 'rlplug[tune]'"
    assert "needs --trials N" in refused("ppo-cartpole")
    assert refused("ppo-cartpole", "--trials", "0") == "rlplug: error: --trials = 0 is outside [1, 10**6]"
    assert "cannot open the study storage 'sqlite:////nonexistent/dir/x.db': (sqlite3.OperationalError) unable to open " \
        "database file" in refused("ppo-cartpole", "--trials", "1", "--storage", "sqlite:////nonexistent/dir/x.db")
    assert "cannot open the study storage 'no-such-url'" in refused("ppo-cartpole", "--trials", "1", "--storage", "no-such-url")
    assert "no study 'ppo-cartpole-skrl'" in refused("ppo-cartpole", "--export")
    (tmp_path / "plain_algo.py").write_text(NO_SPACE)
    monkeypatch.syspath_prepend(str(tmp_path))
    plain = recipes_file(tmp_path, """
        [recipes.plain-cartpole]
        algorithm = "plain"
        env = "CartPole-v1"
        backend = "skrl"
        steps = 100
        target = 1.0
    """)
    assert refused("plain-cartpole", "--trials", "1", "--plugin", "plain_algo:plugin", "--recipes", plain) == (
        "rlplug: error: recipe 'plain-cartpole': nothing to search: algorithm 'plain' declares no search ranges "
        "(Param(search=...)) and the recipe's [recipes.plain-cartpole.search] table adds none")


# ---- studies end to end ---------------------------------------------------------------------------


def trials_of(tmp_path, study, db="rlplug-tune.db"):
    import optuna

    return optuna.load_study(study_name=study, storage=f"sqlite:///{tmp_path / db}").get_trials(deepcopy=False)


def test_tune_writes_a_recipe_that_show_accepts_and_a_rerun_continues(tmp_path, monkeypatch, capsys):
    result = run_cli("tune", "ppo-cartpole", "--trials", "2", *TINY, "--report", "report.md", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    trials = trials_of(tmp_path, "ppo-cartpole-skrl")
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE"]
    assert trials[0].user_attrs["baseline"] and trials[0].params["epochs"] == 8  # the recipe as written comes first
    assert "hidden_sizes" not in trials[1].params  # pinned by --set
    out = tmp_path / "ppo-cartpole-tuned.toml"
    table = tomllib.loads(out.read_text())["recipes"]["ppo-cartpole-tuned"]
    assert table["extends"] == "ppo-cartpole@1" and table["hyperparameters"]["hidden_sizes"] == [8]
    assert "# best: trial" in out.read_text() and "# fresh seeds 10042: tuned" in out.read_text()
    assert f"recipe ppo-cartpole-tuned@1 written to {out.name}" in result.stdout
    assert (tmp_path / "report.md").read_text().startswith("# Tuning ppo-cartpole@1 on skrl")
    assert (tmp_path / "report-history.png").stat().st_size > 1000
    from rlplug.util.outputs import PICTURE, TUNE_REPORT, TUNED_RECIPE, check_output  # a rerun may replace all three

    assert check_output(out, TUNED_RECIPE, "tune --out") and check_output(tmp_path / "report.md", TUNE_REPORT, "tune --report")
    assert check_output(tmp_path / "report-history.png", PICTURE, "tune --report")
    # `rlplug show` and `rlplug train` take the file as it is
    assert main(["show", "ppo-cartpole-tuned", "--recipes", str(out)]) == 0
    assert "hidden_sizes = [8]" in capsys.readouterr().out
    build = Session(recipe_files=[str(out)]).prepare("ppo-cartpole-tuned")  # what `rlplug train` checks before it builds
    assert build.hp["hidden_sizes"] == [8] and build.recipe.steps == 99_840  # the recipe keeps its own budget
    # the same command with more trials continues the study; another budget is refused
    again = run_cli("tune", "ppo-cartpole", "--trials", "3", *TINY, "--eval-seeds", "0", "--as", "ppo-cartpole",
                    "--out", "v2.toml", cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert len(trials_of(tmp_path, "ppo-cartpole-skrl")) == 3
    assert tomllib.loads((tmp_path / "v2.toml").read_text())["recipes"]["ppo-cartpole"]["version"] == 2
    monkeypatch.chdir(tmp_path)  # refused before anything trains: in this process
    assert main(["tune", "ppo-cartpole", "--trials", "3", *TINY[2:], "--steps", "256"]) == 2
    assert capsys.readouterr().err.strip() == ("rlplug: error: study 'ppo-cartpole-skrl' was made with steps = 512, this "
                                               "command asks for 256; pass --study NAME to start another study")


def test_two_jobs_share_one_sqlite_study(tmp_path):
    result = run_cli("tune", "ppo-cartpole", "--trials", "2", "--jobs", "2", "--storage", "sqlite:///shared.db",
                     "--study", "shared", *TINY, "--eval-seeds", "0", "--json", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    trials = trials_of(tmp_path, "shared", db="shared.db")
    assert len(trials) == 2 and all(t.state.name == "COMPLETE" for t in trials)
    assert all(t.user_attrs["process"] for t in trials)
    assert '"recipe": "ppo-cartpole-tuned@1"' in result.stdout


def test_export_refuses_an_existing_version(session):
    from rlplug.tuning.export import export_ref

    original = session.resolve("ppo-cartpole")
    assert export_ref(session.book, original, None) == ("ppo-cartpole-tuned", 1)
    assert export_ref(session.book, original, "ppo-cartpole") == ("ppo-cartpole", 2)
    with pytest.raises(RlplugError, match="recipe 'ppo-cartpole@1' already exists"):
        export_ref(session.book, original, "ppo-cartpole@1")
