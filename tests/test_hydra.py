"""`rlplug-hydra`: recipes as Hydra configs, rlplug's checks inside Hydra, sweeps on Hydra's launchers, and
`rlplug bench --from-runs` over what they wrote."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_cli

pytestmark = pytest.mark.skipif(importlib.util.find_spec("hydra") is None, reason="the hydra extra is not installed")


def run_hydra(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "RL_LOGGING_LEVEL": "WARNING", "OMP_NUM_THREADS": "1", "RAY_AUTH_MODE": "disabled"}
    return subprocess.run([sys.executable, "-m", "rlplug.interop.hydra_app", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout)


def test_overrides_are_the_fields_that_differ_from_the_recipe():
    from rlplug.interop.hydra_app import overrides_from

    base = {"steps": 100, "backend": "skrl", "hyperparameters": {"learning_rate": 0.001, "hidden_sizes": [64, 64]},
            "torchrl": {}}
    chosen = {"steps": 100, "backend": "torchrl", "hyperparameters": {"learning_rate": 3e-4, "hidden_sizes": [32]},
              "torchrl": {"minibatch_size": 256}}
    assert overrides_from(base, chosen) == ["hyperparameters.learning_rate=0.0003", "hyperparameters.hidden_sizes=[32]",
                                            "torchrl.minibatch_size=256"]


def test_cfg_job_shows_every_hyperparameter_with_its_default(tmp_path):
    result = run_hydra("recipe=td3-pendulum", "--cfg", "job", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    shown = result.stdout
    for line in ("name: td3-pendulum", "algorithm: td3", "hyperparameters:", "  policy_delay: 2", "  target_noise_clip: 0.5", "  tau: 0.005"):
        assert line in shown, shown
    assert not (tmp_path / "runs").exists()  # --cfg composes; it trains and writes nothing


def test_a_bad_value_gets_rlplugs_line_and_exit_2(tmp_path):
    result = run_hydra("recipe=ppo-cartpole", "hyperparameters.learning_rate=abc", cwd=tmp_path)
    assert_one_line_error(result, "hyperparameter 'learning_rate' must be float, got str 'abc'")


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["hyperparameters.learning_rat=1e-3"], "recipe 'ppo-cartpole': unknown hyperparameter 'learning_rat' for ppo (did you mean 'learning_rate'?)"),
        (["-m", "hyperparameters.learning_rat=1e-3,3e-4"], "unknown hyperparameter 'learning_rat' for ppo (did you mean 'learning_rate'?)"),
        (["lerning_rate=1"], "lerning_rate: not a recipe field or a hyperparameter of this algorithm (did you mean 'learning_rate'?)"),
        (["hyperparameter.learning_rate=1"], "'hyperparameter' is not a table (did you mean 'hyperparameters'?)"),
        (["recipe=sac-pendulum", "skrl.foo.bar=1"], "unknown skrl setting 'foo' for sac"),
        (["torchrl.minibatch_size=64"], "'torchrl.minibatch_size' is not in the recipe's config; Hydra adds a key with +torchrl.minibatch_size=VALUE"),
        (["seed=[1"], "rlplug-hydra: no viable alternative at input '[1'"),
    ],
)
def test_what_hydra_refuses_gets_rlplugs_line_and_exit_2(tmp_path, overrides, expected):
    overrides = overrides if any(o.startswith("recipe=") for o in overrides) else ["recipe=ppo-cartpole", *overrides]
    result = run_hydra(*overrides, cwd=tmp_path)
    assert_one_line_error(result, expected)
    assert "Traceback" not in result.stderr and "HYDRA_FULL_ERROR" not in result.stderr and not (tmp_path / "runs").exists()


def test_overrides_hydra_takes_still_compose(tmp_path):
    result = run_hydra("recipe=ppo-cartpole", "hyperparameters.learning_rate=3e-4", "+torchrl.minibatch_size=64",
                       "backend=torchrl", "--cfg", "job", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "  learning_rate: 0.0003\n" in result.stdout and "  minibatch_size: 64\n" in result.stdout


HOOKS = "hooks=[{hook: log_scalar}, {hook: early_stopping, monitor: batch/next.reward_mean, patience: 2}]"


def test_cfg_job_shows_the_hooks_field_and_takes_hooks_in_hydras_grammar(tmp_path):
    assert "\nhooks: []\n" in run_hydra("recipe=ppo-cartpole", "--cfg", "job", cwd=tmp_path).stdout  # a field to replace
    result = run_hydra("recipe=ppo-cartpole", HOOKS, "--cfg", "job", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert ("hooks:\n- hook: log_scalar\n- hook: early_stopping\n  monitor: batch/next.reward_mean\n  patience: 2\n"
            in result.stdout), result.stdout


@pytest.mark.parametrize(("hooks", "expected"), [
    ("[{hook: early_stoping}]", "recipe 'ppo-cartpole': 'hooks'[0]: unknown hook 'early_stoping' (did you mean 'early_stopping'?)"),
    ("[{hook: log_scalar}, {hook: early_stopping, patiense: 3}]",
     "'hooks'[1]: early_stopping takes no argument 'patiense' (did you mean 'patience'?)"),
])  # fmt: skip
def test_a_bad_hook_gets_rlplugs_line_and_exit_2(tmp_path, hooks, expected):
    assert_one_line_error(run_hydra("recipe=ppo-cartpole", f"hooks={hooks}", cwd=tmp_path), expected)


@pytest.mark.slow
def test_a_hook_set_in_hydra_runs_in_the_job(tmp_path):
    """The early stopping of tests/test_trainer_hooks.py, set from Hydra: CartPole's reward is always 1, so it stops
    after the third 64-step iteration of a 2048-step budget."""
    result = run_hydra("recipe=ppo-cartpole", "steps=2048", "num_envs=2", "hyperparameters.rollout_steps=32",
                       "hyperparameters.epochs=2", "hyperparameters.hidden_sizes=[16,16]", "eval_episodes=1", HOOKS,
                       cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    (job,) = (tmp_path / "runs" / "hydra").iterdir()
    run_dir = job / "ppo-cartpole-skrl"
    assert json.loads((run_dir / "recipe.json").read_text())["recipe"]["hooks"] == [
        {"hook": "log_scalar"}, {"hook": "early_stopping", "monitor": "batch/next.reward_mean", "patience": 2}]
    assert json.loads((run_dir / "summary.json").read_text())["steps"] == 192


@pytest.mark.slow
def test_a_run_is_an_ordinary_run_directory_beside_hydras_record(tmp_path):
    result = run_hydra("recipe=ppo-cartpole", "steps=256", "num_envs=2", "hyperparameters.learning_rate=3e-4",
                       "+torchrl.minibatch_size=64", "backend=torchrl", "eval_episodes=2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (job,) = (tmp_path / "runs" / "hydra").iterdir()
    run_dir = job / "ppo-cartpole-torchrl"
    assert (job / ".hydra" / "config.yaml").is_file()
    recipe = json.loads((run_dir / "recipe.json").read_text())["recipe"]
    assert recipe["hyperparameters"]["learning_rate"] == 3e-4 and recipe["torchrl"] == {"minibatch_size": 64}
    assert json.loads((run_dir / "summary.json").read_text())["backend"] == "torchrl"
    evaluated = run_cli("eval", str(run_dir), "--episodes", "1", "--json")  # eval works on it as on any run
    assert evaluated.returncode == 0, evaluated.stderr


@pytest.mark.slow
def test_a_submitit_sweep_writes_run_directories_bench_reads(tmp_path):
    result = run_hydra("--multirun", "recipe=ppo-cartpole", "steps=128", "num_envs=2", "eval_episodes=2", "seed=0,1",
                       "hydra/launcher=submitit_local", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (sweep,) = (tmp_path / "runs" / "hydra-multirun").iterdir()
    assert sorted(p.name for p in sweep.iterdir() if p.name.isdigit()) == ["0", "1"]
    (row,) = json.loads(run_cli("bench", "--from-runs", str(sweep), "--json").stdout)
    assert (row["recipe"], row["backend"], row["seeds"], row["steps"]) == ("ppo-cartpole@1", "skrl", [0, 1], 128)


def fake_run(root: Path, name: str, seed: int, learning_rate: float, value: float) -> None:
    run_dir = root / name
    run_dir.mkdir(parents=True)
    recipe = {"name": "ppo-cartpole", "version": 1, "seed": seed, "target": 475.0, "tier": "quick",
              "hyperparameters": {"learning_rate": learning_rate, "epochs": 8}}
    (run_dir / "recipe.json").write_text(json.dumps({"recipe": recipe, "backend": "skrl"}))
    summary = {"recipe": "ppo-cartpole@1", "algorithm": "ppo", "backend": "skrl", "env": "CartPole-v1", "seed": seed,
               "steps": 1000, "step_unit": "env_steps", "wall_seconds": 1.0, "steps_per_second": 1000.0,
               "eval_episodes": 2, "eval_return_mean": value, "eval_return_std": 0.0, "target": 475.0,
               "target_metric": "return", "passed": value >= 475}
    (run_dir / "summary.json").write_text(json.dumps(summary))


def test_bench_from_runs_makes_one_row_per_swept_value(tmp_path):
    for job, (seed, lr, value) in enumerate([(0, 1e-3, 500.0), (1, 1e-3, 480.0), (0, 3e-4, 100.0), (1, 3e-4, 120.0)]):
        fake_run(tmp_path / "sweep" / str(job), "ppo-cartpole-skrl", seed, lr, value)
    (tmp_path / "sweep" / "9" / "unfinished").mkdir(parents=True)
    (tmp_path / "sweep" / "9" / "unfinished" / "recipe.json").write_text("{}")
    result = run_cli("bench", "--from-runs", str(tmp_path / "sweep"), "--json")
    assert result.returncode == 1, result.stderr  # one row misses its target
    assert "left out:" in result.stderr and "unfinished has no summary.json" in result.stderr
    rows = {r["recipe"]: (r["seeds"], r["mean"], r["passed"]) for r in json.loads(result.stdout)}
    assert rows == {"ppo-cartpole@1 [learning_rate=0.0003]": ([0, 1], 110.0, False),
                    "ppo-cartpole@1 [learning_rate=0.001]": ([0, 1], 490.0, True)}


def test_bench_from_runs_refuses_training_options_and_empty_folders(tmp_path):
    assert_one_line_error(run_cli("bench", "--from-runs", str(tmp_path), "--steps", "5"),
                          "bench --from-runs reads finished runs and trains nothing: --steps cannot apply")
    assert_one_line_error(run_cli("bench", "--from-runs", str(tmp_path)),
                          f"bench --from-runs: no finished run directories under {tmp_path}")


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed (the ray extra)")
def test_a_sweep_on_a_local_ray_instance(tmp_path):
    result = run_hydra("--multirun", "recipe=ppo-cartpole", "steps=128", "num_envs=2", "eval_episodes=2", "seed=0,1",
                       "hydra/launcher=rlplug_ray", "+hydra.launcher.init.num_cpus=2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (sweep,) = (tmp_path / "runs" / "hydra-multirun").iterdir()
    assert sorted((sweep / n / "ppo-cartpole-skrl" / "summary.json").is_file() for n in ("0", "1")) == [True, True]
