"""First-party plugins use only public names across package boundaries: no import of another package's
underscore name, and no read, write or override of an underscore attribute that rlplug's core, skrl,
TorchRL, tensordict or another plugin defines, except the short allow-list below, each entry with the
reason upstream leaves no public name. A plugin's own private names are its own business.

"Defines" is read from the sources: ``def _x``, ``class _X``, ``self._x = ...`` / ``cls._x = ...`` and
``_x = ...`` in a class or module body. A plugin module is checked against the packages it imports
(``skrl``, ``torchrl``, ``tensordict``, ``rlplug``, another ``rlplug_*``), so a name that only an
unrelated library happens to define is not held against it. Strings naming checkpointed attributes
(``checkpointed = ("_exploration_noise.state", ...)``) count as reads.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ("skrl", "torchrl", "tensordict")

ALLOWED: dict[tuple[str, str], str] = {
    ("rlplug_sac", "_entropy_coefficient"): "skrl's SAC keeps alpha only under this name; "
    "LossDelegatingSAC.entropy_coefficient is its public name (the one read and write)",
    ("rlplug_sac", "_target_entropy"): "skrl's SAC keeps its entropy target only here; LossDelegatingSAC.target_entropy reads it",
    ("rlplug_sac", "_version"): "TorchRL's SACLoss records whether it has a state-value network (v1) only as _version; "
    "the lean forward serves v2 and hands v1 to upstream",
    ("rlplug_td3", "_exploration_noise"): "skrl's TD3 and DDPG hold their exploration noise only privately, "
    "and its Ornstein-Uhlenbeck state must be checkpointed",
    ("rlplug_cql", "_get_policy_actions"): "BatchedCQLLoss overrides TorchRL's CQLLoss.cql_loss and calls the helpers "
    "upstream's own cql_loss calls, which TorchRL names privately",
    ("rlplug_cql", "_vmap_qvalue_network00"): "as _get_policy_actions: upstream's cql_loss helper",
    ("rlplug_cql", "_reduce_loss"): "as _get_policy_actions: upstream's cql_loss helper",
    ("rlplug_cql", "_clear_weakrefs"): "as _get_policy_actions: upstream's cql_loss helper",
    ("rlplug_ppo", "_log_weight"): "TorchRL's ClipPPOLoss computes the importance weights and KL in this method, "
    "the one place a subclass changes them (TorchRL's own subclasses override it)",
    ("rlplug_ppo", "_critic_loss_inputs"): "TorchRL's ClipPPOLoss computes the value targets in this method, "
    "the hook TorchRL's own MAPPOLoss overrides (value clipping's variants override it here)",
    ("rlplug_mappo", "_current_next_observations"): "skrl's MAPPO keeps the rollout's last next observations only "
    "under this name, and the update bootstraps from them",
    ("rlplug_mappo", "_current_next_states"): "as _current_next_observations",
}
"""(plugin package, name) -> why the plugin may touch that private name of another package."""

DEFINES = re.compile(
    r"\b(?:self|cls)\.(_[A-Za-z]\w*)\s*(?::[^=\n]*)?=(?!=)"  # self._x = / self._x: T =
    r"|^\s*(?:async\s+)?def\s+(_[A-Za-z]\w*)"
    r"|^\s*class\s+(_[A-Za-z]\w*)"
    r"|^\s*(_[A-Za-z]\w*)\s*(?::[^=\n]*)?=(?!=)",  # a module or class body's _x =
    re.M,
)


def defined_names(root: Path) -> frozenset[str]:
    """The private (not dunder) names the Python sources under ``root`` define."""
    names = set()
    for path in root.rglob("*.py"):
        for match in DEFINES.finditer(path.read_text(encoding="utf-8", errors="ignore")):
            name = next(group for group in match.groups() if group)
            if not name.startswith("__"):
                names.add(name)
    return frozenset(names)


@cache
def package_names(package: str) -> frozenset[str]:
    """The private names the importable package ``package`` (or a plugin's folder) defines."""
    local = {p.name: p for p in ROOT.glob("plugins/*/rlplug_*")}
    if package in local:
        return defined_names(local[package])
    if package == "rlplug":
        return defined_names(ROOT / "core" / "rlplug")
    spec = importlib.util.find_spec(package)
    return defined_names(Path(spec.origin).parent) if spec and spec.origin else frozenset()


def imported_packages(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.partition(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
    return found


def private_uses(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, name, how) for every private attribute or checkpointed path ``tree`` touches, and every private
    name it imports from elsewhere (``how`` then names the module)."""
    uses = []
    methods = {
        id(item) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
        for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
    }  # a module-level helper of the plugin's is its own, whatever its name
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            uses += [(node.lineno, a.name, f"import:{node.module}") for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            uses.append((node.lineno, node.attr, "attribute"))
        elif id(node) in methods and node.name.startswith("_") and not node.name.startswith("__"):
            uses.append((node.lineno, node.name, "method"))
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "checkpointed" for t in node.targets):
            for item in ast.walk(node.value):
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    uses += [(node.lineno, part, "checkpointed") for part in item.value.split(".") if part.startswith("_")]
    return uses


def violations(package_dir: Path) -> list[str]:
    """What ``package_dir`` (a plugin's import package) reaches into, less the allow-list."""
    own = package_names(package_dir.name)
    found = []
    for path in sorted(package_dir.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        packages = imported_packages(tree) - {package_dir.name}
        foreign = {p: package_names(p) for p in packages if p in (*UPSTREAM, "rlplug") or p.startswith("rlplug_")}
        for line, name, how in private_uses(tree):
            if how.startswith("import:"):
                module = how.partition(":")[2]
                owners = [] if module.partition(".")[0] == package_dir.name else [module]
            elif how == "method":
                owners = [p for p, names in foreign.items() if name in names and not p.startswith("rlplug_")]
            else:
                # another plugin's private only when this plugin does not define the name itself; an
                # upstream or core private also when it does (it overrides or shadows theirs)
                owners = [p for p, names in foreign.items() if name in names and not (p.startswith("rlplug_") and name in own)]
            if owners and (package_dir.name, name) not in ALLOWED:
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                found.append(f"{where}:{line}: {name} ({how}; defined by {', '.join(sorted(owners))})")
    return found


def plugin_packages() -> list[Path]:
    return sorted(ROOT.glob("plugins/*/rlplug_*"))


def test_first_party_plugins_use_no_other_package_s_private_names():
    for package in UPSTREAM:
        pytest.importorskip(package)
    packages = plugin_packages()
    assert len(packages) >= 9, "the plugin packages were not found"
    found = [line for package in packages for line in violations(package)]
    assert not found, "private names of another package:\n" + "\n".join(found)


def test_the_allow_list_names_only_what_a_plugin_still_uses():
    """An entry a plugin no longer needs goes: the list stays the exceptions that exist."""
    pytest.importorskip("skrl"), pytest.importorskip("torchrl")
    used = set()
    for package in plugin_packages():
        for path in package.glob("*.py"):
            used |= {(package.name, name) for _, name, _ in private_uses(ast.parse(path.read_text(encoding="utf-8")))}
    assert not set(ALLOWED) - used, f"allow-list entries no plugin uses: {sorted(set(ALLOWED) - used)}"


def test_the_scan_sees_each_kind_of_reach(tmp_path):
    pytest.importorskip("skrl")
    package = tmp_path / "rlplug_probe"
    package.mkdir()
    (package / "skrl_backend.py").write_text(
        "from skrl.agents.torch.sac import SAC\n"
        "from rlplug.backends.skrl.staged import _private_helper\n"
        "class Probe(SAC):\n"
        "    checkpointed = ('_exploration_noise.state', 'own_value')\n"
        "    def _empty_preprocessor(self, timestep, timesteps):\n"  # overrides skrl's private method
        "        self._own = 1\n"
        "        return self._entropy_coefficient * self._own\n",
        encoding="utf-8",
    )
    found = violations(package)
    assert any("_private_helper (import:rlplug.backends.skrl.staged" in line for line in found), found
    assert any("_exploration_noise (checkpointed" in line for line in found), found
    assert any("_empty_preprocessor (method" in line for line in found), found
    assert any("_entropy_coefficient (attribute" in line for line in found), found
    assert not any(" _own " in line for line in found), found
