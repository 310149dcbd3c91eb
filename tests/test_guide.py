"""The plugin author's guide ships with the package, names every declared public name, its walkthroughs
run as printed, and its tables of the family bases name only what the bases have."""

from __future__ import annotations

import ast
import importlib
import inspect
import keyword
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

import rlplug
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
    for example in ("my-a2c", "minimal_plugin.py"):  # the examples the guide names, in the folder it names
        assert f"`{example}`" in text or f"/{example}\"" in text
        assert (shipped / example).exists()
    assert (shipped / "my-a2c" / "pyproject.toml").is_file()
    wheel = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["force-include"]["examples"] == "rlplug/examples"  # where examples_path looks when installed


# ---- the walkthroughs (§7): their files, as printed, are real cells that pass the conformance kit ------

WALKTHROUGH_FILE = re.compile(r"```python\n(# (\w+)/(\w+)\.py\n.*?)```", re.S)
"""A code block that opens with a `# <package>/<module>.py` line is a whole file of a walkthrough."""
WALKTHROUGH_PACKAGES = ("my_ddpg", "my_ddpgbc", "my_redq", "my_huber")


def walkthrough_files() -> dict[str, str]:
    files: dict[str, str] = {}
    for text, package, module in WALKTHROUGH_FILE.findall(guide_text()):
        path = f"{package}/{module}.py"
        assert path not in files, f"the guide prints {path} twice"
        files[path] = text
    return files


