"""MkDocs hooks (``mkdocs.yml``: ``hooks: [docs/gen_pages.py]``): the pages generated at build time.

The algorithm pages, the catalogue and the benchmark pages are written from the code and the stored
results on every build, never copied into ``docs/``, so they cannot drift from what rlplug declares:

* ``algorithms/<name>.md`` for every algorithm of an installed first-party plugin (a distribution under
  ``plugins/``): its declaration (kind, backends, action spaces), the entry module's docstring, the paper
  (``docs/papers.toml``), the hyperparameters with their defaults, domains and search ranges, the registered
  losses per backend with their optimised and reported terms, each backend module's docstring and the
  library classes it imports, and its recipes with their seeded results;
* ``catalogue.md``: every recipe of ``registry.toml`` (and of installed plugins) with its env, budget,
  target and the reference it is set from, both backends' seeded results from
  ``benchmarks/results/seeded.json``, and the learning-curve pictures in ``docs/curves/`` and
  ``docs/offline/``; then the RL Zoo pairs that have seeded results;
* ``benchmarks.md`` and ``benchmark-scripts.md``: ``BENCHMARKS.md`` and ``benchmarks/README.md`` as they
  are, their links made relative to the site.

Reading the declarations imports each plugin's entry module only (no torch), as ``rlplug list`` does. A
first-party plugin that is not installed, or a declaration that cannot be read, is a warning, which
``mkdocs build --strict`` turns into a failure.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import logging
import os
import re
import sys
import tomllib
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SEEDED = ROOT / "benchmarks" / "results" / "seeded.json"
LIBRARIES = ("torchrl", "skrl", "tensordict")  # imports named on an algorithm page as "the classes it uses"
ALGORITHMS_SECTION = "Algorithms"  # the nav section the algorithm pages are appended to

log = logging.getLogger("mkdocs.plugins.rlplug")


# ---- what the code and the results say ----------------------------------------------------------------


def first_party_distributions() -> dict[str, Path]:
    """Each ``plugins/<dir>``'s distribution name -> its folder (new plugins are picked up by being there)."""
    found = {}
    for pyproject in sorted(ROOT.glob("plugins/*/pyproject.toml")):
        name = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"]
        found[name] = pyproject.parent
    return found


@cache
def session() -> Any:
    from rlplug.pipeline.session import Session

    return Session()


@cache
def algorithms() -> tuple[Any, ...]:
    """The AlgorithmSpecs of the installed first-party plugins, by name; a missing or broken one is a warning."""
    host = session().host
    dists = first_party_distributions()
    seen = set()
    for record in host.records:
        if record.dist in dists:
            seen.add(record.dist)
            if record.status != "ok":
                log.warning(f"rlplug docs: plugin {record.dist} is {record.status}: {record.error}")
    for dist in sorted(set(dists) - seen):
        log.warning(f"rlplug docs: {dist} ({dists[dist].relative_to(ROOT)}) is not installed, so it has no algorithm "
                    f"page: pip install -e {dists[dist].relative_to(ROOT)}")
    return tuple(sorted((s for s in host.algorithms.values() if s.plugin in dists), key=lambda s: s.name))


@cache
def seeded_rows() -> dict[str, list[dict[str, Any]]]:
    """Seeded bench rows by recipe name (every version's), in the stored order."""
    rows = defaultdict(list)
    for row in json.loads(SEEDED.read_text(encoding="utf-8"))["rows"]:
        rows[row["recipe"].partition("@")[0]].append(row)
    return rows


@cache
def recipes() -> tuple[tuple[str, dict[str, Any], str], ...]:
    """(name, the newest version's table with its ``extends`` merged, where it is defined) for every recipe."""
    book = session().book
    out = []
    for name in book.names():
        try:
            table, entry = book.raw(name)
        except Exception as err:  # noqa: BLE001 - e.g. it extends a zoo: recipe and rl_zoo3 is not installed here
            out.append((name, {"description": f"(cannot be resolved here: {err})"}, ""))
            continue
        out.append((name, table, entry.source))
    return tuple(out)


