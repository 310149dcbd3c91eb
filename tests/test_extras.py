"""`rlplug doctor` reports every optional extra from installed metadata, without importing it."""

from __future__ import annotations

import importlib.metadata
import sys

from rlplug.cli.extras import EXTRAS

EXTRA_MODULES = ("onnx", "onnxruntime", "optuna", "mlflow", "wandb", "moviepy", "hydra", "ray", "rl_zoo3")


def test_doctor_reports_each_optional_extra_without_importing_it(monkeypatch, capsys):
    from rlplug.cli import main

    for module in EXTRA_MODULES:  # an import of any of them now raises: doctor must read metadata only
        monkeypatch.setitem(sys.modules, module, None)
    real = importlib.metadata.version

    def version(name: str) -> str:
        if name in ("moviepy", "onnxruntime"):
            raise importlib.metadata.PackageNotFoundError(name)
        return {"optuna": "5.0.0", "wandb": "0.31.0"}.get(name) or real(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    extras = out.split("optional extras:\n", 1)[1].split("plugins:", 1)[0].splitlines()
    assert [line.split()[0] for line in extras] == [extra.name for extra in EXTRAS]
    assert {extra.name for extra in EXTRAS} == {"onnx", "tune", "mlflow", "wandb", "video", "hydra", "ray", "zoo"}
    by_name = {line.split()[0]: line.strip() for line in extras}
    assert by_name["tune"] == "tune        installed (optuna 5.0.0); for rlplug tune"
    assert by_name["wandb"].startswith("wandb       installed (wandb 0.31.0)")
    assert by_name["video"] == "video       not installed (moviepy missing): pip install 'rlplug[video]'; for rlplug eval --video"
    assert by_name["onnx"].startswith("onnx        not installed (onnxruntime missing): pip install 'rlplug[onnx]'")
