"""The plugin author's guide ships with the package and names every declared public name."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from rlplug.guide import guide_text

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
