"""The third-party example plugin (examples/rlplug-reinforce) installs, shows up, trains and uninstalls.

It is installed with pip into a fresh virtual environment, the way a user installs a plugin, so the
test exercises entry-point discovery for real: nothing in this process imports the example. The new
environment sees the current one's packages (rlplug, torch, skrl, pip, setuptools) through a ``.pth``
file, so nothing is downloaded and the build runs offline (``--no-build-isolation --no-index``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import math
import os
import shutil
import site
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "rlplug-reinforce"
BUDGET_S = 150  # the whole test; about 10 s on an idle 2-core machine, under 90 s on a busy one
BUILD_ARTEFACTS = ("build", "dist", "*.egg-info", "__pycache__")

pytestmark = [pytest.mark.slow]
if importlib.util.find_spec("pytest_timeout") is not None:
    pytestmark.append(pytest.mark.timeout(BUDGET_S + 30))


def _installed_here(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


class Venv:
    """A throwaway virtual environment layered over the current interpreter's site-packages."""

    def __init__(self, root: Path, deadline: float) -> None:
        self.root = root
        self.deadline = deadline
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        self.env.update(
            PIP_CONFIG_FILE=os.devnull,  # no index URLs or find-links from the user's pip configuration
            PIP_NO_INPUT="1",
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            PIP_ROOT_USER_ACTION="ignore",
            OMP_NUM_THREADS="1",
        )
        # --without-pip: ensurepip costs seconds; the current environment's pip is visible through the .pth
        self.run(sys.executable, "-m", "venv", "--without-pip", str(root))
        self.python = str(root / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
        purelib = Path(self.run(self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
        # addsitedir (not a bare path line) also processes the .pth files there: editable installs of
        # rlplug and the first-party plugins are .pth files
        lines = [f"import site; site.addsitedir({path!r})" for path in site.getsitepackages()]
        (purelib / "_rlplug_test_parent_env.pth").write_text("\n".join(lines) + "\n")

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            pytest.fail(f"over the test's {BUDGET_S} s budget before running {' '.join(argv[:4])}")
        result = subprocess.run(
            argv, cwd=self.root.parent, env=self.env, capture_output=True, text=True, timeout=remaining
        )
        if check and result.returncode != 0:
            pytest.fail(f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
        return result

    def rlplug(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(self.python, "-m", "rlplug.cli", *args, check=check)

    def pip(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.python, "-m", "pip", *args)


def _listed(venv: Venv) -> list[dict]:
    return json.loads(venv.rlplug("list", "--json").stdout)


def _tree(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def test_example_plugin_installs_trains_and_uninstalls(tmp_path: Path) -> None:
    for module in ("pip", "setuptools"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"installing the example needs {module} in the test environment")
    if _installed_here("rlplug-reinforce"):
        pytest.skip("rlplug-reinforce is installed in the test environment itself; uninstalling it from the "
                    "throwaway environment could not hide it")
    deadline = time.monotonic() + BUDGET_S
    example_before = _tree(EXAMPLE)
    # setuptools writes build/ and *.egg-info next to the sources: build a copy, never the repository
    source = tmp_path / "rlplug-reinforce"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns(*BUILD_ARTEFACTS))
    venv = Venv(tmp_path / "venv", deadline)

    assert not any(row["algorithm"] == "reinforce" for row in _listed(venv))

    venv.pip("install", "--no-deps", "--no-build-isolation", "--no-index", str(source))

    rows = [row for row in _listed(venv) if row["algorithm"] == "reinforce"]
    assert rows == [
        {
            "algorithm": "reinforce",
            "backend": "skrl",
            "kind": "on-policy",
            "action_spaces": ["discrete"],
            "plugin": "rlplug-reinforce",
            "version": "0.1.0",
            "status": "ok",
        }
    ]
    recipes = {r["name"]: r for r in json.loads(venv.rlplug("recipes", "--json").stdout)}
    assert recipes["reinforce-cartpole"]["source"] == "plugin rlplug-reinforce"
    assert recipes["reinforce-cartpole"]["backends"] == ["skrl"]

    summary = json.loads(venv.rlplug("train", "reinforce-cartpole", "--steps", "500", "--no-write", "--json").stdout)
    assert summary["recipe"] == "reinforce-cartpole@1"
    assert (summary["algorithm"], summary["backend"], summary["env"]) == ("reinforce", "skrl", "CartPole-v1")
    # one iteration ends when its episodes do, so the budget is met or passed by less than an episode per env
    assert 500 <= summary["steps"] < 500 + 8 * 500
    assert summary["eval_episodes"] == 10
    assert math.isfinite(summary["eval_return_mean"]) and summary["eval_return_mean"] >= 1.0
    assert summary["target"] == 400.0
    assert summary["run_dir"] is None

    # the conformance kit, as the example's own test suite would call it
    kit = venv.run(venv.python, "-c", "from rlplug.testing import check_cell; "
                   "print(check_cell('reinforce-cartpole', 'skrl', ['num_envs=2'], steps=300))")
    assert "resume equivalence" in kit.stdout, kit.stdout

    venv.pip("uninstall", "-y", "rlplug-reinforce")

    assert not any(row["algorithm"] == "reinforce" for row in _listed(venv))
    gone = venv.rlplug("train", "reinforce-cartpole", "--no-write", check=False)
    assert gone.returncode == 2
    assert "unknown recipe 'reinforce-cartpole'" in gone.stderr
    assert _tree(EXAMPLE) == example_before, "installing the example wrote into the repository"
