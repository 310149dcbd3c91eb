"""``rlplug export``: every cell's exported policy (TorchScript, and ONNX when onnxruntime is installed)
reproduces ``act_deterministic`` on 100 observations in a process that imports neither rlplug nor skrl
nor TorchRL; ``rlplug eval --exported`` scores the file as ``rlplug eval`` scores the run; refusals are
one line."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import image_envs  # noqa: F401 - registers the tiny image and Dict environments
from conftest import cli_in_process as _cli, refused_in_process as _refused

pytest.importorskip("skrl")
pytest.importorskip("torchrl")

HAS_ONNX = all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime"))
FORMATS = ("torchscript", "onnx") if HAS_ONNX else ("torchscript",)

TINY_PPO = "rollout_steps = 16\nepochs = 1\nminibatches = 2\nhidden_sizes = [16]\nnormalize_observations = true"
TINY_REPLAY = "learning_starts = 32\nbatch_size = 16\nbuffer_size = 200\nhidden_sizes = [16]\nlog_every = 64\ntrain_every = 4\nutd_ratio = 0.5"
TINY_OFFLINE = "hidden_sizes = [16]\nbatch_size = 16\nlog_every = 4\neval_every = 0"
SMALL_CNN = "encoder_kwargs = { channels = [4], kernels = [3], strides = [1], features = 8 }"

RECIPES = f"""
[recipes.x-ppo-cartpole]
extends = "ppo-cartpole"
steps = 64
num_envs = 2
[recipes.x-ppo-cartpole.hyperparameters]
{TINY_PPO}

[recipes.x-ppo-pendulum]
extends = "ppo-pendulum"
steps = 64
num_envs = 2
[recipes.x-ppo-pendulum.hyperparameters]
{TINY_PPO}

[recipes.x-sac-pendulum]
extends = "sac-pendulum"
steps = 64
[recipes.x-sac-pendulum.hyperparameters]
{TINY_REPLAY}

[recipes.x-td3-pendulum]
extends = "td3-pendulum"
steps = 64
[recipes.x-td3-pendulum.hyperparameters]
{TINY_REPLAY}

[recipes.x-dqn-cartpole]
extends = "dqn-cartpole"
steps = 64
[recipes.x-dqn-cartpole.hyperparameters]
{TINY_REPLAY}

[recipes.x-iql-pendulum]
extends = "iql-pendulum-medium"
dataset = "@PENDULUM@"
steps = 8
[recipes.x-iql-pendulum.hyperparameters]
{TINY_OFFLINE}

[recipes.x-cql-pendulum]
extends = "cql-pendulum-medium"
dataset = "@PENDULUM@"
steps = 8
[recipes.x-cql-pendulum.hyperparameters]
{TINY_OFFLINE}
num_random = 2

[recipes.x-cql-cartpole]
extends = "cql-cartpole-medium"
dataset = "@CARTPOLE@"
steps = 8
[recipes.x-cql-cartpole.hyperparameters]
{TINY_OFFLINE}

[recipes.x-dqn-image]
extends = "x-dqn-cartpole"
env = "RlplugTinyImage-v0"
{SMALL_CNN}

[recipes.x-sac-dict]
extends = "x-sac-pendulum"
env = "RlplugTinyDictBox-v0"
{SMALL_CNN}
[recipes.x-sac-dict.hyperparameters]
squash_actions = true

[recipes.x-ppo-masked]
extends = "x-ppo-cartpole"
env = "tiny_envs:TinyMasked-v0"

[recipes.x-dqn-masked]
extends = "x-dqn-cartpole"
env = "tiny_envs:TinyMasked-v0"

[recipes.x-mappo-spread]
extends = "mappo-simple-spread"
steps = 32
num_envs = 2
[recipes.x-mappo-spread.hyperparameters]
rollout_steps = 16
epochs = 1
minibatches = 2
hidden_sizes = [16]

