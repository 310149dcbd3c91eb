"""The documentation site builds with warnings as errors (broken links and anchors included), and what it
generates at build time covers what the code declares: a page per first-party algorithm with every
hyperparameter, the catalogue with every recipe and its learning-curve pictures, the API reference with
every public name."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
API = {  # module -> its API reference page
    "rlplug": "api/rlplug",
    "rlplug.families": "api/families",
    "rlplug.backends.skrl": "api/backends-skrl",
    "rlplug.backends.torchrl": "api/backends-torchrl",
    "rlplug.hooks": "api/hooks",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """``mkdocs build --strict`` of the repository's mkdocs.yml, once for this module (a few seconds)."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's notice about MkDocs 2, on every build
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env=env)
    problems = [line for line in done.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert done.returncode == 0, "mkdocs build --strict failed:\n" + ("\n".join(problems) or done.stderr[-3000:])
    return out


def page(site: Path, path: str) -> str:
    return (site / path / "index.html").read_text(encoding="utf-8")


def first_party_algorithms() -> list:
    from rlplug.pipeline.session import Session

    dists = {tomllib.loads(p.read_text())["project"]["name"] for p in REPO.glob("plugins/*/pyproject.toml")}
    return [spec for spec in Session().host.algorithms.values() if spec.plugin in dists]


def declared_names(module: str) -> list[str]:
    """A module's ``__all__``, read from its source (the backend packages would import torch)."""
    path = REPO / "core" / Path(*module.split(".")) / "__init__.py"
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{module} has no __all__")


def test_every_first_party_algorithm_has_a_page_with_its_declaration(site):
    specs = first_party_algorithms()
    assert len(specs) >= 9
    index = page(site, "algorithms")
    for spec in specs:
        html = page(site, f"algorithms/{spec.name}")
        assert f'href="{spec.name}/"' in index, f"the algorithms index does not link {spec.name}"
        missing = [p.name for p in spec.params if f"<code>{p.name}</code>" not in html]
        assert not missing, f"algorithms/{spec.name}: hyperparameters not in its table: {missing}"
        for backend, bspec in spec.backends.items():
            assert f"<code>{bspec.module}</code>" in html
            assert f"<code>{spec.loss_for(backend)}</code> (default)" in html, f"{spec.name}/{backend}: default loss"


def test_a_hyperparameter_table_shows_the_declared_default(site):
    from rlplug.pipeline.session import Session

    sac = Session().host.algorithm("sac").param_map
    html = page(site, "algorithms/sac")
    row = re.search(r"<tr>\s*<td><code>tau</code></td>\s*<td><code>([^<]*)</code></td>", html)
    assert row and float(row.group(1)) == sac["tau"].default


def test_the_catalogue_has_every_recipe_and_each_existing_curve(site):
    from rlplug.pipeline.session import Session
    from rlplug.recipes.fields import file_stem

    html = page(site, "catalogue")
    names = Session().book.names()
    assert len(names) >= 27
    for name in names:
        assert f'id="{file_stem(name)}"' in html, f"the catalogue has no section for {name}"
        curve = REPO / "docs" / "curves" / f"{file_stem(name)}.png"
        if curve.is_file():
            assert f'src="../curves/{curve.name}"' in html, f"the catalogue does not show {curve.name}"
            assert (site / "curves" / curve.name).is_file()
    assert "ppo-cartpole: learning curves of both backends" in html
    assert "zoo-ppo-CartPole-v1" in html  # the Zoo pairs with seeded results follow the recipes


def test_the_api_reference_documents_every_public_name(site):
    for module, path in API.items():
        html = page(site, path)
        missing = [name for name in declared_names(module) if f'id="{module}.{name}"' not in html]
        assert not missing, f"{path}: no entry for {module}.{', '.join(missing)}"
    assert 'id="rlplug.testing.check_cell"' in page(site, "api/testing")


def test_the_benchmarks_page_is_benchmarks_md_with_its_pictures(site):
    html = page(site, "benchmarks")
    assert "rlplug benchmarks" in html and 'href="../curves/ppo-cartpole.png"' in html


def test_generated_pages_are_not_kept_in_the_source_tree():
    for generated in ("catalogue.md", "benchmarks.md", "benchmark-scripts.md", "algorithms"):
        assert not (REPO / "docs" / generated).exists(), f"docs/{generated} is generated at build time"
