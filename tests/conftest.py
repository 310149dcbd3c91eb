"""Shared fixtures: fake plugin distributions on a temporary path, and the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def write_fake_dist(root: Path, dist: str, version: str, entry_points: dict[str, str], modules: dict[str, str]) -> Path:
    """A real (metadata-only) installed distribution: ``importlib.metadata`` finds it on ``sys.path``."""
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = ["[rlplug.plugins]"] + [f"{k} = {v}" for k, v in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for filename, source in modules.items():
        (root / filename).write_text(textwrap.dedent(source))
    return root


@pytest.fixture
def fake_dist(tmp_path):
    def make(dist, version="1.0", entry_points=None, modules=None):
        return write_fake_dist(tmp_path / dist, dist, version, entry_points or {}, modules or {})

    return make


def run_cli(*args: str, paths: tuple[Path, ...] = (), cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), env.get("PYTHONPATH", "")]).strip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-m", "rlplug.cli", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
    )


def assert_one_line_error(result: subprocess.CompletedProcess, expected: str) -> None:
    """Exit code 2, exactly one line on stderr containing ``expected``, and no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert expected in lines[0], lines[0]
