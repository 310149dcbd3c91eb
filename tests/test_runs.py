"""The run directory's metrics.csv keeps every row when metrics appear mid-run."""

import csv
from types import SimpleNamespace

from rlplug.runs import RunWriter


def test_metrics_csv_declares_loss_terms_and_widens_for_new_metrics(tmp_path):
    entry = SimpleNamespace(terms=("loss_critic",), reported=("q_mean",))
    # what RunWriter reads of a Build: the loss's declared terms, the trainer's progress unit, extras
    build = SimpleNamespace(loss_entry=entry, trainer=SimpleNamespace(progress_unit="env_steps"), extras={})
    writer = RunWriter(tmp_path, build, resume=True)  # resume: no recipe/version files needed here
    writer.log(100, 1.0, {"train/gradient_steps": 0.0})  # warm-up row: no loss yet
    writer.log(200, 2.0, {"loss/loss_critic": 0.5, "loss/q_mean": 1.5, "train/gradient_steps": 100.0})
    writer.log(300, 3.0, {"loss/loss_critic": 0.4, "train/alpha": 0.2})  # a metric never seen before
    with (tmp_path / "metrics.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["env_steps"] for r in rows] == ["100", "200", "300"]
    assert rows[0]["loss/loss_critic"] == "" and rows[1]["loss/loss_critic"] == "0.5"
    assert rows[0]["train/alpha"] == "" and rows[2]["train/alpha"] == "0.2"
    assert not (tmp_path / "metrics.csv.tmp").exists()