def file_stem(name: str) -> str:
    from rlplug.recipes.fields import file_stem as stem

    return stem(name)


def pictures(name: str, depth: str) -> list[tuple[str, str]]:
    """(alt text, link) of the learning-curve pictures that exist for a recipe: both backends on one plot in
    ``docs/curves/``, and offline recipes' per-backend plots in ``docs/offline/``."""
    stem = file_stem(name)
    found = []
    if (DOCS / "curves" / f"{stem}.png").is_file():
        found.append((f"{name}: learning curves of both backends", f"{depth}curves/{stem}.png"))
    for path in sorted((DOCS / "offline").glob(f"{stem}-*.png")):
        backend = path.stem[len(stem) + 1:]
        found.append((f"{name} on {backend}: evaluation return against gradient updates", f"{depth}offline/{path.name}"))
    return found


@cache
def papers() -> dict[str, dict[str, Any]]:
    path = DOCS / "papers.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def module_source(module: str) -> tuple[str, ast.Module] | None:
    """A module's file and syntax tree, found without importing it (backend modules import torch)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return spec.origin, ast.parse(Path(spec.origin).read_text(encoding="utf-8"))


def imported_names(tree: ast.Module) -> dict[str, list[str]]:
    """``from X import a, b`` anywhere in a module (function-level imports too), by module X."""
    names: dict[str, list[str]] = defaultdict(list)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.name not in names[node.module]:
                    names[node.module].append(alias.name)
    return names


@cache
def public_names(package: str) -> frozenset[str]:
    """A backend package's ``__all__``, read from its source (importing it would import torch)."""
    found = module_source(package)
    if found is None:
        return frozenset()
    for node in found[1].body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return frozenset(ast.literal_eval(node.value))
    return frozenset()


# ---- markdown --------------------------------------------------------------------------------------------


def cell(value: Any) -> str:
    """A table cell: pipes escaped, newlines folded."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def code(value: Any) -> str:
    """A default as a recipe writes it (TOML-like: true, "name", [64, 64])."""
    text = repr(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else json.dumps(value)
    return f"`{text}`"


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def number(value: Any) -> str:
    """A result or a budget as a table shows it: thousands separated, whole floats without decimals."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def docstring(text: str | None) -> str:
    """A module docstring as Markdown, without its first line (the page says it as a title) and without the
    paragraph every entry module has on being cheap to import (true of all of them, news to no reader)."""
    if not text:
        return ""
    body = "\n".join(text.strip().splitlines()[1:]).strip()
    paragraphs = [p for p in re.split(r"\n\s*\n", body) if not p.startswith("This module is the plugin's entry point")]
    return "\n\n".join(paragraphs)


def first_line(text: str | None) -> str:
    return (text or "").strip().partition("\n")[0]


def results_rows(rows: list[dict[str, Any]], newest: int | None) -> list[str]:
    """The seeded rows of one recipe: per backend and version, seeds, values, mean ± std, interval, verdict."""
    if not rows:
        return ["No seeded results yet (`rlplug bench NAME --seeds 3` measures them).", ""]
    cells = []
    for row in sorted(rows, key=lambda r: (r["backend"], r["recipe"])):
        version = row["recipe"].partition("@")[2]
        old = f" (version {version})" if newest is not None and version and int(version) != newest else ""
        values = ", ".join(f"{seed}: {number(v)}" for seed, v in zip(row.get("seeds", []), row.get("metric_values", [])))
        ci = row.get("ci95") or []
        cells.append([
            row["backend"] + old,
            f"{number(row['steps'])} {row.get('step_unit', 'steps').replace('_', ' ')}",
            values,
            f"{number(row['mean'])} ± {number(row['std'])}" if row.get("std") is not None else number(row["mean"]),
            f"[{number(ci[0])}, {number(ci[1])}]" if len(ci) == 2 else "-",
            "-" if row.get("target") is None else f"≥ {number(row['target'])}",
            "yes" if row.get("passed") else "no",
            number(row.get("wall_seconds", "-")),
        ])
    metric = rows[0].get("target_metric", "return")
    metric = "normalised score" if metric == "normalised_score" else "evaluation return"
    return table(["backend", "budget", f"{metric} per seed (seed: value)", "mean ± std", "95 % CI", "target", "passed",
                  "wall s / seed"], cells)


