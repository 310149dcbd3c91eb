"""Nothing from the outside world escapes as a traceback, and nothing bad is taken silently (issue 20).

Every example the issue lists is one ``rlplug: error:`` line with exit code 2 here (the lock refusal is in
``test_lock.py``, kills in ``test_kills.py``, generated bad values in ``test_fuzz_recipes.py``); a refused
command leaves an existing run directory exactly as it was (names, sizes, mtimes, contents). An
unexpected exception is one line naming it and the file holding its traceback, exit code 1.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_cli

FAST = ["--set", "num_envs=2", "--set", "rollout_steps=64", "--set", "epochs=2", "--set", "eval_episodes=1", "--no-progress"]

BAD_ENV = '''
import gymnasium as gym

class Bad(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,))
    action_space = gym.spaces.Discrete(2)
    made = 0

    def __init__(self, fail_after=0):
        Bad.made += 1
        if Bad.made > fail_after:
            raise RuntimeError(f"cannot open the simulator (construction {Bad.made})")

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}

gym.register("Bad-v0", entry_point=Bad)
gym.register("BadLater-v0", entry_point=Bad, kwargs={"fail_after": 1})
'''

MODELS_STRING = '''
import rlplug

@rlplug.hookimpl(tryfirst=True)
def rlplug_build_models(build):
    return "a string"
'''


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under ``root``: its kind, size, mtime and (files) content hash."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        found[str(path.relative_to(root))] = (digest, info.st_size if path.is_file() else 0, info.st_mtime_ns)
    found["."] = ("dir", 0, root.stat().st_mtime_ns)
    return found


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("guards") / "run"
    result = run_cli("train", "ppo-cartpole", "--steps", "256", "--checkpoint-every", "64", "--run-dir", str(run_dir), *FAST)
    assert result.returncode == 0, result.stderr
    return run_dir


@pytest.fixture
def helpers(tmp_path):
    (tmp_path / "bad_env.py").write_text(BAD_ENV)
    (tmp_path / "models_string.py").write_text(MODELS_STRING)
    return tmp_path


# ---- the issue's examples: one line, exit 2 ----------------------------------------------------------------

# (argv, what the line says); RUN is the trained run directory, TMP a scratch directory
EXAMPLES = [
    # accepted silently before
    (["train", "ppo-cartpole", "--set", "gamma=1.5", "--no-write"], "hyperparameter 'gamma' = 1.5 is outside [0, 1]"),
    (["show", "ppo-cartpole", "--set", "minibatches=0"], "'minibatches' = 0 is outside [1, 2**24]"),
    (["show", "ppo-cartpole", "--set", "epochs=-1"], "'epochs' = -1 is outside [1, 10000]"),
    (["show", "sac-pendulum", "--set", "buffer_size=0"], "'buffer_size' = 0 is outside [1, 10**9]"),
    (["show", "ppo-cartpole", "--set", "eval_episodes=0"], "'eval_episodes' = 0 is outside [1, 10**6]"),
    (["eval", "RUN", "--episodes", "0"], "--episodes = 0 is outside [1, 10**6]"),
    (["eval", "RUN", "--episodes", "-1"], "--episodes = -1 is outside [1, 10**6]"),
    (["train", "ppo-cartpole", "--checkpoint-every", "0", "--no-write"], "--checkpoint-every = 0 is outside [1, 10**12]"),
    (["train", "ppo-cartpole", "--checkpoint-every", "-5", "--no-write"], "--checkpoint-every = -5 is outside [1, 10**12]"),
    (["train", "", "--no-write"], "unknown recipe ''"),
    (["train", "ppo-cartpole", "--steps", "1e30", "--no-write"], "'steps' = 1e+30 is outside [1, 10**12]"),
    # tracebacks before
    (["show", "ppo-cartpole", "--set", "learning_rate=-1"], "hyperparameter 'learning_rate' = -1 must be > 0 (Adam learning rate)"),
    (["show", "ppo-cartpole", "--set", "rollout_steps=0"], "'rollout_steps' = 0 is outside [1, 2**24]"),
    (["show", "ppo-cartpole", "--backend", "torchrl", "--set", "minibatches=0"], "'minibatches' = 0 is outside"),
    (["train", "ppo-cartpole", "--seed", "-1", "--no-write"], "'seed' = -1 is outside [0, 2**32 - 1]"),
    (["train", "ppo-cartpole", "--run-dir", "TMP/a-file"], "run directory TMP/a-file is a file, not a directory"),
    (["train", "ppo-cartpole", "--run-dir", "TMP/a-file/run"], "cannot create run directory TMP/a-file/run: TMP/a-file is a file"),
    (["recipes", "--recipes", "TMP"], "recipe file TMP is a directory; --recipes takes a TOML file"),
    (["train", "bad", "--recipes", "TMP/bad.toml", "--plugin", "bad_env", "--no-write"],
     "recipe 'bad': environment 'Bad-v0' failed to start: RuntimeError: cannot open the simulator (construction 1)"),
    (["train", "mappo-navigation", "--set", "env=vmas:nonexistent", "--no-write"], "'vmas:nonexistent'"),
    (["train", "mappo-simple-spread", "--set", "env_kwargs.N=0", "--no-write"], "environment 'mpe:simple_spread' failed to start"),
    (["train", "ppo-cartpole", "--plugin", "models_string", "--run-dir", "TMP/never", *FAST],
     "rlplug_build_models returned str 'a string' for ppo/skrl, not a table of named models"),
    (["dataset", "info", "TMP/list-dataset"], "metadata.json is unreadable: a JSON list, not an object"),
    (["dataset", "info", "TMP/str-dataset"], "metadata.json is unreadable: a JSON str, not an object"),
    # wrong exit code and unclear before
    (["show", "sac-pendulum", "--set", "batch_size=0"], "'batch_size' = 0 is outside [1, 2**20]"),
    (["show", "ppo-cartpole", "--set", "lr=-1"], "(did you mean 'learning_rate'?)"),
    (["train"], "train: the following arguments are required: name (see `rlplug train --help`)"),
    (["trian", "ppo-cartpole"], "argument COMMAND: invalid choice 'trian' (did you mean 'train'?)"),
    (["train", "ppo-cartpole", "--stpes", "5"], "train: unrecognized arguments: --stpes 5 (did you mean '--steps'?)"),
    (["train", "ppo-cartpole", "--steps"], "train: argument --steps: expected one argument"),
    (["eval"], "eval: the following arguments are required: run_dir"),
    (["dataset", "collect", "x", "--random"], "dataset collect: the following arguments are required: --env"),
    (["resume", "RUN", "--steps", "many"], "--steps must be int, got str 'many'"),
    (["dataset", "collect", "x", "--env", "CartPole-v1", "--random", "--noise", "2"], "--noise = 2 is outside [0, 1]"),
    (["dataset", "collect", "x", "--env", "CartPole-v1", "--random", "--steps", "0"], "--steps = 0 is outside [1, 10**12]"),
    (["dataset", "collect", "x", "--env", "Bad-v0", "--plugin", "bad_env", "--random"],
     "dataset collect --env: environment 'Bad-v0' failed to start: RuntimeError"),
]


def _fill(argv: list[str], run_dir: Path, tmp: Path) -> list[str]:
    return [a.replace("RUN", str(run_dir)).replace("TMP", str(tmp)) for a in argv]


def _scratch(tmp: Path) -> None:
    (tmp / "a-file").write_text("not a directory\n")
    (tmp / "bad.toml").write_text(
        '[recipes.bad]\nextends = "ppo-cartpole"\nenv = "Bad-v0"\n'
    )
    for name, text in (("list-dataset", "[1, 2]"), ("str-dataset", '"metadata"')):
        (tmp / name).mkdir()
        (tmp / name / "metadata.json").write_text(text)


@pytest.mark.parametrize("argv, expected", EXAMPLES, ids=[" ".join(a)[:60] for a, _ in EXAMPLES])
def test_issue_example_is_one_line_with_exit_2(argv, expected, trained_run, helpers):
    _scratch(helpers)
    before = snapshot(trained_run)
    result = run_cli(*_fill(argv, trained_run, helpers), paths=(helpers,), cwd=helpers, timeout=120)
    assert_one_line_error(result, _fill([expected], trained_run, helpers)[0])
    assert result.stderr.startswith("rlplug: error: ")
    assert snapshot(trained_run) == before
    assert not (helpers / "never").exists() and not (helpers / "runs").exists()  # a refused train leaves no directory


def test_refused_commands_leave_a_run_directory_as_it_was(trained_run):
    before = snapshot(trained_run)
    run = str(trained_run)
    refusals = [
        (["train", "ppo-cartpole", "--run-dir", run], "already holds a run (recipe ppo-cartpole@1, with a checkpoint); "
                                                       f"continue it with `rlplug resume {run}`"),
        (["train", "ppo-cartpole", "--run-dir", run, "--set", "gamma=1.5"], "'gamma' = 1.5 is outside [0, 1]"),
        (["resume", run, "--steps", "0"], "--steps = 0 is outside [1, 10**12]"),
        (["resume", run, "--steps", "1e30"], "--steps = 1e+30 is outside [1, 10**12]"),
        (["resume", run, "--checkpoint-every", "0"], "--checkpoint-every = 0 is outside"),
        (["resume", run, "--steps", "256"], "already reached 256 of 256 steps; pass --steps to go further"),
        (["resume", run, "--steps", "512", "--nproc", "0"], "--nproc and --nnodes must be at least 1 (got 0 and 1)"),
        (["eval", run, "--episodes", "1e30"], "--episodes = 1e+30 is outside [1, 10**6]"),
    ]
    for argv, expected in refusals:
        assert_one_line_error(run_cli(*argv, timeout=120), expected)
        assert snapshot(trained_run) == before, argv


def test_train_after_a_kill_before_the_first_checkpoint_points_at_resume(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "recipe.json").write_text(json.dumps({"backend": "skrl", "recipe": {"name": "ppo-cartpole", "version": 1}}))
    result = run_cli("train", "ppo-cartpole", "--run-dir", str(run_dir), "--no-progress")
    assert_one_line_error(result, f"already holds a run (recipe ppo-cartpole@1, stopped before its first checkpoint); "
                                  f"continue it with `rlplug resume {run_dir}`, or choose another --run-dir")
    assert_one_line_error(run_cli("eval", str(run_dir)), f"holds no checkpoint (checkpoints/latest.pt is missing); it stopped "
                                                          f"before its first one: `rlplug resume {run_dir}` trains it from step 0")


def test_a_failing_training_environment_is_one_line_and_leaves_no_run_directory(helpers):
    """The probe in ``prepare`` makes the env once; the trainer's own construction is guarded too."""
    (helpers / "later.toml").write_text('[recipes.later]\nextends = "ppo-cartpole"\nenv = "BadLater-v0"\n')
    result = run_cli("train", "later", "--recipes", str(helpers / "later.toml"), "--plugin", "bad_env", "--run-dir",
                     str(helpers / "run"), *FAST, paths=(helpers,))
    assert_one_line_error(result, "training environment: environment 'BadLater-v0' failed to start: RuntimeError: "
                                  "cannot open the simulator (construction 2)")
    assert not (helpers / "run").exists()


