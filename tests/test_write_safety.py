"""Files rlplug writes: readable as the umask says, other format versions refused by name, faults on write
reported in one line with the previous file intact (issue 51)."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from conftest import cli_in_process as _cli, refused_in_process as _refused, write_dataset
from test_compare import write_run


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    old = os.umask(0o022)
    try:
        from test_export import _train_run

        return _train_run(tmp_path_factory.mktemp("runs") / "ppo", "ppo-cartpole", "skrl")
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---- 3. atomically written files get the umask's mode -------------------------------------------------------


def test_every_atomic_writer_gives_the_umask_s_mode(capsys, tmp_path, trained, umask_022, monkeypatch):
    from rlplug.results.report import write_report
    from rlplug.runs.checkpoint_io import load_checkpoint, save_checkpoint
    from rlplug.tuning.export import recipe_text, write_recipe

    written = {name: trained / "checkpoints" / name for name in ("latest.pt", "previous.pt")}
    best = trained / "checkpoints" / "best.pt"
    save_checkpoint(best, load_checkpoint(written["latest.pt"]), keep_previous=False)  # as RunWriter writes best.pt
    written["best.pt"] = best
    code, _, err = _cli(capsys, "export", trained, "--out", tmp_path / "policy.pt")
    assert code == 0, err
    written["export"] = tmp_path / "policy.pt"
    monkeypatch.setenv("RLPLUG_DATA_DIR", str(tmp_path / "data"))
    written["dataset"] = Path(write_dataset(tmp_path / "data" / "rand", "CartPole-v1", steps=50))
    written["dataset metadata"] = written["dataset"] / "metadata.json"
    text = recipe_text("ppo-cartpole-tuned", 1, "ppo-cartpole@1", "tuned", {}, {"lr": 0.001}, {}, ["Tuned by rlplug tune (rlplug 1)"])
    write_recipe(tmp_path / "tuned.toml", text, [])
    written["tuned recipe"] = tmp_path / "tuned.toml"
    run = write_run(tmp_path / "runs" / "mine")
    code, _, err = _cli(capsys, "compare", run, "--out", tmp_path / "cmp.png")
    assert code == 0, err
    written["compare PNG"] = tmp_path / "cmp.png"
    write_report(tmp_path / "bench.md", [], "rlplug bench")
    written["bench report"], written["bench JSON"] = tmp_path / "bench.md", tmp_path / "bench.json"
    code, _, err = _cli(capsys, "show", "ppo-cartpole", "--backend", "torchrl", "--format", "hydra", "--out", tmp_path / "ppo.yaml")
    assert code == 0, err
    written["Hydra export"] = tmp_path / "ppo.yaml"
    modes = {what: oct(mode(path)) for what, path in written.items()}
    expected = {what: oct(0o755 if path.is_dir() else 0o644) for what, path in written.items()}
    assert modes == expected
    assert oct(mode(trained / "recipe.json")) == "0o644"  # as every other file of the run


# ---- 2. files of another format version: refused by name, never moved aside ---------------------------------


def _copy_run(trained: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(trained, to)
    return to


def test_a_checkpoint_of_a_newer_format_is_refused_and_left_where_it_is(capsys, tmp_path, trained):
    import torch

    run = _copy_run(trained, tmp_path / "run")
    latest = run / "checkpoints" / "latest.pt"
    payload = torch.load(latest, weights_only=True)
    torch.save({**payload, "format": 2, "written_by": "0.3.0"}, latest)
    before = {p.name: p.read_bytes() for p in (run / "checkpoints").iterdir()}
    expected = (f"checkpoint {latest} has checkpoint format 2, written by rlplug 0.3.0; this rlplug 0.1.0 reads "
                "checkpoint format 1 (the file is newer); continue or evaluate it with that rlplug")
    for argv in (["resume", run, "--no-progress"], ["eval", run, "--episodes", "1"]):
        code, _, err = _cli(capsys, *argv)
        assert (code, err.strip()) == (2, f"rlplug: error: {expected}"), argv
    assert {p.name: p.read_bytes() for p in (run / "checkpoints").iterdir()} == before  # nothing renamed or moved


def test_a_checkpoint_of_format_1_names_its_writer_from_its_header(tmp_path):
    from rlplug.errors import CheckpointVersionError
    from rlplug.runs.checkpoint_io import load_checkpoint
    import torch

    path = tmp_path / "old.pt"
    torch.save({"format": 0, "rlplug": {"rlplug": "0.0.9"}}, path)
    with pytest.raises(CheckpointVersionError, match=r"has checkpoint format 0, written by rlplug 0\.0\.9; this rlplug 0\.1\.0 reads checkpoint format 1; "):
        load_checkpoint(path)
    torch.save({"weights": torch.zeros(1)}, path)  # not rlplug's at all: still called that
    with pytest.raises(Exception, match="is not an rlplug checkpoint"):
        load_checkpoint(path)


def test_a_dataset_of_another_format_is_refused_naming_both_versions(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RLPLUG_DATA_DIR", str(tmp_path / "data"))
    path = Path(write_dataset(tmp_path / "data" / "rand", "CartPole-v1", steps=50))
    meta = json.loads((path / "metadata.json").read_text())
    meta = {"format": 2, "rlplug": "0.3.0", "renamed": meta}  # a later format may lay its fields out otherwise
    (path / "metadata.json").write_text(json.dumps(meta))
    _refused(capsys, f"dataset 'rand' ({path / 'metadata.json'}) has dataset format 2, written by rlplug 0.3.0; this rlplug "
             "0.1.0 reads dataset format 1 (the file is newer); read it with that rlplug, or collect it again with this one",
             "dataset", "info", "rand")  # fmt: skip


def test_an_exported_policy_of_another_format_is_refused_naming_both_versions(capsys, tmp_path, trained):
    import torch

    out = tmp_path / "policy.pt"
    code, _, err = _cli(capsys, "export", trained, "--out", out)
    assert code == 0, err
    extra = {"rlplug.json": ""}
    module = torch.jit.load(str(out), _extra_files=extra)
    meta = json.loads(extra["rlplug.json"])
    assert meta["rlplug_export"] == 1 and meta["rlplug"] == "0.1.0"
    torch.jit.save(module, str(out), _extra_files={"rlplug.json": json.dumps({**meta, "rlplug_export": 2, "rlplug": "0.3.0"})})
    _refused(capsys, f"exported policy {out} has export format 2, written by rlplug 0.3.0; this rlplug 0.1.0 reads export "
             "format 1 (the file is newer); run it with that rlplug, or export it again",
             "eval", trained, "--exported", out, "--episodes", "1")  # fmt: skip


# ---- 4. faults on write: one line naming the path and the cause, the previous file intact ---------------------

FAULTS = {errno.ENOSPC: "No space left on device", errno.EACCES: "Permission denied", errno.EROFS: "Read-only file system"}
"""Injected, not made: the tests run as root, whom a chmod-read-only directory does not stop."""


def failing_replace(monkeypatch, code: int, final_name: str, module=os, times: int = 10**6):
    """``os.replace`` that refuses to rename onto ``final_name`` (the commit of an atomic write) with ``code``, the
    first ``times`` times (a dataset's swap puts the old directory back with the same call)."""
    real, failed = os.replace, []

    def replace(src, dst, *args, **kwargs):
        if Path(dst).name == final_name and len(failed) < times:
            failed.append(dst)
            raise OSError(code, FAULTS[code], str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(module, "replace", replace)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".partial" in p.name or p.name.endswith(".tmp"))


@pytest.mark.parametrize("code", sorted(FAULTS))
def test_a_checkpoint_that_cannot_be_written_stops_the_run_in_one_line_and_keeps_the_last(capsys, tmp_path, trained, monkeypatch, code):
    import shutil

    from rlplug.runs.checkpoint_io import load_checkpoint

    run = tmp_path / "run"
    shutil.copytree(trained, run)
    latest = run / "checkpoints" / "latest.pt"
    before = latest.read_bytes()
    failing_replace(monkeypatch, code, "latest.pt")
    reason = "disk full (no space left on device)" if code == errno.ENOSPC else FAULTS[code]
    _refused(capsys, f"cannot write checkpoint {latest}: {reason}; the previous checkpoint there is intact",
             "resume", run, "--steps", "192", "--no-progress")  # fmt: skip
    monkeypatch.undo()
    assert latest.read_bytes() == before and load_checkpoint(latest)["rlplug"]["env_steps"] == 128
    assert leftovers(run / "checkpoints") == []


@pytest.mark.parametrize("code", sorted(FAULTS))
def test_an_export_that_cannot_be_written_keeps_the_earlier_one(capsys, tmp_path, trained, monkeypatch, code):
    from rlplug.results.export import load_exported

    out = tmp_path / "policy.pt"
    code_, _, err = _cli(capsys, "export", trained, "--out", out, "--no-check")
    assert code_ == 0, err
    before = out.read_bytes()
    failing_replace(monkeypatch, code, "policy.pt")
    _refused(capsys, f"cannot write exported policy {out}: {FAULTS[code]}; the earlier policy there is kept as it was",
             "export", trained, "--out", out, "--no-check")  # fmt: skip
    monkeypatch.undo()
    assert out.read_bytes() == before and load_exported(out).metadata["rlplug_export"] == 1
    assert leftovers(tmp_path) == []
    failing_replace(monkeypatch, code, "new.pt")  # nothing there before: nothing there after
    _refused(capsys, f"cannot write exported policy {tmp_path / 'new.pt'}: {FAULTS[code]}; nothing was written there",
             "export", trained, "--out", tmp_path / "new.pt", "--no-check")  # fmt: skip
    assert not (tmp_path / "new.pt").exists() and leftovers(tmp_path) == []


def test_a_write_that_fails_midway_leaves_no_partial_file_under_the_final_name(tmp_path):
    from rlplug.errors import OutputError
    from rlplug.util.outputs import replace_atomically

    out = tmp_path / "report.md"
    out.write_text("earlier\n")

    def half(partial):
        partial.write_text("half a rep")
        raise OSError(errno.ENOSPC, FAULTS[errno.ENOSPC], str(partial))

    with pytest.raises(OutputError, match=f"cannot write bench report {out}: No space left on device; the earlier report there is kept"):
        replace_atomically(out, half, "bench report")
    assert out.read_text() == "earlier\n" and leftovers(tmp_path) == []


@pytest.mark.parametrize("code", sorted(FAULTS))
def test_a_dataset_that_cannot_be_written_keeps_the_earlier_one(capsys, tmp_path, monkeypatch, code):
    from rlplug.data.datasets import DatasetError, load_data, read_info

    monkeypatch.setenv("RLPLUG_DATA_DIR", str(tmp_path / "data"))
    path = Path(write_dataset(tmp_path / "data" / "rand", "CartPole-v1", steps=50))
    meta = (path / "metadata.json").read_bytes()
    failing_replace(monkeypatch, code, "rand", times=1)  # the swap of the new directory into place
    import gymnasium as gym

    from rlplug.data.collect import rollout
    from rlplug.data.datasets import write

    env = gym.make("CartPole-v1")
    arrays = rollout("CartPole-v1", {}, None, 60, 0.0, 1, progress=False)
    with pytest.raises(DatasetError, match=f"cannot write dataset '{path}' at {path}: {FAULTS[code]}; the dataset there is kept as it was"):
        write(str(path), arrays, env_id="CartPole-v1", env_kwargs={}, observation_space=env.observation_space,
              action_space=env.action_space, source={"kind": "random", "seed": 1}, reference={}, overwrite=True)
    monkeypatch.undo()
    assert (path / "metadata.json").read_bytes() == meta and read_info(str(path)).transitions == 50
    assert len(load_data(read_info(str(path)))["reward"]) == 50
    assert sorted(p.name for p in path.parent.iterdir()) == ["rand"]  # no partial directory, no aside


def test_a_tune_study_whose_storage_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    optuna = pytest.importorskip("optuna")
    import sqlalchemy.exc

    from rlplug.tuning import StudyError
    from rlplug.tuning.loop import run_trials
    from rlplug.tuning.storage import open_storage, open_study

    url = f"sqlite:///{tmp_path / 'tune.db'}"
    study = open_study(open_storage(url), "s", {"recipe": "x"}, seed=0, create=True)
    run_trials(study, lambda trial: trial.suggest_float("x", 0, 1), target=1, timeout=None)

    def full(*args, **kwargs):
        raise sqlalchemy.exc.OperationalError("UPDATE trials ...", {}, Exception("database or disk is full"))

    monkeypatch.setattr(optuna.storages.RDBStorage, "set_trial_state_values", full)
    with pytest.raises(StudyError, match=f"cannot write the study storage '{url}': .*database or disk is full.*; the trials recorded before are kept"):
        run_trials(study, lambda trial: trial.suggest_float("x", 0, 1), target=2, timeout=None)
    monkeypatch.undo()
    assert len([t for t in study.get_trials() if t.state.is_finished() and t.value is not None]) == 1


def test_a_tracker_store_that_cannot_be_written_is_one_line_naming_it(capsys, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    import sqlalchemy.exc

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    real = mlflow.tracking.MlflowClient.log_batch

    def full(self, run_id, metrics=(), params=(), tags=(), **kwargs):
        if metrics:
            raise sqlalchemy.exc.OperationalError("INSERT INTO metrics ...", {}, Exception("database or disk is full"))
        return real(self, run_id, metrics=metrics, params=params, tags=tags, **kwargs)

    monkeypatch.setattr(mlflow.tracking.MlflowClient, "log_batch", full)
    run = tmp_path / "run"
    line = _refused(capsys, f"mlflow: cannot log metrics to sqlite:///{tmp_path}/mlflow.db: ",
                    "train", "ppo-cartpole", "--steps", "128", "--set", "num_envs=2", "--set", "rollout_steps=32", "--set", "epochs=1",
                    "--set", "eval_episodes=1", "--run-dir", run, "--logger", "mlflow", "--no-progress")  # fmt: skip
    assert line.endswith("database or disk is full")
    from rlplug.runs.checkpoint_io import load_checkpoint

    assert load_checkpoint(run / "checkpoints" / "latest.pt")["rlplug"]["env_steps"] > 0  # the run's own files are safe
