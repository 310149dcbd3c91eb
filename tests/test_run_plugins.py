"""A run trained with ``--plugin M`` records M; ``eval`` and ``resume`` import it again without being
told, and refuse with one line naming it when it cannot be imported."""

from __future__ import annotations

import json

from conftest import assert_one_line_error, run_cli

FAST = ["--set", "num_envs=2", "--set", "rollout_steps=64", "--set", "epochs=2", "--set", "eval_episodes=1", "--no-progress"]

# a one-stage override: the default models would not load this run's checkpoint
NARROW_MODELS = '''
import rlplug


@rlplug.hookimpl(tryfirst=True)
def rlplug_build_models(build):
    if not build.is_cell("ppo", "skrl"):
        return None
    from rlplug.backends.skrl import stochastic_policy, value_model

    spaces = (build.observation_space, build.action_space, build.device)
    return {"policy": stochastic_policy(*spaces, [8], "relu"), "value": value_model(*spaces, [8], "relu")}
'''


def test_eval_and_resume_import_the_plugins_a_run_was_trained_with(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "narrow_models.py").write_text(NARROW_MODELS)
    run_dir = tmp_path / "run"
    trained = run_cli("train", "ppo-cartpole", "--backend", "skrl", "--plugin", "narrow_models", "--steps", "256",
                      "--run-dir", str(run_dir), *FAST, paths=(plugins,))
    assert trained.returncode == 0, trained.stderr
    assert json.loads((run_dir / "recipe.json").read_text())["plugins"] == ["narrow_models"]

    evaluated = run_cli("eval", str(run_dir), "--json", paths=(plugins,))
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["steps"] == 256
    resumed = run_cli("resume", str(run_dir), "--steps", "384", "--json", "--no-progress", paths=(plugins,))
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["steps"] == 384

    assert_one_line_error(
        run_cli("eval", str(run_dir)),  # the plugin's folder is no longer on the path
        f"run {run_dir} was trained with plugin module 'narrow_models', which cannot be imported here "
        "(ModuleNotFoundError: No module named 'narrow_models'); install it, run rlplug in the directory that holds it, or put that directory on PYTHONPATH",
    )