def test_unreadable_run_files_are_one_line(trained_run, tmp_path):
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(trained_run, run_dir)
    (run_dir / "metrics.csv").unlink()
    (run_dir / "metrics.csv").mkdir()  # cannot be written (as root, permissions would not stop it)
    before = snapshot(run_dir)
    assert_one_line_error(run_cli("resume", str(run_dir), "--steps", "512", "--no-progress"),
                          f"cannot write metrics file {run_dir / 'metrics.csv'}: Is a directory")
    assert snapshot(run_dir) == before
    (run_dir / "recipe.json").write_text("[1, 2]")
    assert_one_line_error(run_cli("eval", str(run_dir)), "recipe.json is unreadable: a JSON list, not an object")
    assert_one_line_error(run_cli("eval", str(tmp_path / "copy" / "metrics.csv")), "is not an rlplug run directory")


def test_bad_recipe_files_are_one_line(tmp_path):
    binary = tmp_path / "binary.toml"
    binary.write_bytes(bytes(range(256)))
    assert_one_line_error(run_cli("recipes", "--recipes", str(binary)), "is not UTF-8 text")
    broken = tmp_path / "broken.toml"
    broken.write_text("[recipes.x\n")
    assert_one_line_error(run_cli("recipes", "--recipes", str(broken)), "broken.toml: malformed TOML")
    assert_one_line_error(run_cli("recipes", "--recipes", str(tmp_path / "missing.toml")), "does not exist")


