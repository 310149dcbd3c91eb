"""The run directory's metrics.csv keeps every row when metrics appear mid-run."""

import csv
from types import SimpleNamespace

from rlplug.runs import RunWriter


def test_metrics_csv_declares_loss_terms_and_widens_for_new_metrics(tmp_path):
    entry = SimpleNamespace(terms=("loss_critic",), reported=("q_mean",))
    # what RunWriter reads of a Build: the loss's declared terms, the trainer's progress unit, extras
    build = SimpleNamespace(loss_entry=entry, trainer=SimpleNamespace(progress_unit="env_steps", progress=0), extras={})
    (tmp_path / "recipe.json").write_text("{}")  # resume: no recipe or version files needed here
    writer = RunWriter(tmp_path, build, resume=True)
    writer.log(100, 1.0, {"train/gradient_steps": 0.0})  # warm-up row: no loss yet
    writer.log(200, 2.0, {"loss/loss_critic": 0.5, "loss/q_mean": 1.5, "train/gradient_steps": 100.0})
    writer.log(300, 3.0, {"loss/loss_critic": 0.4, "train/alpha": 0.2})  # a metric never seen before
    with (tmp_path / "metrics.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["env_steps"] for r in rows] == ["100", "200", "300"]
    assert rows[0]["loss/loss_critic"] == "" and rows[1]["loss/loss_critic"] == "0.5"
    assert rows[0]["train/alpha"] == "" and rows[2]["train/alpha"] == "0.2"
    assert not (tmp_path / "metrics.csv.tmp").exists()


def test_a_resumed_metrics_log_keeps_one_timeline(tmp_path):
    """Rows past the checkpoint (and a row a kill cut short) are dropped, wall time continues from the last
    row kept, and a row at the step of the row before it (the final evaluation) joins that row."""
    from rlplug.runs.metrics import MetricsLog

    path = tmp_path / "metrics.csv"
    path.write_text("env_steps,wall_s,train/episode_return,eval/return\r\n100,1.5,10,\r\n200,3,20,\r\n300,4.5,30,\r\n"
                    "400,6,40,\r\n50")  # a kill after 400, in the middle of a row; the checkpoint is at 200
    log = MetricsLog(tmp_path, "env_steps", resumed_at=200, tensorboard=False)
    assert log.dropped == 3 and log.purge_step == 201
    log.log(300, 1.0, {"train/episode_return": 31.0})
    log.log(300, 1.25, {"eval/return": 33.0})
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows == [["env_steps", "wall_s", "train/episode_return", "eval/return"], ["100", "1.5", "10", ""],
                    ["200", "3", "20", ""], ["300", "4.25", "31", "33"]]


def test_runs_record_the_commit_of_the_checkout_they_ran_from(tmp_path):
    """versions.json and summary.json say which code measured a run: a bench row can be told stale."""
    import subprocess

    from rlplug.runs.versions import _CHECKOUT, source_commit, versions

    assert source_commit(tmp_path) is None  # not a checkout: an installed wheel records none
    if (_CHECKOUT / ".git").exists():
        head = subprocess.run(["git", "-C", str(_CHECKOUT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        assert source_commit().removesuffix("-dirty") == head.strip()[:12]
        assert versions()["rlplug_source"] == source_commit()