@pytest.fixture(scope="module")
def walkthroughs(tmp_path_factory):
    """The walkthroughs' packages written out as the guide prints them, importable for the module's tests."""
    root = tmp_path_factory.mktemp("walkthroughs")
    for path, text in walkthrough_files().items():
        (root / path).parent.mkdir(exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    sys.path.insert(0, str(root))
    yield root
    sys.path.remove(str(root))
    for name in [m for m in sys.modules if m.partition(".")[0] in WALKTHROUGH_PACKAGES]:
        del sys.modules[name]


def conformance_tests(name: str) -> str:
    """The §8 block that defines the test function ``name``."""
    found = [b for b in re.findall(r"```python\n(.*?)```", guide_text(), re.S) if f"def {name}(" in b]
    assert len(found) == 1, f"the guide has {len(found)} blocks defining {name}"
    return found[0]


def test_the_walkthroughs_print_every_file_of_their_plugins():
    modules = ("__init__", "skrl_backend", "torchrl_backend")
    assert set(walkthrough_files()) == {f"{p}/{m}.py" for p in WALKTHROUGH_PACKAGES for m in modules}


def test_the_walkthroughs_import_only_declared_names():
    """What a third-party plugin may import (§9), as the first-party plugins are held to (test_plugin_api)."""
    pytest.importorskip("skrl"), pytest.importorskip("torchrl")
    declared = {name: set(importlib.import_module(name).__all__) for name in DECLARED}
    wrong = []
    for path, text in walkthrough_files().items():
        for node in ast.walk(ast.parse(text, path)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").partition(".")[0] == "rlplug":
                wrong += [f"{path}: from {node.module} import {a.name}" for a in node.names
                          if a.name not in declared.get(node.module, ())]
    assert not wrong, "\n".join(wrong)

def test_the_off_policy_walkthrough_conforms_on_both_backends(walkthroughs):
    """The guide's own test of its DDPG runs as printed: check_cell on skrl and TorchRL (a few hundred steps)."""
    pytest.importorskip("skrl"), pytest.importorskip("torchrl")
    namespace: dict = {}
    exec(compile(conformance_tests("test_myddpg_conforms"), "plugins.md#test_myddpg_conforms", "exec"), namespace)
    namespace["test_myddpg_conforms"]()


def test_the_offline_walkthrough_conforms_on_both_backends(walkthroughs):
    """The guide's test of its DDPG+BC as printed: check_cell makes its own tiny random dataset (dataset="random")."""
    pytest.importorskip("skrl"), pytest.importorskip("torchrl")
    block = conformance_tests("test_myddpgbc_conforms")
    assert 'dataset="random"' in block, "the guide's offline test no longer makes its own dataset"
    namespace: dict = {}
    exec(compile(block, "plugins.md#test_myddpgbc_conforms", "exec"), namespace)
    namespace["test_myddpgbc_conforms"]()


def test_the_ensemble_walkthrough_conforms_on_both_backends(walkthroughs):
    """REDQ derived from rlplug-sac (N critics, a random M in each target), as printed: check_cell on both backends."""
    pytest.importorskip("skrl"), pytest.importorskip("torchrl")
    namespace: dict = {}
    exec(compile(conformance_tests("test_myredq_conforms"), "plugins.md#test_myredq_conforms", "exec"), namespace)
    namespace["test_myredq_conforms"]()


def test_the_huber_critic_conforms_and_is_huber(walkthroughs):
    """The Huber critic's loss, as printed, passes check_cell, and its critic term is the smooth L1 distance."""
    pytest.importorskip("skrl"), pytest.importorskip("torchrl")
    import torch
    import torch.nn.functional as F

    namespace: dict = {}
    exec(compile(conformance_tests("test_myhuber_conforms"), "plugins.md#test_myhuber_conforms", "exec"), namespace)
    namespace["test_myhuber_conforms"]()
    from my_huber import skrl_backend, torchrl_backend

    q, target = torch.tensor([[0.0], [3.0]]), torch.tensor([[0.5], [0.0]])
    assert skrl_backend.make_loss(None).critic_distance(q, target) == F.smooth_l1_loss(q, target) != F.mse_loss(q, target)
    build = rlplug.build("sac-pendulum", backend="torchrl", overrides=["hidden_sizes=[8]"])
    try:
        huber = torchrl_backend.make_loss(build).critic_distance(q, target)
        assert huber.tolist() == F.smooth_l1_loss(q, target, reduction="none").tolist()
    finally:
        build.trainer.close()


def test_the_derived_walkthroughs_are_short():
    """The issue-54 bar: an ensemble-critic algorithm on the bases in at most 40 code lines a backend, a Huber
    critic in under 10 (code lines as benchmarks/code_lines.py counts them: no docstrings, comments, blanks)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from code_lines import code_lines
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    files = walkthrough_files()
    for backend in ("skrl_backend", "torchrl_backend"):
        assert code_lines(files[f"my_redq/{backend}.py"]) <= 40
        assert code_lines(files[f"my_huber/{backend}.py"]) < 10


# ---- the family tables (§6): every member they name exists where they say --------------------------

FAMILY_HEAD = re.compile(r"^\| [\w-]+ \| skrl: `(\w+)` \| TorchRL: `(\w+)` \|$")
LIBRARY = ("skrl's ", "TorchRL's ")
"""A span right after these names a library's object, not rlplug's: not checked."""
ISSUE_28_NAMES = ("make_agent", "gradient_step", "extra_metrics", "extra_state", "make_exploration_policy",
                  "after_batch", "make_optimizers", "policy_module")
"""What the guide once left out (issue 28), under the bases' current names (`make_optimizer` became
`make_optimizers`, the exploration policy comes from `make_exploration_policy`)."""


def family_tables(text: str) -> list[tuple[str, str, list[list[str]]]]:
    """(skrl base, TorchRL base, rows of [label, skrl cell, TorchRL cell]) for each family table."""
    tables, lines = [], text.splitlines()
    for at, line in enumerate(lines):
        head = FAMILY_HEAD.match(line)
        if not head:
            continue
        rows = []
        for row in lines[at + 2:]:
            if not row.startswith("|"):
                break
            cells = [cell.strip() for cell in row.strip("|").split(" | ")]
            assert len(cells) == 3, f"a row of the {head.group(1)} table has {len(cells)} cells: {row}"
            rows.append(cells)
        tables.append((head.group(1), head.group(2), rows))
    return tables


def named(cell: str) -> list[str]:
    """The backticked spans of a cell that name rlplug's code (not values, not a library's objects)."""
    spans = []
    for match in re.finditer(r"`([^`]+)`", cell):
        name = re.match(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?", match.group(1))
        if name and not keyword.iskeyword(name.group().partition(".")[0]) and not cell[: match.start()].endswith(LIBRARY):
            spans.append(name.group())
    return spans


def defines(cls: type, member: str) -> bool:
    """``cls`` has ``member``: a class attribute, a method, or an attribute one of rlplug's classes in its
    MRO assigns (``self.member = ...``, also in a tuple assignment)."""
    if hasattr(cls, member):
        return True
    assigned = re.compile(rf"\bself\.{member}\b(?:\s*,\s*self\.\w+)*\s*(?::[^=\n]+)?=(?!=)")
    return any(
        assigned.search(inspect.getsource(k)) for k in cls.__mro__ if k.__module__.startswith("rlplug")
    )


def missing_member(span: str, base: type, package: Any) -> str | None:
    head, _, member = span.partition(".")
    if head[0].isupper():  # a class of the package, or one of its members
        owner = getattr(package, head, None) if head in package.__all__ else None
        if owner is None:
            return f"{head} is not a public name of {package.__name__}"
        return None if not member or defines(owner, member) else f"{head} has no {member}"
    if defines(base, head) or head in package.__all__:
        return None  # a member of the base (build.settings: its build), or a building block of the package
    if any(hasattr(sys.modules[k.__module__], head) for k in base.__mro__ if k.__module__.startswith("rlplug")):
        return None  # a private helper the base calls (the row says what the base does with it)
    return f"{base.__name__} has no {head}, nor does {package.__name__} export it, nor its module"


def test_the_family_tables_name_only_what_the_bases_have():
    pytest.importorskip("skrl"), pytest.importorskip("torchrl")
    packages = [importlib.import_module(f"rlplug.backends.{b}") for b in ("skrl", "torchrl")]
    tables = family_tables(guide_text())
    assert [skrl_base for skrl_base, _, _ in tables] == [
        "SkrlRolloutTrainer", "SkrlOffPolicyTrainer", "SkrlOfflineTrainer", "SkrlMultiAgentRolloutTrainer", "SkrlTeamOffPolicyTrainer"
    ]  # one table per family, on both backends
    problems, names = [], set()
    for skrl_base, torchrl_base, rows in tables:
        for label, *cells in rows:
            for package, base_name, cell in zip(packages, (skrl_base, torchrl_base), cells):
                base = getattr(package, base_name)
                for span in named(cell):
                    names.add(span.rpartition(".")[2])
                    problem = missing_member(span, base, package)
                    if problem:
                        problems.append(f"{base_name} table, row '{label}': `{span}`: {problem}")
    assert not problems, "\n".join(problems)
    assert not [name for name in ISSUE_28_NAMES if name not in names], "the family tables leave out a member a cell may need"
    assert not re.search(r"\bmake_optimizer\b", guide_text()), "the bases' hook is make_optimizers"