def test_previous_checkpoint_stands_in_for_a_missing_or_corrupt_latest(trained_run, tmp_path):
    import shutil

    import torch

    run_dir = tmp_path / "copy"
    shutil.copytree(trained_run, run_dir)
    latest = run_dir / "checkpoints" / "latest.pt"
    previous_steps = torch.load(run_dir / "checkpoints" / "previous.pt", weights_only=True)["rlplug"]["env_steps"]
    latest.write_bytes(latest.read_bytes()[:300])
    evaluated = run_cli("eval", str(run_dir), "--episodes", "1", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["steps"] == previous_steps
    assert evaluated.stderr.strip() == (f"rlplug: note: checkpoint {latest} is corrupt or truncated: 300 bytes that are not a "
                                        f"torch archive; using {latest.with_name('previous.pt')} (env step {previous_steps}) instead")
    resumed = run_cli("resume", str(run_dir), "--steps", "384", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert "using" in resumed.stderr and json.loads(resumed.stdout)["steps"] == 384
    assert (run_dir / "checkpoints" / "latest.pt.corrupt").is_file()  # set aside, not kept as the next previous.pt
    assert torch.load(latest, weights_only=True)["rlplug"]["env_steps"] == 384
    latest.unlink()
    evaluated = run_cli("eval", str(run_dir), "--episodes", "1")
    assert evaluated.returncode == 0 and f"checkpoint {latest} is missing; using" in evaluated.stderr, evaluated.stderr


def test_an_unexpected_exception_is_one_line_naming_its_traceback_file(tmp_path):
    plugin = tmp_path / "boom.py"
    plugin.write_text("import rlplug\n\n@rlplug.hookimpl(tryfirst=True)\ndef rlplug_build_models(build):\n    return 1 / 0\n")
    env = {"TMPDIR": str(tmp_path)}
    result = _run_with_env(["train", "ppo-cartpole", "--plugin", "boom", "--no-write"], tmp_path, env)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlplug: error: unexpected ZeroDivisionError: division by zero; "
                                                   f"the full traceback is in {tmp_path / 'rlplug'}"), result.stderr
    written = Path(lines[0].split("the full traceback is in ")[1].split(" (--debug")[0])
    assert "Traceback" in written.read_text() and "1 / 0" in written.read_text()
    debug = _run_with_env(["train", "ppo-cartpole", "--plugin", "boom", "--no-write", "--debug"], tmp_path, env)
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr and "1 / 0" in debug.stderr


def _run_with_env(argv: list[str], path: Path, extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**os.environ, **extra, "PYTHONPATH": os.pathsep.join([str(path), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "rlplug.cli", *argv], capture_output=True, text=True, env=env, timeout=120)


def test_show_prints_each_domain_after_its_value():
    result = run_cli("show", "ppo-cartpole")
    assert result.returncode == 0, result.stderr
    assert "gamma = 0.99  # [0, 1]" in result.stdout and "steps = 99840  # [1, 10**12]" in result.stdout
    assert "learning_rate = 0.001  # > 0" in result.stdout
    data = json.loads(run_cli("show", "ppo-cartpole", "--json").stdout)
    assert data["domains"]["hyperparameters"]["gamma"] == "[0, 1]" and data["domains"]["fields"]["seed"] == "[0, 2**32 - 1]"
    import tomllib

    assert tomllib.loads(result.stdout.split("\n# skrl's own settings")[0])["hyperparameters"]["gamma"] == 0.99  # still TOML