[recipes.x-mappo-navigation]
extends = "mappo-navigation"
steps = 32
num_envs = 2
[recipes.x-mappo-navigation.hyperparameters]
rollout_steps = 16
epochs = 1
minibatches = 2
hidden_sizes = [16]
share_parameters = false

[recipes.x-qmix-spread]
extends = "vdn-simple-spread"
steps = 64
num_envs = 2
[recipes.x-qmix-spread.hyperparameters]
mixer = "qmix"
learning_starts = 32
batch_size = 16
hidden_sizes = [16]
mixing_embed_dim = 8
"""

# the twelve single-agent cells per backend, then encoders (uint8 image, Dict), discrete CQL, action masks
# (the mask an input of its own), MAPPO and QMIX
CELLS = ("x-ppo-cartpole", "x-ppo-pendulum", "x-sac-pendulum", "x-td3-pendulum", "x-dqn-cartpole", "x-iql-pendulum",
         "x-cql-pendulum", "x-cql-cartpole", "x-dqn-image", "x-sac-dict", "x-ppo-masked", "x-dqn-masked", "x-mappo-spread",
         "x-mappo-navigation", "x-qmix-spread")  # fmt: skip
OBSERVATIONS = 100

# Runs in a fresh interpreter: plain torch (and onnxruntime) only, then says what else got imported.
LOAD_AND_ACT = r"""
import json, sys
import numpy as np
import torch

