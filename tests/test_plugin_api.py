"""The declared plugin API: first-party plugins and the example import only names that ``rlplug``,
``rlplug.families`` and the two backend packages list in ``__all__``, and no public name means two things."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DECLARED = ("rlplug", "rlplug.families", "rlplug.backends.skrl", "rlplug.backends.torchrl")


def _rlplug_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) for every import of an rlplug module in ``path`` (name None: ``import x``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rlplug":
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names if a.name.split(".")[0] == "rlplug"]
    return found


def _plugin_sources() -> list[Path]:
    return sorted([*ROOT.glob("plugins/*/rlplug_*/*.py"), *ROOT.glob("examples/*/rlplug_*/*.py")])


def test_plugins_import_only_declared_names():
    pytest.importorskip("skrl")
    pytest.importorskip("torchrl")
    declared = {name: set(importlib.import_module(name).__all__) for name in DECLARED}
    sources = _plugin_sources()
    assert len(sources) >= 20, "the plugin sources were not found"
    wrong = []
    for path in sources:
        for line, module, name in _rlplug_imports(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            if name is None:
                if module != "rlplug":
                    wrong.append(f"{where}: import {module}")
            elif module not in declared:
                wrong.append(f"{where}: from {module} import {name} (not a declared module)")
            elif name not in declared[module]:
                wrong.append(f"{where}: {name} is not in {module}.__all__")
    assert not wrong, "\n".join(wrong)


def test_every_declared_name_exists_and_means_one_thing():
    pytest.importorskip("skrl")
    pytest.importorskip("torchrl")
    modules = {name: importlib.import_module(name) for name in DECLARED}
    owner: dict[str, tuple[str, object]] = {}
    clashes = []
    for module_name, module in modules.items():
        assert len(module.__all__) == len(set(module.__all__)), f"{module_name}.__all__ lists a name twice"
        for name in module.__all__:
            obj = getattr(module, name)  # AttributeError: a declared name that is not there
            if name in owner and owner[name][1] is not obj:
                clashes.append(f"{name}: {owner[name][0]} and {module_name} define it differently")
            owner.setdefault(name, (module_name, obj))
    assert not clashes, "\n".join(clashes)


def test_families_and_core_declarations_stay_torch_free():
    code = "import sys, rlplug, rlplug.families; print(sorted(m for m in ('torch', 'skrl', 'torchrl', 'tensordict') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_import_checker_sees_a_forbidden_import(tmp_path):
    source = tmp_path / "backend.py"
    source.write_text("from rlplug.contract.trainer import TrainerBase\nimport rlplug.backends.skrl.env\nfrom rlplug import Build\n")
    assert _rlplug_imports(source) == [
        (1, "rlplug.contract.trainer", "TrainerBase"),
        (2, "rlplug.backends.skrl.env", None),
        (3, "rlplug", "Build"),
    ]
