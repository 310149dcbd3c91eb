"""Output options never lose a user's file: ``--overwrite`` and ``--out`` / ``--report`` replace only rlplug's own
earlier output of the same kind, never the command's inputs, atomically; concurrent writers of one name are
refused or serialised (``rlplug.util.outputs``, ``rlplug.runs.lock.hold``)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
from pathlib import Path

import pytest

from conftest import cli_in_process as _cli, refused_in_process as _refused, write_dataset
from test_compare import write_run

RECIPE_FILE = """[recipes.my-ppo]
extends = "ppo-cartpole"
version = 1
description = "mine"
"""


def tree_hash(path: Path) -> str:
    """Every file's relative path and bytes under ``path`` (or the file itself)."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        digest.update(str(file.relative_to(path) if file != path else file.name).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def user_things(tmp_path, monkeypatch):
    """A run directory, a folder of the user's, the current directory and a recipe file, by the name an output
    option is given, with what the refusal says each is."""
    run = write_run(tmp_path / "runs" / "mine")
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "latest.pt").write_bytes(b"not really a checkpoint")
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "cat.jpg").write_bytes(b"\xff\xd8 a cat")
    here = tmp_path / "work"
    here.mkdir()
    (here / "notes.txt").write_text("mine\n")
    monkeypatch.chdir(here)
    recipes = tmp_path / "my-recipes.toml"
    recipes.write_text(RECIPE_FILE)
    return {
        "run directory": (run, "a run directory (recipe.json, summary.json, checkpoints/)"),
        "folder": (folder, "a directory (cat.jpg)"),
        "current directory": (Path("."), "the current directory"),
        "recipe file": (recipes, "a recipe file"),
    }


def _assert_left_alone(capsys, things, expected, argv_for):
    for label, (path, what) in things.items():
        target = path.resolve()
        before = tree_hash(target)
        line = _refused(capsys, expected, *argv_for(path))
        assert what in line, (label, line)
        assert line.endswith("or remove it yourself"), line
        assert tree_hash(target) == before, label


# ---- datasets ---------------------------------------------------------------------------------------


def test_dataset_overwrite_refuses_anything_but_a_dataset_rlplug_wrote(capsys, tmp_path, user_things, monkeypatch):
    monkeypatch.setenv("RLPLUG_DATA_DIR", str(tmp_path / "data"))

    def argv(path):
        name = str(path) if os.sep in str(path) or str(path).startswith(".") else f"./{path}"
        return ["dataset", "collect", name, "--env", "CartPole-v1", "--random", "--steps", "20", "--overwrite", "--no-progress"]

    _assert_left_alone(capsys, user_things, "dataset --overwrite:", argv)
    assert "not a dataset rlplug wrote" in _refused(capsys, "", *argv(user_things["folder"][0]))
    # without --overwrite, what is there is named too, not "pass --overwrite"
    line = _refused(capsys, "is a run directory", *argv(user_things["run directory"][0])[:-2])
    assert "--overwrite" not in line
    # a dataset rlplug wrote is replaced with --overwrite, and refused without it
    made = Path(write_dataset(tmp_path / "mine", env_id="CartPole-v1", steps=30))
    _refused(capsys, "already exists", *argv(made)[:-2])
    code, out, err = _cli(capsys, *argv(made))
    assert code == 0, err
    assert json.loads((made / "metadata.json").read_text())["transitions"] == 20
    assert not [p for p in made.parent.iterdir() if p.name.startswith(".")]  # no partial, aside or lock left behind


def test_a_failed_dataset_replacement_keeps_the_old_one(tmp_path, monkeypatch):
    made = Path(write_dataset(tmp_path / "mine", env_id="CartPole-v1", steps=30))
    before = tree_hash(made)
    real = os.replace

    def failing(src, dst):
        if Path(dst) == made and ".partial" in Path(src).name:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    import gymnasium as gym

    from rlplug.data.collect import rollout
    from rlplug.data.datasets import DatasetError, write

    env = gym.make("CartPole-v1")
    arrays = rollout("CartPole-v1", {}, None, 20, 0.0, 1, progress=False)
    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(DatasetError, match="No space left on device; the dataset there is kept as it was"):
        write(str(made), arrays, env_id="CartPole-v1", env_kwargs={}, observation_space=env.observation_space,
              action_space=env.action_space, source={}, reference={}, overwrite=True)  # fmt: skip
    assert tree_hash(made) == before
    assert [p.name for p in made.parent.iterdir()] == ["mine"]


