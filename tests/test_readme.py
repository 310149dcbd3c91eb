"""The README as a new user follows it: its two commands as written (CI runs the test command), a landing page
whose algorithm table, plugin example and links match the repository; the Python examples it and the
documentation's Python page show run."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
TRAIN = ("python3.11 -m venv .venv && source .venv/bin/activate && pip install -c constraints.txt -r requirements.txt "
         "&& rlplug train ppo-cartpole")
TEST = ("python3.11 -m venv .venv && source .venv/bin/activate && pip install -q -c constraints.txt -r "
        "requirements-test.txt && pytest")


def section(title: str, text: str = README) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_ci_runs_the_readme_test_command_as_written():
    install, test = blocks(section("Two commands"), "bash")
    assert "source .venv/bin/activate" in install  # the commands after it call a bare `rlplug`
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test.strip() in ci


def test_the_two_commands_are_unchanged_in_the_readme_and_the_getting_started_page():
    getting_started = (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
    for text in (README, getting_started):
        assert [b.strip() for b in blocks(section("Two commands", text), "bash")] == [TRAIN, TEST]


def test_the_readme_is_a_landing_page():
    assert len(README.splitlines()) <= 250


def test_the_readme_algorithm_table_lists_every_first_party_algorithm():
    from rlplug.pipeline.session import Session

    dists = {tomllib.loads(p.read_text())["project"]["name"] for p in REPO.glob("plugins/*/pyproject.toml")}
    specs = {n: s for n, s in Session().host.algorithms.items() if s.plugin in dists}
    rows = {}
    for line in section("Algorithms").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0].startswith("["):
            rows[cells[0][1:].partition("]")[0]] = cells[1:]
    expected = {name: ["yes" if "skrl" in s.backends else "-", "yes" if "torchrl" in s.backends else "-", s.kind,
                       f"`{s.plugin}`"] for name, s in specs.items()}
    got = {name: cells[:3] + cells[4:] for name, cells in rows.items()}
    missing = {n: e for n, e in expected.items() if got.get(n) != e}
    assert not missing, ("README.md's Algorithms table is missing or mis-states these rows (algorithm: skrl, TorchRL, "
                         f"kind, plugin): {missing}")
    assert set(got) <= set(expected), f"README.md lists algorithms no first-party plugin declares: {set(got) - set(expected)}"


def test_the_readme_plugin_is_the_example_file():
    shown = blocks(section("A plugin in 30 lines"), "python")[0]
    example = (REPO / "examples" / "minimal_plugin.py").read_text(encoding="utf-8")
    assert shown == example.split('"""', 2)[2].lstrip("\n")  # the file, less its docstring


def test_the_readme_links_point_at_files_of_the_repository():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    assert links
    missing = [link for link in links if "://" not in link and not (REPO / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def run_example(example: str, small: dict[str, str], where: str, tmp_path, monkeypatch) -> dict:
    for written, tiny in small.items():  # the example's step budgets, made tiny: everything else runs as written
        assert example.count(written) == 1, f"{where} no longer has {written}"
        example = example.replace(written, tiny)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(example, where, "exec"), namespace)
    return namespace


def test_the_python_page_example_runs(tmp_path, monkeypatch):
    text = (REPO / "docs" / "python.md").read_text(encoding="utf-8")
    example = blocks(text, "python")[0]  # the second is the skrl-trainer script (test_skrl_trainers)
    namespace = run_example(example, {
        "build.trainer.train(20_000)": "build.trainer.train(64)",
        '"steps=50_000"': '"steps=64", "rollout_steps=16", "epochs=1", "minibatches=1", "eval_episodes=1"',
    }, "docs/python.md#python", tmp_path, monkeypatch)
    assert (tmp_path / "ppo.pt").is_file() and (tmp_path / "runs" / "pendulum" / "summary.json").is_file()
    assert namespace["summary"]["steps"] >= 64


def test_the_readme_python_example_runs(tmp_path, monkeypatch):
    example = blocks(section("A short tour"), "python")[0]
    run_example(example, {"build.trainer.train(20_000)": "build.trainer.train(64)"}, "README.md#python", tmp_path,
                monkeypatch)
    assert (tmp_path / "ppo.pt").is_file()