# ---- pages -----------------------------------------------------------------------------------------------


def algorithm_page(spec: Any) -> str:
    host = session().host
    lines = [f"# {spec.name}: {spec.summary}", ""]
    lines += [f"*Generated from the declaration of `{spec.plugin}` {spec.plugin_version} (`rlplug list`, "
              f"`rlplug show`, `rlplug losses {spec.name}`) at build time.*", ""]
    lines += table(["kind", "plugin", "backends", "default loss"], [[
        spec.kind, f"`{spec.plugin}` {spec.plugin_version}", ", ".join(spec.backends),
        ", ".join(f"{b}: `{spec.loss_for(b)}`" for b in spec.backends)]])
    package = next(iter(spec.backends.values())).module.rpartition(".")[0]
    module = sys.modules.get(package)
    doc = getattr(module, "__doc__", None)
    lines += ["## What it is", "", f"**{first_line(doc) or spec.summary}**", ""]
    if docstring(doc):
        lines += [docstring(doc), ""]
    paper = papers().get(spec.name)
    lines += ["## Reference", ""]
    if paper:
        for ref in paper.get("papers", []):
            lines.append(f"* {ref['authors']}. *{ref['title']}*. {ref['venue']}. <{ref['url']}>")
        lines.append("")
    else:
        lines += [f"No paper is recorded for `{spec.name}` in `docs/papers.toml`.", ""]

    lines += ["## Backends", ""]
    lines += table(["backend", "action spaces", "module", "needs", "`--nproc`", "action masks"], [
        [b, ", ".join(bs.action_spaces), f"`{bs.module}`", f"`rlplug[{bs.extra}]`" if bs.extra else "-",
         "yes" if bs.distributed else "no", "yes" if bs.action_masks else "no"]
        for b, bs in spec.backends.items()])
    for backend, bspec in spec.backends.items():
        found = module_source(bspec.module)
        lines += [f"### {backend}", ""]
        if found is None:
            lines += [f"`{bspec.module}` cannot be found here.", ""]
            continue
        tree = found[1]
        doc = ast.get_docstring(tree)
        if first_line(doc):
            lines += [f"**{first_line(doc)}**", ""]
        if docstring(doc):
            lines += [docstring(doc), ""]
        imports = imported_names(tree)
        library = [(m, n) for m, n in sorted(imports.items()) if m.split(".")[0] in LIBRARIES]
        if library:
            lines += [f"What it uses from the libraries (the imports of `{bspec.module}`):", ""]
            lines += [f"* `{m}`: " + ", ".join(f"`{x}`" for x in n) for m, n in library]
            lines.append("")
        core = [(m, n) for m, n in sorted(imports.items()) if m.startswith("rlplug.backends.")]
        if core:
            lines += ["rlplug's building blocks it uses:", ""]
            for m, names in core:  # a name in the package's __all__ links to its API entry, any other is named
                shown = [f"[`{x}`][{m}.{x}]" if x in public_names(m) else f"`{x}`" for x in names]
                lines.append(f"* `{m}`: " + ", ".join(shown))
            lines.append("")

    lines += ["## Hyperparameters", "",
              "Backend-neutral: a recipe sets them under `[recipes.NAME.hyperparameters]`, `--set NAME=VALUE` on the "
              "command line; each backend's plugin translates them to that library's own settings "
              f"(`rlplug show RECIPE --backend B` prints both). Search: the range `rlplug tune` searches.", ""]
    lines += table(["name", "default", "domain", "search", "what it is"], [
        [f"`{p.name}`", code(p.default), p.domain_text or "-", p.search.text() if p.search else "-", p.doc]
        for p in spec.params])
    rules = spec.rules
    if rules:
        lines += ["Rules between them (checked before anything is built):", ""]
        lines += [f"* `{r.text}`" + (f": {r.why}" if r.why else "") for r in rules]
        lines.append("")

    lines += ["## Losses", "",
              "Registered through `rlplug_register_losses` like any user's; a recipe picks one with `loss = \"NAME\"`. "
              "Optimised terms are summed and stepped (by the optimiser named after them); reported terms are logged "
              "only.", ""]
    entries = host.losses.entries(spec.name)
    lines += table(["backend", "loss", "optimised terms (optimiser)", "reported", "from", "what it is"], [
        [e.backend, f"`{e.name}`" + (" (default)" if e.name == spec.loss_for(e.backend) else ""),
         ", ".join(f"`{t}`" + (f" ({dict(e.optimisers)[t]})" if t in dict(e.optimisers) else "") for t in e.terms),
         ", ".join(f"`{t}`" for t in e.reported) or "-", e.source, e.doc or "-"]
        for e in entries])

    lines += ["## Recipes and results", ""]
    mine = [(name, t) for name, t, _ in recipes() if t.get("algorithm") == spec.name]
    if not mine:
        lines += ["No first-party recipe uses it yet.", ""]
    zoo = sorted(n for n, rows in seeded_rows().items() if n.startswith("zoo:") and rows[0]["algorithm"] == spec.name)
    if zoo:
        lines += ["RL Zoo pairs measured with `rlplug bench` (their results and curves are in the catalogue): "
                  + ", ".join(f"[{n}](../catalogue.md#{file_stem(n)})" for n in zoo) + ".", ""]
    for name, t in mine:
        lines += [f"### [{name}](../catalogue.md#{file_stem(name)})", ""]
        if t.get("description"):
            lines += [t["description"], ""]
        lines += results_rows(seeded_rows().get(name, []), t.get("version"))
        for alt, link in pictures(name, "../"):
            lines += [f"![{alt}]({link})", ""]
    return "\n".join(lines)


