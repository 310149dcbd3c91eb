"""Shared fixtures: fake plugin distributions on a temporary path, and the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# MKL (torch's CPU BLAS here) may round differently with the memory alignment of its inputs, which depends on what
# the process allocated before: CI once saw a resume-equivalence check differ by 5.8e-11 after 200 CQL updates, in
# the full suite only. STRICT conditional numerical reproducibility removes that dependence; it is read when MKL
# loads, so it is set before anything imports torch (subprocesses inherit it).
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")


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


def cli_in_process(capsys, *argv) -> tuple[int, str, str]:
    """``rlplug ARGV`` in this process (no interpreter start-up): exit code, stdout, stderr."""
    from rlplug.cli import main

    capsys.readouterr()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as stop:  # the argument parser's refusals
        code = stop.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def refused_in_process(capsys, expected: str, *argv) -> str:
    """``rlplug ARGV`` in this process is refused: exit 2, one line on stderr holding ``expected``, no traceback."""
    code, _, err = cli_in_process(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err)
    assert expected in lines[0], lines[0]
    return lines[0]


def one_timeline(before: list[list[str]], after: list[list[str]], upto: int) -> bool:
    """``metrics.csv`` rows (header first) of a run before a kill and after its resume from the checkpoint at
    step ``upto``: every row up to it is still there, in order (columns added later pad it on the right), and
    no step is there twice (rows past it were trained again)."""
    covered = [before[0]] + [row for row in before[1:] if int(row[0]) <= upto] if before else []
    steps = [int(row[0]) for row in after[1:]]
    return (len(after) >= len(covered) and all(new[: len(old)] == old for old, new in zip(covered, after))
            and steps == sorted(set(steps)))


def assert_one_line_error(result: subprocess.CompletedProcess, expected: str) -> None:
    """Exit code 2, exactly one line on stderr containing ``expected``, and no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert expected in lines[0], lines[0]


def make_build(plugin_module, backend, env_id, num_envs=4, steps=2048, seed=0, registry=None, loss=None, dataset=None,
               settings=None, algorithm=None, **hp_over):  # fmt: skip
    """A ``Build`` of an algorithm ``plugin_module`` declares (``algorithm``, by default the one named after the module),
    wired stage by stage through the plugin's hooks, without recipes or discovery. ``plugin_module`` is the entry
    module's name (``"rlplug_sac"``).
    Offline algorithms take ``dataset``, a dataset directory (see the ``random_dataset`` fixture);
    ``settings`` overrides backend settings as a recipe's raw table does (``{"collector": True}``)."""
    import importlib
    from types import SimpleNamespace

    import gymnasium as gym
    from rlplug import Build
    from rlplug.contract.losses import LossRegistry

    plugin = importlib.import_module(plugin_module).plugin
    specs = {spec.name: spec for spec in plugin.rlplug_algorithms()}
    spec = specs[algorithm or (plugin_module.removeprefix("rlplug_") if len(specs) > 1 else next(iter(specs)))]
    hp = {**spec.defaults(), **hp_over}
    recipe = SimpleNamespace(name="test", steps=steps, num_envs=num_envs, seed=seed, dataset=dataset or "")
    if registry is None:
        registry = LossRegistry()
        plugin.rlplug_register_losses(registry)
    env = gym.make(env_id)
    observation_space, action_space = env.observation_space, env.action_space
    env.close()
    translated = {**spec.backends[backend].settings(hp, recipe), **(settings or {})}
    build = Build(recipe=recipe, algorithm=spec, backend=backend, hp=hp, settings=translated,
                  env_id=env_id, env_kwargs={}, num_envs=num_envs, observation_space=observation_space,
                  action_space=action_space, seed=seed, device="cpu",
                  loss_entry=registry.get(spec.name, backend, loss or spec.loss_for(backend)))  # fmt: skip
    if dataset is not None:
        from rlplug.data.datasets import read_info

        build.extras["dataset"] = read_info(dataset)
    build.models = plugin.rlplug_build_models(build=build)
    build.memory = plugin.rlplug_build_memory(build=build)
    build.loss = plugin.rlplug_build_loss(build=build)
    build.target_updater = plugin.rlplug_build_target_updater(build=build)
    build.trainer = plugin.rlplug_build_trainer(build=build)
    return build


def share_replay(torchrl_build, agent):
    """One batch of a TorchRL off-policy cell's collection, copied into the skrl ``agent``'s memory as skrl stores
    transitions (the comparisons then feed both the same batches); returns what TorchRL stored."""
    torchrl_build.trainer.step()
    stored = torchrl_build.memory._storage[: len(torchrl_build.memory)]
    rows, memory = len(stored), agent.memory
    columns = (("observations", "observation"), ("next_observations", ("next", "observation")), ("actions", "action"),
               ("rewards", ("next", "reward")), ("terminated", ("next", "terminated")))  # fmt: skip
    if "truncated" in memory.tensors:  # DQN with n-step returns keeps it
        columns += (("truncated", ("next", "truncated")),)
    for name, key in columns:
        memory.tensors[name][:rows, 0] = stored[key].reshape(rows, -1)
    memory.memory_index = rows
    return stored


def make_ppo_build(backend, env_id="CartPole-v1", num_envs=4, steps=2048, seed=0, registry=None, loss="clip", **hp_over):
    """A PPO ``Build`` wired stage by stage through the plugin's hooks, without recipes or discovery."""
    return make_build("rlplug_ppo", backend, env_id, num_envs, steps, seed, registry, loss, **hp_over)


@pytest.fixture
def builds():
    """``builds(plugin_module, backend, env_id, **kwargs)`` makes builds and closes their trainers afterwards."""
    made = []

    def make(plugin_module, backend, env_id, **kwargs):
        made.append(make_build(plugin_module, backend, env_id, **kwargs))
        return made[-1]

    yield make
    for build in made:
        build.trainer.close()


@pytest.fixture
def ppo_builds():
    """``ppo_builds(backend, **kwargs)`` makes PPO builds and closes their trainers afterwards."""
    made = []

    def make(backend, **kwargs):
        made.append(make_ppo_build(backend, **kwargs))
        return made[-1]

    yield make
    for build in made:
        build.trainer.close()


def write_dataset(directory, env_id="Pendulum-v1", steps=2_000, seed=0, random_return=-1200.0, expert_return=-150.0):
    """A uniformly random dataset of ``steps`` transitions at ``directory`` with made-up reference returns
    (tests only: real datasets measure theirs)."""
    import gymnasium as gym
    from rlplug.data.collect import rollout
    from rlplug.data.datasets import write

    env = gym.make(env_id)
    arrays = rollout(env_id, {}, None, steps, 0.0, seed, progress=False)
    info = write(str(directory), arrays, env_id=env_id, env_kwargs={}, observation_space=env.observation_space,
                 action_space=env.action_space, source={"kind": "random", "seed": seed},
                 reference={"random_return": random_return, "expert_return": expert_return})
    env.close()
    return str(info.path)


@pytest.fixture(scope="session")
def random_dataset(tmp_path_factory):
    """``random_dataset(env_id)``: the path of a 2,000-transition random dataset of ``env_id`` (made once)."""
    made = {}

    def make(env_id="Pendulum-v1"):
        if env_id not in made:
            made[env_id] = write_dataset(tmp_path_factory.mktemp("datasets") / env_id, env_id)
        return made[env_id]

    return make


def weights_only_round_trip(state):
    """``state`` through ``torch.save`` and ``torch.load(weights_only=True)``, as a checkpoint goes."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)