def test_a_second_collect_of_one_name_is_refused_while_the_first_writes(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RLPLUG_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    lock = os.open(tmp_path / "data" / ".rand.lock", os.O_RDWR | os.O_CREAT)  # as another `dataset collect rand` holds it
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(lock, f"{os.getpid()}\n".encode())
        _refused(capsys, f"dataset 'rand' at {tmp_path / 'data' / 'rand'} is being written by process {os.getpid()}",
                 "dataset", "collect", "rand", "--env", "CartPole-v1", "--random", "--steps", "20", "--no-progress")  # fmt: skip
    finally:
        os.close(lock)
    assert not (tmp_path / "data" / "rand").exists()
    code, _, err = _cli(capsys, "dataset", "collect", "rand", "--env", "CartPole-v1", "--random", "--steps", "20", "--no-progress")
    assert code == 0, err


# ---- export --out -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from test_export import _train_run

    return _train_run(tmp_path_factory.mktemp("runs") / "ppo", "ppo-cartpole", "skrl")


def test_export_out_refuses_a_run_s_files_and_the_user_s(capsys, tmp_path, trained, user_things):
    things = {**user_things,
              "checkpoint": (trained / "checkpoints" / "latest.pt", "a file of run directory"),
              "run's recipe": (trained / "recipe.json", f"a file of run directory {trained} (recipe.json)")}  # fmt: skip
    _assert_left_alone(capsys, things, "export --out:", lambda path: ["export", trained, "--out", path])
    # an earlier export (the default path, and one elsewhere) is replaced
    for out in (None, tmp_path / "policy.pt"):
        for _ in range(2):
            code, _, err = _cli(capsys, "export", trained, *(["--out", out] if out else []))
            assert code == 0, err
    assert (trained / "policy.pt").is_file()


# ---- tune --out / --report, bench --report ------------------------------------------------------------------


def test_tune_out_refuses_its_own_recipe_file_and_the_user_s(capsys, tmp_path, user_things):
    pytest.importorskip("optuna")
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    recipes = user_things["recipe file"][0]

    def argv(option):
        return lambda path: ["tune", "my-ppo", "--recipes", recipes, "--trials", "1", "--storage", storage, option, path]

    things = {**user_things, "recipe file": (recipes, "a recipe file given with --recipes, an input of this command")}
    for label, (path, what) in things.items():
        before = tree_hash(path.resolve())
        line = _refused(capsys, "tune --out:", *argv("--out")(path))
        assert what in line and tree_hash(path.resolve()) == before, (label, line)
    report = tmp_path / "notes.md"
    report.write_text("# my notes\n")
    _refused(capsys, f"tune --report: {report} is a file (11 bytes), not a tune report rlplug wrote", *argv("--report")(report))
    assert report.read_text() == "# my notes\n"
    assert not (tmp_path / "tune.db").exists()  # refused before the study was opened


def test_an_earlier_tuned_recipe_is_replaced_and_a_hand_written_one_is_not(tmp_path):
    from rlplug.errors import OutputError
    from rlplug.tuning.export import recipe_text, write_recipe

    out = tmp_path / "ppo-cartpole-tuned.toml"
    text = recipe_text("ppo-cartpole-tuned", 1, "ppo-cartpole@1", "tuned", {}, {"lr": 0.001}, {}, ["Tuned by rlplug tune (rlplug 1)"])
    write_recipe(out, text, [])
    write_recipe(out, text.replace("0.001", "0.002"), [])  # an earlier one: replaced
    assert "0.002" in out.read_text()
    with pytest.raises(OutputError, match="an input of this command"):
        write_recipe(out, text, [(out, "a recipe file given with --recipes")])
    out.write_text(RECIPE_FILE)
    with pytest.raises(OutputError, match="is a recipe file, not a tuned recipe rlplug wrote"):
        write_recipe(out, text, [])
    assert out.read_text() == RECIPE_FILE


def test_bench_report_refuses_a_user_s_file_before_anything_trains(capsys, tmp_path):
    from rlplug.util.outputs import BENCH_JSON, BENCH_REPORT, check_output

    root = Path(__file__).resolve().parent.parent  # `bench --all` rewrites the project's own report
    assert check_output(root / "BENCHMARKS.md", BENCH_REPORT, "bench --report")
    assert check_output(root / "BENCHMARKS.json", BENCH_JSON, "bench --report")
    report = tmp_path / "notes.md"
    report.write_text("# my notes\n")
    _refused(capsys, f"bench --report: {report} is a file (11 bytes), not a bench report rlplug wrote",
             "bench", "ppo-cartpole", "--backend", "skrl", "--steps", "64", "--report", report)  # fmt: skip
    assert report.read_text() == "# my notes\n" and not report.with_suffix(".json").exists()


# ---- compare --out, and one run given twice --------------------------------------------------------------


def test_compare_out_refuses_what_compare_did_not_draw_and_counts_a_run_once(capsys, tmp_path, user_things):
    run = user_things["run directory"][0]
    (run / "curve.png").write_bytes(b"\x89PNG\r\n\x1a\n the run's own curve")
    user_png = tmp_path / "holiday.png"
    user_png.write_bytes(b"\x89PNG\r\n\x1a\n a photo")
    folder = tmp_path / "pictures.png"
    folder.mkdir()
    (folder / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    things = {"run's curve": (run / "curve.png", f"a file of run directory {run} (curve.png)"),
              "user's picture": (user_png, "a file (16 bytes)"), "folder": (folder, "a directory (a.png)")}  # fmt: skip
    _assert_left_alone(capsys, things, "compare --out:", lambda path: ["compare", run, "--out", path])
    out = tmp_path / "cmp.png"
    for _ in range(2):  # the second replaces the first's picture
        code, stdout, err = _cli(capsys, "compare", run, f"{run}/", run.parent / ".." / "runs" / run.name, "--out", out, "--json")
        assert code == 0, err
        assert len(json.loads(stdout)["runs"]) == 1


# ---- tune: two processes creating one SQLite study ---------------------------------------------------------


def test_concurrent_creators_of_one_sqlite_study_all_succeed(tmp_path):
    pytest.importorskip("optuna")
    from rlplug.tuning.storage import open_storage, open_study, study_config

    url = f"sqlite:///{tmp_path / 'tune.db'}"
    start, results = threading.Barrier(4), []

    def create(i):
        start.wait()
        try:
            study = open_study(open_storage(url), "s", {"recipe": "x", "creator": 0}, seed=i, create=True)
            results.append(study_config(study))
        except Exception as err:  # noqa: BLE001 - what the test looks for
            results.append(err)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [{"recipe": "x", "creator": 0}] * 4, results
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tune.db"]