def algorithms_index(specs: tuple[Any, ...]) -> str:
    lines = ["# Algorithms", "",
             "Every algorithm of an installed first-party plugin, on each backend (`rlplug list` prints the same "
             "for everything installed, third-party plugins included). Generated from the declarations at build time.",
             ""]
    rows = []
    for spec in specs:
        for backend, bspec in spec.backends.items():
            rows.append([f"[{spec.name}]({spec.name}.md)", backend, spec.kind, ", ".join(bspec.action_spaces),
                         f"`{spec.plugin}` {spec.plugin_version}", spec.summary])
    lines += table(["algorithm", "backend", "kind", "action spaces", "plugin", "what it is"], rows)
    lines += ["Guides for families of cells: [off-policy cells](../off-policy.md), "
              "[recurrent policies](../recurrent.md), [multi-agent cells](../multi-agent.md), "
              "[offline cells and datasets](../offline.md). A new algorithm is a plugin: "
              "[the plugin author's guide](../plugins.md).", ""]
    return "\n".join(lines)


def catalogue_page() -> str:
    specs = {s.name: s for s in session().host.algorithms.values()}
    rows_by_name = seeded_rows()
    entries = recipes()
    lines = ["# The recipe catalogue", "",
             "Every recipe of `registry.toml` and of the installed plugins, with the seeded results of "
             "`rlplug bench` (`benchmarks/results/seeded.json`) on both backends and their learning curves. "
             "Generated at build time: `rlplug recipes` lists the same recipes, `rlplug show NAME` resolves one, "
             "`rlplug bench NAME --backend skrl,torchrl --seeds 3` measures it again. "
             "[BENCHMARKS](benchmarks.md) has the same rows with rates and wall times, and the aggregate.", ""]
    overview = []
    for name, t, _ in entries:
        rows = rows_by_name.get(name, [])
        means = {r["backend"]: r for r in rows if r["recipe"] == f"{name}@{t.get('version')}"}
        overview.append([f"[{name}](#{file_stem(name)})", t.get("env"), number(t.get("steps")),
                         "-" if t.get("target") is None else number(t["target"]),
                         *[number(means[b]["mean"]) + (" ✓" if means[b]["passed"] else " ✗") if b in means else "-"
                           for b in ("skrl", "torchrl")]])
    lines += ["Each backend's mean over its seeds, ✓ where the row passed (mean at the target, at most one seed "
              "below it), ✗ where it missed.", ""]
    lines += table(["recipe", "env", "budget", "target", "skrl", "torchrl"], overview)
    for name, t, source in entries:
        lines += recipe_section(name, t, source, specs, rows_by_name.get(name, []))
    zoo = sorted(n for n in rows_by_name if n.startswith("zoo:"))
    if zoo:
        lines += ["## RL Baselines3 Zoo pairs with seeded results", "",
                  "`zoo:ALGO/ENV` recipes are the Zoo's tuned hyperparameters translated key by key "
                  "([the Zoo page](zoo.md)); these are the pairs measured with `rlplug bench`.", ""]
        for name in zoo:
            rows = rows_by_name[name]
            lines += [f"### {name} {{#{file_stem(name)}}}", "",
                      f"Env `{rows[0]['env']}`, algorithm [{rows[0]['algorithm']}](algorithms/{rows[0]['algorithm']}.md).", ""]
            lines += results_rows(rows, None)
            for alt, link in pictures(name, ""):
                lines += [f"![{alt}]({link})", ""]
    return "\n".join(lines)