results = {}
for cell in json.load(open(sys.argv[1])):
    data = np.load(cell["data"])
    inputs = [data["in_" + name] for name in cell["inputs"]]
    want = data["actions"]
    for path in cell["files"]:
        if path.endswith(".onnx"):
            import onnxruntime
            session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
            got = session.run(["action"], dict(zip(cell["inputs"], inputs)))[0]
        else:
            with torch.no_grad():
                got = torch.jit.load(path)(*(torch.from_numpy(x) for x in inputs)).numpy()
        results[path] = {
            "dtype": str(got.dtype), "shape": list(got.shape), "equal": bool(np.array_equal(got, want)),
            "max_abs_difference": float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))),
        }
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("rlplug", "skrl", "torchrl", "tensordict") or m.startswith("rlplug_"))
print(json.dumps({"results": results, "leaked": leaked}))
"""


@pytest.fixture(scope="module")
def recipe_file(tmp_path_factory, random_dataset):
    path = tmp_path_factory.mktemp("export") / "recipes.toml"
    text = RECIPES.replace("@PENDULUM@", random_dataset("Pendulum-v1")).replace("@CARTPOLE@", random_dataset("CartPole-v1"))
    path.write_text(text)
    return path


def _observations(build, count=OBSERVATIONS, seed=0):
    """``count`` observations the way the env gives them (float32 vectors, uint8 images, a Dict's keys);
    multi-agent: ``[count, n_agents, obs_dim]`` standard normal."""
    multiagent = build.extras.get("multiagent")
    if multiagent is not None:
        shape = (count, multiagent.n_agents, *multiagent.observation_space.shape)
        return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    env = gym.make(build.env_id)
    env.action_space.seed(seed)
    observation, _ = env.reset(seed=seed)
    seen = []
    for _ in range(count):
        seen.append(observation)
        observation, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            observation, _ = env.reset()
    env.close()
    if isinstance(seen[0], dict):
        return {key: np.stack([o[key] for o in seen]) for key in seen[0]}
    stacked = np.stack(seen)
    return stacked if stacked.dtype == np.uint8 else stacked.astype(np.float32)


@pytest.fixture(scope="module", params=["skrl", "torchrl"])
def exported(request, recipe_file, tmp_path_factory):
    """Every cell of one backend built from a tiny recipe, trained its few steps, exported in every format,
    with 100 observations and ``act_deterministic``'s actions on them; then ONE fresh interpreter loads
    every file and acts. ``{"cells": {name: {...}}, "results": {path: {...}}, "leaked": [...]}``."""
    import rlplug
    from rlplug.results.export import export_policy

    backend = request.param
    folder = tmp_path_factory.mktemp(f"exported-{backend}")
    session = rlplug.pipeline.session.Session(recipe_files=[str(recipe_file)])
    cells, manifest = {}, []
    for name in CELLS:
        build = session.build(name, backend)
        try:
            build.trainer.train(build.recipe.steps)
            observations = _observations(build)
            actions = np.asarray(build.trainer.act_deterministic(observations))
            files = []
            for fmt in FORMATS:
                path = folder / f"{name}{'.pt' if fmt == 'torchscript' else '.onnx'}"
                result = export_policy(build, path, fmt)
                files.append(str(path))
            signature = result["metadata"]
        finally:
            build.trainer.close()
        inputs = [spec["name"] for spec in signature["inputs"]]
        by_name = observations if isinstance(observations, dict) else {"observation": observations}
        data = folder / f"{name}.npz"
        np.savez(data, actions=actions, **{f"in_{key}": np.asarray(by_name[key], dtype=spec["dtype"])
                                           for key, spec in zip(inputs, signature["inputs"])})  # fmt: skip
        cells[name] = {"files": files, "signature": signature, "actions": actions}
        manifest.append({"data": str(data), "inputs": inputs, "files": files})
    (folder / "manifest.json").write_text(json.dumps(manifest))
    done = subprocess.run([sys.executable, "-c", LOAD_AND_ACT, str(folder / "manifest.json")], capture_output=True, text=True,
                          cwd=folder, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {"backend": backend, "cells": cells, **json.loads(done.stdout.strip().splitlines()[-1])}


def test_the_loading_process_imports_neither_rlplug_nor_skrl_nor_torchrl(exported):
    assert exported["leaked"] == []


@pytest.mark.parametrize("name", CELLS)
def test_an_exported_policy_reproduces_act_deterministic(exported, name):
    cell = exported["cells"][name]
    discrete = cell["signature"]["action"]["kind"] == "discrete"
    assert len(cell["files"]) == len(FORMATS)
    for path in cell["files"]:
        result = exported["results"][path]
        assert result["shape"] == list(cell["actions"].shape), path
        assert result["dtype"] == str(cell["actions"].dtype), path
        if discrete:
            assert result["equal"], f"{path}: actions differ from act_deterministic's"
        else:
            assert result["max_abs_difference"] <= 1e-5, f"{path}: {result['max_abs_difference']}"


# ---- the command line: export, eval --exported, and the refusals --------------------------------------

RUN_OVERRIDES = {
    ("ppo-cartpole", "skrl"): ["steps=128", "num_envs=2", "eval_episodes=3", "rollout_steps=32", "epochs=1", "hidden_sizes=[16]"],
    ("td3-pendulum", "torchrl"): ["steps=96", "eval_episodes=2", "learning_starts=32", "batch_size=16", "hidden_sizes=[16]"],
}

# a user plugin whose ppo/skrl trainer does not say how its policy exports
NO_EXPORT = '''
import rlplug


@rlplug.hookimpl(tryfirst=True)
def rlplug_build_trainer(build):
    if not build.is_cell("ppo", "skrl"):
        return None
    from rlplug.backends.skrl import TrainerBase
    from rlplug_ppo.skrl_backend import SkrlPPOTrainer

    class NoExportTrainer(SkrlPPOTrainer):
        export_policy = TrainerBase.export_policy

    return NoExportTrainer(build)
'''


def _train_run(run_dir, recipe, backend, plugins=()):
    import rlplug
    from rlplug.runs import train

    session = rlplug.pipeline.session.Session(plugins=plugins)
    build = session.build(recipe, backend, RUN_OVERRIDES[(recipe, backend)])
    try:
        train(build, run_dir=run_dir, progress=False)
    finally:
        build.trainer.close()
    return run_dir


@pytest.fixture(scope="module", params=sorted(RUN_OVERRIDES), ids="/".join)
def run_dir(request, tmp_path_factory):
    recipe, backend = request.param
    return _train_run(tmp_path_factory.mktemp("runs") / f"{recipe}-{backend}", recipe, backend)


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_writes_a_checked_file_that_eval_scores_as_it_scores_the_run(capsys, run_dir, fmt):
    code, out, err = _cli(capsys, "export", run_dir, "--format", fmt, "--json")
    assert code == 0, err
    written = json.loads(out)
    path = run_dir / ("policy.pt" if fmt == "torchscript" else "policy.onnx")
    assert written["path"] == str(path) and path.is_file()
    assert written["max_abs_difference"] <= (0.0 if written["metadata"]["action"]["kind"] == "discrete" else 1e-5)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert written["metadata"]["steps"] == summary["steps"] and written["metadata"]["backend"] == summary["backend"]

    code, out, err = _cli(capsys, "eval", run_dir, "--exported", path, "--json")
    assert code == 0, err
    scored = json.loads(out)
    code, out, err = _cli(capsys, "eval", run_dir, "--json")
    assert code == 0, err
    expected = json.loads(out)
    assert (scored["eval_return_mean"], scored["eval_return_std"]) == (expected["eval_return_mean"], expected["eval_return_std"])
    assert scored["eval_episodes"] == expected["eval_episodes"] == summary["eval_episodes"]


def test_export_says_where_it_wrote_and_what_the_file_takes(capsys, tmp_path, run_dir):
    out_file = tmp_path / "my-policy.pt"
    code, out, err = _cli(capsys, "export", run_dir, "--out", out_file)
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0].endswith(f"torchscript policy written to {out_file}") and out_file.is_file()
    assert lines[1].startswith("inputs: observation float32 [B, ")
    assert lines[2].startswith("checked: its actions match act_deterministic's")


def test_refusals_are_one_line(capsys, tmp_path, monkeypatch, run_dir):
    _refused(capsys, "argument --format: invalid choice 'tflite'", "export", run_dir, "--format", "tflite")
    _refused(capsys, f"run directory {tmp_path / 'nothing'} does not exist", "export", tmp_path / "nothing")
    bare = tmp_path / "no-checkpoint"
    bare.mkdir()
    (bare / "recipe.json").write_text((run_dir / "recipe.json").read_text())
    _refused(capsys, f"run directory {bare} holds no checkpoint", "export", bare)
    _refused(capsys, f"exported policy {tmp_path / 'none.pt'} does not exist", "eval", run_dir, "--exported", tmp_path / "none.pt")
    _refused(capsys, "is not an exported policy: a zip archive, but not a TorchScript module",
             "eval", run_dir, "--exported", run_dir / "checkpoints" / "latest.pt")  # fmt: skip
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if rlplug[onnx] were not installed
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    assert _refused(capsys, "", "export", run_dir, "--format", "onnx") == (
        "rlplug: error: --format onnx needs onnx and onnxruntime: pip install 'rlplug[onnx]'"
    )


def test_a_file_for_another_environment_is_refused(capsys, tmp_path, run_dir):
    import rlplug
    from rlplug.results.export import export_policy

    other = "td3-pendulum" if "cartpole" in run_dir.name else "ppo-cartpole"
    backend = "torchrl" if other == "td3-pendulum" else "skrl"
    build = rlplug.pipeline.session.Session().build(other, backend, RUN_OVERRIDES[(other, backend)])
    try:
        export_policy(build, tmp_path / "other.pt")
    finally:
        build.trainer.close()
    _refused(capsys, "it does not fit this run's environment", "eval", run_dir, "--exported", tmp_path / "other.pt")


def test_a_cell_that_cannot_export_is_refused(capsys, tmp_path, monkeypatch):
    (tmp_path / "no_export_plugin.py").write_text(NO_EXPORT)
    monkeypatch.syspath_prepend(str(tmp_path))
    run = _train_run(tmp_path / "run", "ppo-cartpole", "skrl", plugins=("no_export_plugin",))
    assert _refused(capsys, "", "export", run) == (
        "rlplug: error: ppo/skrl cannot export its policy: NoExportTrainer implements no export_policy"
    )
    assert not (run / "policy.pt").exists()
    assert not (run / "checkpoints" / "latest.policy.pt").exists()  # nothing beside the checkpoint: eval reads it
    code, out, err = _cli(capsys, "eval", run, "--json")
    assert code == 0 and json.loads(out)["eval_episodes"] == 3, err


def test_eval_plays_the_policy_written_beside_the_checkpoint_while_it_is_that_checkpoints(capsys, run_dir, monkeypatch):
    """Training leaves ``checkpoints/latest.policy.pt``: ``rlplug eval`` plays it (no trainer built, the checkpoint
    unread) and reports what evaluating the checkpoint reports; once ``latest.pt`` is another file (here: touched),
    or without the file, the checkpoint is read again."""
    import os

    import rlplug.runs

    beside = run_dir / "checkpoints" / "latest.policy.pt"
    assert beside.is_file()
    with monkeypatch.context() as patched:
        patched.setattr(rlplug.runs, "open_run", lambda *a, **k: pytest.fail("the checkpoint was opened"))
        code, out, err = _cli(capsys, "eval", run_dir, "--json")
    assert code == 0, err
    fast = json.loads(out)
    latest = run_dir / "checkpoints" / "latest.pt"
    stat = latest.stat()
    opened = []
    try:
        os.utime(latest, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
        with monkeypatch.context() as patched:
            real = rlplug.runs.open_run
            patched.setattr(rlplug.runs, "open_run", lambda *a, **k: opened.append(1) or real(*a, **k))
            code, out, err = _cli(capsys, "eval", run_dir, "--json")
        assert code == 0 and json.loads(out) == fast and opened == [1], err
    finally:
        os.utime(latest, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (fast["steps"], fast["eval_return_mean"]) == (summary["steps"], summary["eval_return_mean"])


def test_export_copies_the_checked_policy_beside_the_checkpoint_without_opening_it(capsys, run_dir, tmp_path, monkeypatch):
    """TorchScript export of a run whose ``latest.policy.pt`` stands for its checkpoint is that file (checked when
    training wrote it: the same largest difference is reported); ONNX, and a checkpoint that is another file, open the
    checkpoint and trace again."""
    import os

    import rlplug.runs

    beside = run_dir / "checkpoints" / "latest.policy.pt"
    with monkeypatch.context() as patched:
        patched.setattr(rlplug.runs, "open_run", lambda *a, **k: pytest.fail("the checkpoint was opened"))
        code, out, err = _cli(capsys, "export", run_dir, "--out", tmp_path / "copied.pt", "--json")
    assert code == 0, err
    copied = json.loads(out)
    assert (tmp_path / "copied.pt").read_bytes() == beside.read_bytes()
    assert copied["max_abs_difference"] is not None and "checkpoint_stamp" not in copied["metadata"]
    latest = run_dir / "checkpoints" / "latest.pt"
    stat = latest.stat()
    try:
        os.utime(latest, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
        code, out, err = _cli(capsys, "export", run_dir, "--out", tmp_path / "traced.pt", "--json")
    finally:
        os.utime(latest, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert code == 0, err
    traced = json.loads(out)
    assert traced["metadata"] == copied["metadata"] and traced["max_abs_difference"] == copied["max_abs_difference"]


def test_eval_of_the_policy_beside_the_checkpoint_imports_neither_skrl_nor_torchrl(run_dir):
    code = ("import sys; from rlplug.cli import main\n"
            f"try: main(['eval', {str(run_dir)!r}, '--json'])\n"
            "except SystemExit as e: assert not e.code, e.code\n"
            "print(sorted(m for m in ('skrl', 'torchrl', 'tensordict') if m in sys.modules))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def _forged(path, meta, module, example):
    """A TorchScript file of ``module`` carrying ``meta`` as its rlplug metadata (a forged or edited export)."""
    import torch

    torch.jit.save(torch.jit.trace(module, (example,)), str(path), _extra_files={"rlplug.json": json.dumps(meta)})
    return path


def test_a_truncated_forged_or_renamed_file_gets_the_line_that_says_which(capsys, tmp_path, run_dir):
    import os
    import shutil

    import torch

    policy = tmp_path / "policy.pt"
    assert _cli(capsys, "export", run_dir, "--out", policy)[0] == 0
    extra = {"rlplug.json": ""}
    torch.jit.load(str(policy), _extra_files=extra)
    meta = json.loads(extra["rlplug.json"])
    size = meta["inputs"][0]["shape"][1]
    data = policy.read_bytes()

    def refused(expected, name, content):
        (tmp_path / name).write_bytes(content)
        return _refused(capsys, expected, "eval", run_dir, "--exported", tmp_path / name)

    refused("cut.pt is a truncated or damaged TorchScript file: a zip archive without its end", "cut.pt", data[: len(data) // 2])
    refused("noise.pt is not an exported policy: neither a TorchScript (zip) nor an ONNX file", "noise.pt", os.urandom(4096))
    refused("empty.pt is not an exported policy: it is empty", "empty.pt", b"")
    refused("(a torch.save file, like a checkpoint: `rlplug export RUN_DIR` writes the policy)", "ckpt.pt",
            (run_dir / "checkpoints" / "latest.pt").read_bytes())  # fmt: skip

    example = torch.zeros(2, size)
    wrong_input = _forged(tmp_path / "in.pt", meta, torch.nn.Linear(size + 1, 2), torch.zeros(2, size + 1))
    _refused(capsys, f"in.pt does not run on the inputs its metadata declares (observation float32 [B, {size}]): mat1 and mat2 shapes",
             "eval", run_dir, "--exported", wrong_input)  # fmt: skip
    wrong_output = _forged(tmp_path / "out.pt", meta, torch.nn.Linear(size, 7), example)
    _refused(capsys, "out.pt returns actions that do not fit its metadata's action", "eval", run_dir, "--exported", wrong_output)
    box = meta["action"]["kind"] == "box"  # metadata that its network meets, for another action space
    other_action = dict(meta, action={**meta["action"], "low": [-9.0], "high": [9.0]} if box else {**meta["action"], "n": 9})
    forged = tmp_path / "other.pt"
    shutil.copy(policy, forged)
    torch.jit.save(torch.jit.load(str(policy)), str(forged), _extra_files={"rlplug.json": json.dumps(other_action)})
    _refused(capsys, "it does not fit this run's environment " + ("Pendulum-v1: it returns action float32 [B, 1] in [-9.0, 9.0], the "
             "run's environment takes action float32 [B, 1] in [-2.0, 2.0]" if box else "CartPole-v1: it returns action int64 [B] in "
             "Discrete(9), the run's environment takes action int64 [B] in Discrete(2)"), "eval", run_dir, "--exported", forged)
    _refused(capsys, "bad.pt has damaged rlplug.json metadata: 'inputs' is 'x'", "eval", run_dir, "--exported",
             _forged(tmp_path / "bad.pt", dict(meta, inputs="x"), torch.nn.Linear(size, 2), example))  # fmt: skip

    if HAS_ONNX:
        onnx_file = tmp_path / "policy.onnx"
        assert _cli(capsys, "export", run_dir, "--format", "onnx", "--out", onnx_file)[0] == 0
        refused("cut.onnx is a truncated or damaged ONNX file (onnxruntime: ", "cut.onnx", onnx_file.read_bytes()[:200])
        for renamed, fmt in ((tmp_path / "onnx-named.pt", "onnx"), (tmp_path / "pt-named.onnx", "torchscript")):
            shutil.copy(onnx_file if fmt == "onnx" else policy, renamed)  # the file says what it is, not its name
            code, out, err = _cli(capsys, "eval", run_dir, "--exported", renamed, "--episodes", "1", "--json")
            assert code == 0 and json.loads(out)["format"] == fmt, err
