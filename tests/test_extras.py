"""`rlplug doctor` reports every optional extra from installed metadata, without importing it."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

import rlplug.cli.pins
from rlplug.cli.extras import EXTRAS
from rlplug.cli.pins import extra_ranges, install_command, off_pins, outside_ranges, pins

CONSTRAINTS = Path(__file__).resolve().parents[1] / "constraints.txt"


@pytest.fixture
def checkout(monkeypatch):
    """rlplug as a source checkout sees it: CI installs a wheel, which carries no constraints.txt (``None`` there)."""
    monkeypatch.setattr(rlplug.cli.pins, "constraints_path", lambda: CONSTRAINTS)
    return CONSTRAINTS

EXTRA_MODULES = ("onnx", "onnxruntime", "optuna", "mlflow", "wandb", "moviepy", "hydra", "ray", "rl_zoo3", "envpool", "minari", "h5py")


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
    extras = out.split("optional extras:\n", 1)[1].split("tested versions:", 1)[0].splitlines()
    assert [line.split()[0] for line in extras] == [extra.name for extra in EXTRAS]
    assert {extra.name for extra in EXTRAS} == {"onnx", "tune", "mlflow", "wandb", "video", "hydra", "ray", "zoo", "envpool", "minari"}
    by_name = {line.split()[0]: line.strip() for line in extras}
    assert by_name["tune"] == "tune        installed (optuna 5.0.0); for rlplug tune"
    assert by_name["wandb"].startswith("wandb       installed (wandb 0.31.0)")
    assert by_name["video"] == f"video       not installed (moviepy missing): {install_command('video')}; for rlplug eval --video"
    assert by_name["onnx"].startswith(f"onnx        not installed (onnxruntime missing): {install_command('onnx')}")


# ---- versions off the tested set (constraints.txt, the extras' ranges) ----------------------------


def test_a_checkout_installs_extras_with_its_constraints(checkout, monkeypatch):
    assert install_command("video") == f"pip install -c {checkout} 'rlplug[video]'"
    monkeypatch.setattr(rlplug.cli.pins, "constraints_path", lambda: None)  # an installed wheel
    assert install_command("video") == "pip install 'rlplug[video]'"


def test_a_distribution_off_its_pin_is_flagged_with_the_fix():
    pinned = pins("# the tested set\nmoviepy==1.0.3  # video\ntorch==2.13.0\npillow==13.0.0\n\n")
    assert pinned == {"moviepy": "1.0.3", "torch": "2.13.0", "pillow": "13.0.0"}
    found = {"moviepy": "2.2.1", "torch": "2.13.0+cpu", "pillow": "13.0.0"}  # a local label is the pinned release
    assert off_pins(pinned, "/x/constraints.txt", found.get) == [
        "moviepy 2.2.1 is off constraints.txt (1.0.3): pip install -c /x/constraints.txt 'moviepy==1.0.3'"]


def test_a_distribution_outside_its_extras_range_is_flagged():
    ranges = extra_ranges()
    assert ("video", "moviepy", "<2,>=1.0.3") in ranges  # from rlplug's own metadata
    found = {"moviepy": "2.2.1", "optuna": "5.0.0"}.get
    assert outside_ranges(ranges, "/x/constraints.txt", found) == [
        "moviepy 2.2.1 is outside rlplug[video]'s range <2,>=1.0.3: pip install -c /x/constraints.txt 'rlplug[video]'"]
    assert outside_ranges(ranges, None, found) == ["moviepy 2.2.1 is outside rlplug[video]'s range <2,>=1.0.3: pip install 'moviepy<2,>=1.0.3'"]


def test_doctor_says_which_installed_versions_are_off_the_tested_set(checkout, monkeypatch, capsys):
    from rlplug.cli import main

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "2.2.1" if name == "moviepy" else real(name))
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    tested = out.split("tested versions:\n", 1)[1].split("plugins:", 1)[0].strip().splitlines()
    # off its pin and outside the video extra's range: one line, the pin's (the range's would say it again)
    assert [line.strip() for line in tested] == [
        f"moviepy 2.2.1 is off constraints.txt (1.0.3): pip install -c {checkout} 'moviepy==1.0.3'"]
    assert "video       installed (moviepy 2.2.1), moviepy 2.2.1 off the tested versions (below)" in out
