"""The plugin author's guide ships with the package and names every declared public name."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rlplug.cli.guide import examples_path, guide_text

REPO = Path(__file__).resolve().parents[1]
SOURCE_TREE = re.compile(r"(?<![\w/.-])(?:tests|examples|benchmarks|docs|plugins)/[\w./-]*|\b[A-Z]+\.md\b")
"""Paths of the source repository, which an installed rlplug does not have."""

DECLARED = ("rlplug", "rlplug.families", "rlplug.backends.skrl", "rlplug.backends.torchrl")


def test_rlplug_guide_prints_the_plugin_guide():
    done = subprocess.run([sys.executable, "-m", "rlplug.cli", "guide"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Writing an rlplug plugin")
    assert "## 4. The `Trainer` contract" in done.stdout


@pytest.mark.parametrize("module", DECLARED)
def test_the_guide_names_every_declared_name(module):
    if module.startswith("rlplug.backends."):
        pytest.importorskip(module.rsplit(".", 1)[1])
    text = guide_text()
    missing = [name for name in importlib.import_module(module).__all__ if f"`{name}`" not in text]
    assert not missing, f"docs/plugins.md does not describe {module}: {', '.join(missing)}"


def test_the_guide_points_only_at_what_an_installed_rlplug_has(capsys):
    from rlplug.cli import main

    text = guide_text()
    assert not SOURCE_TREE.findall(text), "the guide names files of the source repository"
    assert main(["guide", "--examples"]) == 0
    shipped = Path(capsys.readouterr().out.strip())
    assert shipped == examples_path()
    for example in ("rlplug-a2c", "minimal_plugin.py"):  # the examples the guide names, in the folder it names
        assert f"`{example}`" in text or f"/{example}\"" in text
        assert (shipped / example).exists()
    assert (shipped / "rlplug-a2c" / "pyproject.toml").is_file()
    wheel = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["force-include"]["examples"] == "rlplug/examples"  # where examples_path looks when installed
