"""Your own environment beside you (issue 53): `env = "module:Id"` and `--env-module` find a module in the current
directory as `python -m` would, with the `rlplug` console script (whose own directory, not the current one, starts
``sys.path``), from a temporary directory; eval of the run from there finds it again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

SCRIPT = Path(sys.executable).parent / "rlplug"
ENV_FILE = Path(__file__).parent / "data" / "own_env" / "point_env.py"
SMALL = ["--steps", "64", "--no-progress", "--json", "--set", "learning_starts=32", "--set", "batch_size=16",
         "--set", "hidden_sizes=[16, 16]", "--set", "eval_episodes=1"]

pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="the rlplug console script is not installed beside python")


def rlplug(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing on the path but what is installed
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd, env={**env, "OMP_NUM_THREADS": "1"},
                          timeout=300)


@pytest.fixture
def here(tmp_path):
    shutil.copy(ENV_FILE, tmp_path / "point_env.py")
    return tmp_path


def test_an_env_module_in_the_current_directory_is_found(here):
    trained = rlplug("train", "sac-pendulum", "--set", "env=point_env:Point1D-v0", *SMALL, "--run-dir", "run", cwd=here)
    assert trained.returncode == 0, trained.stderr
    assert json.loads(trained.stdout)["steps"] == 64
    evaluated = rlplug("eval", "run", "--episodes", "1", "--json", cwd=here)  # the run's recorded module, from here again
    assert evaluated.returncode == 0, evaluated.stderr


def test_an_env_module_in_no_directory_says_where_to_put_it(here):
    refused = rlplug("train", "sac-pendulum", "--set", "env=Point1D-v0", "--env-module", "not_here_env", *SMALL, "--no-write", cwd=here)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert ("module 'not_here_env' cannot be imported (ModuleNotFoundError: No module named 'not_here_env'); install it, "
            "run rlplug in the directory that holds it, or put that directory on PYTHONPATH") in refused.stderr


def test_the_env_module_option_finds_it_as_well(here, monkeypatch):
    from rlplug.envs.spec import import_env_module

    monkeypatch.chdir(here)  # in this process the current directory is not on sys.path (pytest's rootdir and tests/ are)
    try:
        import_env_module("point_env", "Point1D-v0")
        import gymnasium as gym

        assert "Point1D-v0" in gym.registry
    finally:
        if str(here) in sys.path:
            sys.path.remove(str(here))
        sys.modules.pop("point_env", None)
        gym.registry.pop("Point1D-v0", None)


def test_the_guide_and_the_docs_say_how():
    from rlplug.cli.guide import guide_text

    section = guide_text().split("## 10. Your own environment", 1)[1]
    assert "--env-module" in section and "current directory" in section
    page = (Path(__file__).parents[1] / "docs" / "own-env.md").read_text()
    assert page.startswith("# Your own environment") and "env=point_env:Point1D-v0" in page
    assert ENV_FILE.read_text().split("class Point1D")[1].split("def reset")[0].strip().splitlines()[-1] in page
