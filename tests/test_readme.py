"""The README as a new user follows it: CI runs its test command as written, and its Python example runs."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_ci_runs_the_readme_test_command_as_written():
    install, test = blocks(section("Two commands"), "bash")
    assert "source .venv/bin/activate" in install  # the commands after it call a bare `rlplug`
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test.strip() in ci


def test_the_readme_python_example_runs(tmp_path, monkeypatch):
    example = blocks(section("Python"), "python")[0]  # the second is the skrl-trainer script (test_skrl_trainers)
    small = {  # the example's step budgets, made tiny: everything else runs as written
        "build.trainer.train(20_000)": "build.trainer.train(64)",
        '"steps=50_000"': '"steps=64", "rollout_steps=16", "epochs=1", "minibatches=1", "eval_episodes=1"',
    }
    for written, tiny in small.items():
        assert example.count(written) == 1, f"the README's Python example no longer has {written}"
        example = example.replace(written, tiny)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(example, "README.md#python", "exec"), namespace)
    assert (tmp_path / "ppo.pt").is_file() and (tmp_path / "runs" / "pendulum" / "summary.json").is_file()
    assert namespace["summary"]["steps"] >= 64