def recipe_section(name: str, t: dict[str, Any], source: str, specs: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    algorithm = t.get("algorithm", "")
    offline = bool(t.get("dataset"))
    lines = [f"## {name} {{#{file_stem(name)}}}", ""]
    if t.get("description"):
        lines += [t["description"], ""]
    link = f"[{algorithm}](algorithms/{algorithm}.md)" if algorithm in specs and specs[algorithm].plugin in first_party_distributions() else f"`{algorithm}`"
    where = "registry.toml" if Path(source).name == "registry.toml" else source or "-"
    facts = [
        ["version", t.get("version")],
        ["algorithm", link],
        ["env", f"`{t.get('env')}`" + (f", dataset `{t['dataset']}`" if offline else "")],
        ["default backend", t.get("backend", "-")],
        ["budget", f"{number(t.get('steps'))} {'gradient updates' if offline else 'environment steps'}"
                   + (f", {t['num_envs']} envs" if t.get("num_envs", 1) != 1 else "")],
        ["seed", t.get("seed", 0)],
        ["tier", t.get("tier", "full")],
        ["target", "-" if t.get("target") is None else
         f"{'normalised score' if t.get('target_metric') == 'normalised_score' else 'evaluation return'} "
         f"≥ {number(t['target'])}" + (" and above the dataset's mean return" if t.get("beat_dataset") else "")],
        ["defined in", f"`{where}`"],
    ]
    ref = t.get("reference") or {}
    if ref.get("value") is not None:
        value = number(ref["value"]) + (f" ± {number(ref['std'])}" if ref.get("std") is not None else "")
        at = f" at {number(ref['steps'])} steps" if ref.get("steps") else ""
        seeds = f", {ref['seeds']} seeds" if ref.get("seeds") else ""
        facts.append(["target set from", f"{value}{at}{seeds}: {ref.get('source', '')}"
                      + (f" ({ref['note']})" if ref.get("note") else "")])
    lines += table(["field", "value"], facts)
    lines += [f"`rlplug train {name}` · `rlplug show {name}` · `rlplug bench {name} --backend skrl,torchrl`", ""]
    lines += results_rows(rows, t.get("version"))
    for alt, link in pictures(name, ""):
        lines += [f"![{alt}]({link})", ""]
    return lines


def relinked(path: Path, links: dict[str, str]) -> str:
    """A Markdown file from outside ``docs/`` with its relative links made relative to the site."""
    text = path.read_text(encoding="utf-8")
    for old, new in links.items():
        text = text.replace(f"]({old}", f"]({new}")
    return text


SITE_PAGES = {"BENCHMARKS.md": "benchmarks.md", "benchmarks/README.md": "benchmark-scripts.md", "README.md": "index.md"}
"""Repository files outside ``docs/`` that are pages of the site."""
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def site_links(markdown: str, page_uri: str) -> str:
    """Links from a page to files of the repository outside ``docs/``: to the site's page where the file is one
    (``BENCHMARKS.md``), else the path as code, since the site does not hold it (``benchmarks/results/x.md``).
    A link to a file that does not exist is left for the strict build to report."""
    here = (DOCS / page_uri).parent

    def repl(match: re.Match) -> str:
        bang, text, target = match.groups()
        path, _, anchor = target.partition("#")
        if bang or not path or "://" in path or path.startswith(("mailto:", "/")):
            return match.group(0)
        resolved = (here / path).resolve()
        if resolved.is_relative_to(DOCS) or not resolved.is_relative_to(ROOT) or not resolved.exists():
            return match.group(0)
        repo_path = resolved.relative_to(ROOT).as_posix()
        if repo_path in SITE_PAGES:
            site = Path(os.path.relpath(DOCS / SITE_PAGES[repo_path], here)).as_posix()
            return f"[{text}]({site}{'#' + anchor if anchor else ''})"
        return text if f"`{repo_path}`" in text else f"{text} (`{repo_path}`)"

    return LINK.sub(repl, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return site_links(markdown, page.file.src_uri)


def generated_pages() -> dict[str, str]:
    specs = algorithms()
    pages = {"algorithms/index.md": algorithms_index(specs), "catalogue.md": catalogue_page()}
    for spec in specs:
        pages[f"algorithms/{spec.name}.md"] = algorithm_page(spec)
    pages["benchmarks.md"] = relinked(ROOT / "BENCHMARKS.md", {"docs/": "", "benchmarks/README.md": "benchmark-scripts.md"})
    pages["benchmark-scripts.md"] = relinked(ROOT / "benchmarks" / "README.md", {"../BENCHMARKS.md": "benchmarks.md"})
    return pages


# ---- the hooks ---------------------------------------------------------------------------------------------


def on_config(config: Any) -> Any:
    """The algorithm pages join the nav's Algorithms section, one per installed first-party algorithm."""
    pages = [{spec.name: f"algorithms/{spec.name}.md"} for spec in algorithms()]
    for item in config.nav or []:
        if isinstance(item, dict) and ALGORITHMS_SECTION in item:
            item[ALGORITHMS_SECTION] = [p for p in item[ALGORITHMS_SECTION] if p not in pages] + pages
    return config


def on_files(files: Any, config: Any) -> Any:
    for uri, content in generated_pages().items():
        existing = files.get_file_from_path(uri)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, uri, content=content))
    add_unlisted_pages(files, config)
    return files


def nav_paths(items: Any) -> set[str]:
    if isinstance(items, str):
        return {items}
    if isinstance(items, dict):
        return set().union(*(nav_paths(v) for v in items.values()))
    if isinstance(items, list):
        return set().union(set(), *(nav_paths(v) for v in items))
    return set()


def add_unlisted_pages(files: Any, config: Any) -> None:
    """A page added to ``docs/`` without a place in ``mkdocs.yml``'s nav joins a "More guides" section under
    its own first heading, so a new guide is in the navigation (and the strict build's ``omitted_files`` check
    holds) until someone gives it a place."""
    listed = nav_paths(config.nav or [])
    unlisted = sorted(f.src_uri for f in files.documentation_pages() if f.src_uri not in listed)
    if not unlisted:
        return
    extra = []
    for uri in unlisted:
        text = files.get_file_from_path(uri).content_string
        title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), uri)
        extra.append({title: uri})
    config.nav.append({"More guides": extra})
