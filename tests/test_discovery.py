"""Discovery of entry-point plugins: broken, conflicting and incompatible plugins, in a subprocess."""

from __future__ import annotations

import json

from conftest import assert_one_line_error, run_cli

FAKE_ALGO = """
from rlplug import AlgorithmPlugin, AlgorithmSpec, BackendSpec, Param

SPEC = AlgorithmSpec(
    name={name!r}, summary="test algorithm", kind="on-policy", api_version={api},
    backends={{"skrl": BackendSpec(module="nowhere", action_spaces={spaces!r}, requires={requires!r}, extra="skrl")}},
    params=(Param("alpha", 1.0, "a number"),),
)
plugin = AlgorithmPlugin(SPEC, recipes=[{{"name": "{name}-cartpole", "algorithm": {name!r}, "env": "CartPole-v1",
    "backend": "skrl", "steps": 100, "target": 1.0}}], source="test")
"""


def fake_algorithm(fake_dist, dist, name, api=1, spaces=("discrete", "continuous"), requires=()):
    module = dist.replace("-", "_")
    source = FAKE_ALGO.format(name=name, api=api, spaces=spaces, requires=requires)
    return fake_dist(dist, "1.0", {name: f"{module}:plugin"}, {f"{module}.py": source})


def test_list_shows_installed_ppo():
    result = run_cli("list", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert {(r["algorithm"], r["backend"]) for r in rows if r["status"] == "ok"} >= {("ppo", "skrl"), ("ppo", "torchrl")}
    assert all(r["plugin"] == "rlplug-ppo" for r in rows if r["algorithm"] == "ppo")


def test_broken_plugin_is_listed_and_others_keep_working(fake_dist):
    path = fake_dist("broken-plugin", "0.3", {"brk": "broken_mod:plugin"},
                     {"broken_mod.py": "raise ImportError('needs libfoo, which is missing')\n"})
    result = run_cli("list", paths=(path,))
    assert result.returncode == 0, result.stderr
    assert "broken: ImportError: needs libfoo, which is missing" in result.stdout
    assert "ppo" in result.stdout
    assert run_cli("show", "ppo-cartpole", paths=(path,)).returncode == 0
    bad = run_cli("losses", "brk", paths=(path,))
    assert_one_line_error(bad, "algorithm 'brk' comes from plugin broken-plugin 0.3, which failed to load: ImportError")


def test_two_plugins_claiming_one_algorithm(fake_dist):
    path = fake_algorithm(fake_dist, "evil-ppo", "ppo")
    (path / "evil_ppo.py").write_text((path / "evil_ppo.py").read_text().replace("ppo-cartpole", "evil-cartpole"))
    listing = run_cli("list", paths=(path,))
    assert "conflict: algorithm 'ppo' is claimed by rlplug-ppo 0.1.0 and evil-ppo 1.0" in listing.stdout
    result = run_cli("show", "ppo-cartpole", paths=(path,))
    assert_one_line_error(result, "algorithm 'ppo' is claimed by two plugins: rlplug-ppo 0.1.0 and evil-ppo 1.0")


def test_plugin_for_another_api_version_is_refused(fake_dist):
    path = fake_algorithm(fake_dist, "future-algo", "future", api=2)
    listing = run_cli("list", paths=(path,))
    assert "incompatible: implements rlplug API 2, but this rlplug 0.1.0 implements API 1" in listing.stdout
    result = run_cli("losses", "future", paths=(path,))
    assert_one_line_error(result, "meets plugins declaring api_version = 1")


def test_action_space_the_algorithm_cannot_handle(fake_dist):
    path = fake_algorithm(fake_dist, "cont-only", "contonly", spaces=("continuous",))
    result = run_cli("train", "contonly-cartpole", "--no-write", paths=(path,))
    assert_one_line_error(
        result, "contonly on skrl cannot handle the discrete action space of 'CartPole-v1' (Discrete(2)); it supports continuous actions"
    )


def test_missing_backend_library_names_the_extra(fake_dist):
    path = fake_algorithm(fake_dist, "needs-lib", "needslib", requires=("rlplug_no_such_library",))
    result = run_cli("train", "needslib-cartpole", "--no-write", paths=(path,))
    assert_one_line_error(result, "needs 'rlplug_no_such_library', which is not installed: pip install 'rlplug[skrl]'")


def test_plugin_recipes_are_listed(fake_dist):
    path = fake_algorithm(fake_dist, "cont-only", "contonly", spaces=("continuous",))
    result = run_cli("recipes", "--json", paths=(path,))
    names = {r["name"] for r in json.loads(result.stdout)}
    assert {"contonly-cartpole", "ppo-cartpole", "ppo-pendulum"} <= names


MALFORMED = {
    "dict-algos": "from rlplug import hookimpl\n@hookimpl\ndef rlplug_algorithms():\n    return [{'name': 'dictalgo'}]\n",
    "param-dicts": (
        "import dataclasses\nfrom rlplug import hookimpl\nimport rlplug_ppo\n"
        "@hookimpl\ndef rlplug_algorithms():\n"
        "    return [dataclasses.replace(rlplug_ppo.PPO, name='ppo2', params=({'name': 'gamma'},))]\n"
    ),
    "recipe-shape": "from rlplug import hookimpl\n@hookimpl\ndef rlplug_recipes():\n    return {'name': 'x'}\n",
    "recipe-field": "from rlplug import hookimpl\n@hookimpl\ndef rlplug_recipes():\n    return [{'name': 'x', 'stepz': 3}]\n",
}


def test_malformed_declarations_show_as_broken_and_others_keep_working(fake_dist):
    paths = []
    for dist, source in MALFORMED.items():
        module = dist.replace("-", "_")
        paths.append(fake_dist(dist, "1.0", {module: module}, {f"{module}.py": source}))
    listing = run_cli("list", paths=tuple(paths))
    assert listing.returncode == 0 and "Traceback" not in listing.stderr, listing.stderr
    out = listing.stdout
    assert "broken: rlplug_algorithms() is malformed: it declared dict {'name': 'dictalgo'}, not an rlplug.AlgorithmSpec" in out
    assert "broken: rlplug_algorithms() is malformed: algorithm 'ppo2': params holds {'name': 'gamma'}, not a Param" in out
    assert "broken: rlplug_recipes() is malformed: it returned dict {'name': 'x'}, not a list of recipe tables" in out
    assert "broken: rlplug_recipes() is malformed: recipe 'x' in plugin recipe-field: unknown field 'stepz'" in out
    rows = [line.split() for line in out.splitlines()]
    assert ["ppo", "skrl"] in [row[:2] for row in rows] and "ppo2" not in [row[0] for row in rows if row]
    doctor = run_cli("doctor", paths=tuple(paths))
    assert doctor.returncode == 0 and "reason: rlplug_recipes() is malformed" in doctor.stdout
    assert run_cli("show", "ppo-cartpole", paths=tuple(paths)).returncode == 0


def test_a_models_hook_returning_a_string_is_refused_in_one_line():
    from rlplug import hookimpl
    from rlplug.errors import PluginError
    from rlplug.pipeline.session import Session

    class StringModels:
        @hookimpl(tryfirst=True)
        def rlplug_build_models(self, build):
            return "oops" if build.is_cell("ppo", "skrl") else None

    session = Session(objects=(StringModels(),))
    build = session.prepare("ppo-cartpole")
    try:
        session.construct(build)
    except PluginError as err:
        assert str(err) == (
            "rlplug_build_models returned str 'oops' for ppo/skrl, not a table of named models (name -> model) "
            "(third-party implementations: StringModels)"
        )
    else:
        raise AssertionError("a string from rlplug_build_models was accepted")


def test_an_incompatible_plugin_s_algorithm_and_recipes_name_the_api_versions(fake_dist):
    """The entry point's name is not the algorithm's: every command still names the real cause (issue 51)."""
    path = fake_algorithm(fake_dist, "future-algo", "futurealgo", api=2)
    (path / "future_algo-1.0.dist-info" / "entry_points.txt").write_text("[rlplug.plugins]\nfutureplug = future_algo:plugin\n")
    why = "implements rlplug API 2, but this rlplug 0.1.0 implements API 1"
    listing = run_cli("list", paths=(path,))
    assert any(line.split()[:1] == ["futurealgo"] and f"incompatible: {why}" in line for line in listing.stdout.splitlines()), listing.stdout
    for argv in (["show", "futurealgo-cartpole"], ["train", "futurealgo-cartpole", "--no-write"]):
        assert_one_line_error(run_cli(*argv, paths=(path,)), f"recipe 'futurealgo-cartpole' comes from plugin future-algo 1.0, which {why}")
    assert_one_line_error(run_cli("losses", "futurealgo", paths=(path,)), f"algorithm 'futurealgo' comes from plugin future-algo 1.0, which {why}")
    doctor = run_cli("doctor", paths=(path,))
    assert "future-algo 1.0" in doctor.stdout and "algorithms: futurealgo" in doctor.stdout and f"reason: {why}" in doctor.stdout


def test_entry_points_are_read_from_the_cache_until_a_distribution_changes(fake_dist, monkeypatch, tmp_path):
    """The scan is kept between commands while sys.path and every distribution's metadata files stay as they were:
    a distribution added, edited in place or removed is seen by the next call (issue 51)."""
    import os
    import shutil
    import sys

    from rlplug.pipeline import entry_point_cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = fake_dist("cached-plugin", entry_points={"cachedalgo": "cached_plugin:plugin"})
    monkeypatch.syspath_prepend(str(root))
    names = lambda: {ep[0]: ep[2:] for ep in entry_point_cache.entry_points_of("rlplug.plugins")}  # noqa: E731
    assert names()["cachedalgo"] == ("cached-plugin", "1.0")
    scans = []
    real_scan = entry_point_cache._scan
    monkeypatch.setattr(entry_point_cache, "_scan", lambda group: scans.append(group) or real_scan(group))
    assert "cachedalgo" in names() and scans == []  # unchanged: the cache answers, nothing is read

    info = root / "cached_plugin-1.0.dist-info" / "entry_points.txt"
    info.write_text("[rlplug.plugins]\ncachedalgo = cached_plugin:plugin\nsecond = cached_plugin:other\n")
    stamp = info.stat()
    os.utime(info, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 10**9))  # edited in place, as an editor would
    assert {"cachedalgo", "second"} <= names().keys() and len(scans) == 1
    shutil.rmtree(root / "cached_plugin-1.0.dist-info")
    assert not {"cachedalgo", "second"} & names().keys() and len(scans) == 2
    assert sys.path[0] == str(root)


def test_a_listing_from_the_cache_does_not_import_importlib_metadata(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    code = "import sys; from rlplug.cli import main; main(['list']); print('importlib.metadata' in sys.modules)"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True) for _ in range(2)]
    assert [r.stdout.splitlines()[-1] for r in runs] == ["True", "False"]  # scanned once, then read from the cache
    assert runs[0].stdout.splitlines()[:-1] == runs[1].stdout.splitlines()[:-1]  # the same listing
