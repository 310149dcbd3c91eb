"""The third-party example plugin (examples/my-a2c) installs, shows up, trains on both backends
and uninstalls.

It is installed with pip into a fresh virtual environment, the way a user installs a plugin, so the
test exercises entry-point discovery for real: nothing in this process imports the example. The new
environment sees the current one's packages (rlplug, torch, skrl, torchrl, pip, setuptools) through a
``.pth`` file, so nothing is downloaded and the build runs offline (``--no-build-isolation --no-index``).
The parity test imports the example from its source folder instead: its skrl loss is skrl's A2C math.
"""

from __future__ import annotations

import copy
import importlib.metadata
import importlib.util
import json
import math
import os
import shutil
import site
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "my-a2c"
BUDGET_S = 180  # the whole install test; about 30 s on an idle 2-core machine
BUILD_ARTEFACTS = ("build", "dist", "*.egg-info", "__pycache__")


def slow(test):
    """Marked slow, with a timeout where pytest-timeout is installed."""
    test = pytest.mark.slow(test)
    if importlib.util.find_spec("pytest_timeout") is not None:
        test = pytest.mark.timeout(BUDGET_S + 30)(test)
    return test


def _installed_here(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


class Venv:
    """A throwaway virtual environment layered over the current interpreter's site-packages."""

    def __init__(self, root: Path, deadline: float) -> None:
        self.root = root
        self.deadline = deadline
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        self.env.update(
            PIP_CONFIG_FILE=os.devnull,  # no index URLs or find-links from the user's pip configuration
            PIP_NO_INPUT="1",
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            PIP_ROOT_USER_ACTION="ignore",
            OMP_NUM_THREADS="1",
        )
        # --without-pip: ensurepip costs seconds; the current environment's pip is visible through the .pth
        self.run(sys.executable, "-m", "venv", "--without-pip", str(root))
        self.python = str(root / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
        purelib = Path(self.run(self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
        # addsitedir (not a bare path line) also processes the .pth files there: editable installs of
        # rlplug and the first-party plugins are .pth files
        lines = [f"import site; site.addsitedir({path!r})" for path in site.getsitepackages()]
        (purelib / "_rlplug_test_parent_env.pth").write_text("\n".join(lines) + "\n")

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            pytest.fail(f"over the test's {BUDGET_S} s budget before running {' '.join(argv[:4])}")
        result = subprocess.run(
            argv, cwd=self.root.parent, env=self.env, capture_output=True, text=True, timeout=remaining
        )
        if check and result.returncode != 0:
            pytest.fail(f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
        return result

    def rlplug(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(self.python, "-m", "rlplug.cli", *args, check=check)

    def pip(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.python, "-m", "pip", *args)


def _listed(venv: Venv) -> list[dict]:
    return json.loads(venv.rlplug("list", "--json").stdout)


def _tree(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


# Run inside the throwaway environment, once per backend: train mya2c-cartpole a couple of thousand
# steps, check that it learned, that a checkpoint round-trips through the public API into a fresh
# build that then trains on identically, and the conformance kit. Prints one JSON line.
BEHAVIOUR = r"""
import json, math, sys, tempfile
import numpy as np, rlplug, torch
from rlplug.util.rng import capture_rng_state, restore_rng_state
from rlplug.testing import check_cell

backend, overrides = sys.argv[1], ["num_envs=4", "hidden_sizes=[32, 32]"]
build = rlplug.build("mya2c-cartpole", backend=backend, overrides=overrides)
trainer = build.trainer

def policy():
    state = trainer.state_dict()
    return {k: v.clone() for k, v in (state["modules"]["policy"] if backend == "skrl" else state["actor"]).items()}

initial = policy()
history = []
trainer.train(8192, callbacks=[lambda t, metrics: history.append(metrics)])
trained_steps = trainer.env_steps
returns = [m["train/episode_return"] for m in history if "train/episode_return" in m]
quarter = max(1, len(returns) // 4)
moved = [k for k, v in policy().items() if v.is_floating_point() and not torch.equal(v, initial[k])]

observations = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
with tempfile.TemporaryDirectory() as tmp:
    rlplug.save(build, f"{tmp}/a2c.pt")
    fresh = rlplug.load(rlplug.build("mya2c-cartpole", backend=backend, overrides=overrides), f"{tmp}/a2c.pt").trainer
same_actions = bool(np.array_equal(trainer.act_deterministic(observations), fresh.act_deterministic(observations)))
rng = capture_rng_state()  # both continue from the same random streams
after_save = {k: v for k, v in trainer.step().items() if k != "train/update_ms"}
restore_rng_state(rng)
after_load = {k: v for k, v in fresh.step().items() if k != "train/update_ms"}
kit = check_cell("mya2c-cartpole", backend, overrides, steps=128)
print(json.dumps({
    "iterations": len(history), "env_steps": trained_steps,
    "terms": sorted(k for k in history[-1] if k.startswith("loss/")),
    "finite": all(math.isfinite(v) for m in history for v in m.values()),
    "early_return": float(np.mean(returns[:quarter])), "late_return": float(np.mean(returns[-quarter:])),
    "moved": len(moved), "parameters": len(initial), "same_actions": same_actions, "same_next_step": after_save == after_load,
    "kit": str(kit),
}))
"""


@slow
def test_example_plugin_installs_trains_and_uninstalls(tmp_path: Path) -> None:
    for module in ("pip", "setuptools", "skrl", "torchrl"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"installing and training the example needs {module} in the test environment")
    if _installed_here("my-a2c"):
        pytest.skip("my-a2c is installed in the test environment itself; uninstalling it from the "
                    "throwaway environment could not hide it")
    deadline = time.monotonic() + BUDGET_S
    example_before = _tree(EXAMPLE)
    # setuptools writes build/ and *.egg-info next to the sources: build a copy, never the repository
    source = tmp_path / "my-a2c"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns(*BUILD_ARTEFACTS))
    venv = Venv(tmp_path / "venv", deadline)

    assert not any(row["algorithm"] == "mya2c" for row in _listed(venv))

    venv.pip("install", "--no-deps", "--no-build-isolation", "--no-index", str(source))

    rows = [row for row in _listed(venv) if row["algorithm"] == "mya2c"]
    assert rows == [
        {
            "algorithm": "mya2c",
            "backend": backend,
            "kind": "on-policy",
            "action_spaces": ["discrete", "continuous"],
            "plugin": "my-a2c",
            "version": "0.1.0",
            "status": "ok",
        }
        for backend in ("skrl", "torchrl")
    ]
    recipes = {r["name"]: r for r in json.loads(venv.rlplug("recipes", "--json").stdout)}
    assert recipes["mya2c-cartpole"]["source"] == "plugin my-a2c"
    assert recipes["mya2c-cartpole"]["backends"] == ["skrl", "torchrl"]

    for backend in ("skrl", "torchrl"):
        summary = json.loads(venv.rlplug("train", "mya2c-cartpole", "--backend", backend, "--steps", "512", "--no-write", "--json").stdout)
        assert summary["recipe"] == "mya2c-cartpole@1"
        assert (summary["algorithm"], summary["backend"], summary["env"]) == ("mya2c", backend, "CartPole-v1")
        assert summary["steps"] == 512  # 4 rollouts of 16 steps x 8 envs: fixed-size iterations never overshoot
        assert summary["eval_episodes"] == 10 and summary["target"] == 150.0 and summary["run_dir"] is None
        assert math.isfinite(summary["eval_return_mean"]) and summary["eval_return_mean"] >= 1.0

        report = json.loads(venv.run(venv.python, "-c", BEHAVIOUR, backend).stdout.strip().splitlines()[-1])
        terms = {"skrl": ["loss/approx_kl", "loss/loss_entropy", "loss/loss_policy", "loss/loss_value"],
                 "torchrl": ["loss/entropy", "loss/loss_critic", "loss/loss_entropy", "loss/loss_objective"]}[backend]
        assert report["terms"] == terms and report["finite"], report
        assert (report["iterations"], report["env_steps"]) == (128, 8192), report
        # it learns: every policy parameter moved, and the episodes of the last quarter last longer (at 8192
        # steps: 1.6-3.0x the first quarter's over four seeds on each backend; at 2048 one seed read 1.08)
        assert report["moved"] == report["parameters"] > 0, report
        assert report["late_return"] > 1.2 * report["early_return"], report
        # a saved build loads into a fresh one that acts and trains on exactly like the original
        assert report["same_actions"] and report["same_next_step"], report
        assert "resume equivalence" in report["kit"], report

    venv.pip("uninstall", "-y", "my-a2c")

    assert not any(row["algorithm"] == "mya2c" for row in _listed(venv))
    gone = venv.rlplug("train", "mya2c-cartpole", "--no-write", check=False)
    assert gone.returncode == 2
    assert "unknown recipe 'mya2c-cartpole'" in gone.stderr
    assert _tree(EXAMPLE) == example_before, "installing the example wrote into the repository"


def test_a2c_skrl_update_matches_upstream_skrl() -> None:
    """The example's registered skrl loss through the family's delegating update is skrl's own A2C
    update: the same transitions and random streams give the same losses and parameters."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("skrl")
    from rlplug.backends.skrl import seed_skrl, stochastic_policy, value_model
    from rlplug.backends.skrl.env import make_vector_env
    from skrl.agents.torch.a2c import A2C, A2C_CFG
    from skrl.memories.torch import RandomMemory
    from skrl.resources.preprocessors.torch import RunningStandardScaler

    spec = importlib.util.spec_from_file_location("a2c_skrl_backend", EXAMPLE / "my_a2c" / "skrl_backend.py")
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)

    env = make_vector_env("Pendulum-v1", {}, 4, 0, "cpu")  # Gaussian: the loss's rsample draws too
    try:
        seed_skrl(0)
        models = {
            "policy": stochastic_policy(env.observation_space, env.action_space, "cpu", [32, 32], "tanh", initial_log_std=-0.5),
            "value": value_model(env.observation_space, env.action_space, "cpu", [32, 32], "tanh"),
        }

        def agent(cls, **extra):
            cfg = A2C_CFG(
                rollouts=16, mini_batches=2, learning_rate=1e-3, entropy_loss_scale=0.01, grad_norm_clip=0.5,
                observation_preprocessor=RunningStandardScaler,
                observation_preprocessor_kwargs={"size": env.observation_space, "device": "cpu"},
                value_preprocessor=RunningStandardScaler, value_preprocessor_kwargs={"size": 1, "device": "cpu"},
                experiment={"write_interval": 0, "checkpoint_interval": 0},
            )  # fmt: skip
            made = cls(models=copy.deepcopy(models), memory=RandomMemory(memory_size=16, num_envs=4), cfg=cfg, device="cpu",
                       observation_space=env.observation_space, action_space=env.action_space, **extra)  # fmt: skip
            made.init()
            made.enable_training_mode(True)
            return made

        upstream = agent(A2C)
        ours = agent(backend.LossDelegatingA2C, loss=backend.A2CLoss(entropy_loss_scale=0.01, value_loss_scale=1.0),
                     terms=("loss_policy", "loss_value", "loss_entropy"), reported=("approx_kl",))  # fmt: skip
        observations, _ = env.reset()
        total = 16 * 2
        for timestep in range(total):
            actions = []
            for one in (upstream, ours):
                torch.manual_seed(timestep)
                with torch.no_grad():
                    actions.append(one.act(observations, None, timestep=timestep, timesteps=total)[0])
            assert torch.equal(*actions)
            with torch.no_grad():
                next_observations, rewards, terminated, truncated, infos = env.step(actions[0])
            for one in (upstream, ours):
                one.record_transition(observations=observations, states=None, actions=actions[0], rewards=rewards.clone(),
                                      next_observations=next_observations, next_states=None, terminated=terminated,
                                      truncated=truncated, infos=infos, timestep=timestep, timesteps=total)  # fmt: skip
            for one in (upstream, ours):
                torch.manual_seed(10_000 + timestep)  # the update's minibatch permutation and Gaussian samples
                one.post_interaction(timestep=timestep, timesteps=total)
            observations = next_observations
    finally:
        env.close()

    for term, tag in (("loss_policy", "Policy loss"), ("loss_value", "Value loss"), ("loss_entropy", "Entropy loss")):
        got, expected = ours.tracking_data[f"Loss / {term}"], upstream.tracking_data[f"Loss / {tag}"]
        assert len(got) == len(expected) == 2 and got == pytest.approx(expected, rel=1e-5, abs=1e-7), term
    for role in ("policy", "value"):
        for a, b in zip(upstream.models[role].parameters(), ours.models[role].parameters()):
            assert torch.allclose(a, b, atol=1e-6), role
    assert upstream.optimizer.state and ours.optimizer.state  # both really stepped
