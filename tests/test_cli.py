"""The command line in a subprocess: cheap commands stay cheap, bad input gives one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import assert_one_line_error, run_cli

HEAVY = ("torch", "skrl", "torchrl", "tensordict", "numpy", "gymnasium")


def test_listing_commands_import_no_torch():
    code = (
        "import sys, contextlib, io\n"
        "from rlplug.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    for argv in (['list'], ['recipes'], ['show', 'ppo-cartpole'], ['show', 'ppo-pendulum', '--backend', 'torchrl']):\n"
        "        assert main(argv) == 0, argv\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_help_lists_every_command():
    result = run_cli("--help")
    for command in ("list", "recipes", "show", "losses", "train", "eval", "resume", "bench", "doctor"):
        assert command in result.stdout


def test_show_prints_translated_backend_settings():
    result = run_cli("show", "ppo-cartpole", "--backend", "torchrl", "--set", "epochs=3")
    assert result.returncode == 0, result.stderr
    assert "[torchrl]" in result.stdout and "num_epochs = 3" in result.stdout
    assert "frames_per_batch = 512" in result.stdout
    skrl = run_cli("show", "ppo-cartpole", "--json")
    data = json.loads(skrl.stdout)
    assert data["backend_settings"]["skrl"]["learning_rate_scheduler"] == "KLAdaptiveLR"
    assert data["recipe"]["hyperparameters"]["rollout_steps"] == 64


def test_versioned_recipe_names():
    assert run_cli("show", "ppo-cartpole@1").returncode == 0
    assert_one_line_error(run_cli("show", "ppo-cartpole@7"), "recipe 'ppo-cartpole' has no version 7 (versions: 1)")


def test_unknown_recipe():
    assert_one_line_error(run_cli("train", "ppo-cartpol"), "unknown recipe 'ppo-cartpol' (did you mean 'ppo-cartpole'?)")


def test_unknown_backend():
    assert_one_line_error(
        run_cli("train", "ppo-cartpole", "--backend", "torchlr", "--no-write"),
        "algorithm 'ppo' has no backend 'torchlr' (did you mean 'torchrl'?); it runs on skrl, torchrl",
    )


def test_unknown_algorithm(tmp_path):
    recipes = tmp_path / "r.toml"
    recipes.write_text('[recipes.mine]\nalgorithm = "ppp"\nenv = "CartPole-v1"\nbackend = "skrl"\nsteps = 10\ntarget = 1.0\n')
    assert_one_line_error(
        run_cli("show", "mine", "--recipes", str(recipes)),
        "unknown algorithm 'ppp': no installed plugin provides it (did you mean 'ppo'?)",
    )


def test_missing_first_party_plugin_says_what_to_install():
    # a host that reads no entry points stands for an environment where rlplug-sac is not installed
    from rlplug.pipeline.discovery import PluginHost
    from rlplug.errors import UnknownNameError

    with pytest.raises(UnknownNameError) as caught:
        PluginHost(entry_points=False).algorithm("sac")
    assert "unknown algorithm 'sac': no installed plugin provides it (install it: pip install ./plugins/sac" in str(caught.value)


def test_unknown_hyperparameter_in_set():
    assert_one_line_error(
        run_cli("train", "ppo-cartpole", "--set", "hyperparameters.learning_rat=1e-3", "--no-write"),
        "unknown hyperparameter 'learning_rat' for ppo (did you mean 'learning_rate'?)",
    )
    assert_one_line_error(run_cli("show", "ppo-cartpole", "--set", "entropy_coeff=0.1"), "(did you mean 'entropy_coef'?)")


def test_wrong_type_in_set():
    assert_one_line_error(
        run_cli("show", "ppo-cartpole", "--set", "epochs=many"), "hyperparameter 'epochs' must be int, got str 'many'"
    )
    assert_one_line_error(run_cli("show", "ppo-cartpole", "--set", "lr_schedule=cosine"), "hyperparameter 'lr_schedule' = 'cosine' is not one of 'constant', 'linear', 'kl_adaptive'")


def test_unknown_training_hook_in_set():
    assert_one_line_error(
        run_cli("show", "ppo-cartpole", "--set", 'hooks=[{hook = "early_stoping", patience = 3}]'),
        "recipe 'ppo-cartpole': 'hooks'[0]: unknown hook 'early_stoping' (did you mean 'early_stopping'?)",
    )


def test_unknown_backend_setting():
    assert_one_line_error(
        run_cli("show", "ppo-cartpole", "--set", "skrl.rolouts=8"), "unknown skrl setting 'rolouts' for ppo (did you mean 'rollouts'?)"
    )


def test_malformed_recipe_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[recipes.x]\nsteps = \n")
    assert_one_line_error(run_cli("recipes", "--recipes", str(bad)), "bad.toml: malformed TOML: Invalid value (at line 2, column 9)")


def test_wrong_type_in_recipe_file(tmp_path):
    bad = tmp_path / "typed.toml"
    bad.write_text('[recipes.x]\nextends = "ppo-cartpole"\nnum_envs = "8"\n')
    assert_one_line_error(run_cli("show", "x", "--recipes", str(bad)), "'num_envs' must be int, got str '8'")


def test_run_dir_that_does_not_exist(tmp_path):
    assert_one_line_error(run_cli("eval", str(tmp_path / "nope")), f"run directory {tmp_path / 'nope'} does not exist")


def test_run_dir_without_checkpoint(tmp_path):
    (tmp_path / "recipe.json").write_text(json.dumps({"backend": "skrl", "recipe": {}}))
    assert_one_line_error(run_cli("eval", str(tmp_path)), "holds no checkpoint (checkpoints/latest.pt is missing)")
    # resume trains a run with no checkpoint from step 0 (test_kills.py), given a recipe it can read
    assert_one_line_error(run_cli("resume", str(tmp_path)), "recipe.json is unreadable")


def test_bad_plugin_module():
    assert_one_line_error(run_cli("list", "--plugin", "no_such_module_xyz"), "--plugin no_such_module_xyz: cannot import it: ModuleNotFoundError")


def test_losses_lists_terms_set_keys_and_estimator():
    result = run_cli("losses", "ppo", "--json")
    assert result.returncode == 0, result.stderr
    rows = {(r["backend"], r["name"]): r for r in json.loads(result.stdout)}
    assert rows[("skrl", "clip")]["optimised"] == ["loss_policy", "loss_value", "loss_entropy"]
    torchrl = rows[("torchrl", "clip")]
    assert torchrl["optimised"] == ["loss_objective", "loss_critic", "loss_entropy"]
    assert torchrl["value_estimator"] == "GAE"
    assert {"advantage", "value_target", "sample_log_prob"} <= set(torchrl["set_keys"])


def test_action_space_mismatch_names_the_algorithms_that_fit():
    # refused while preparing: nothing is built, no torch import is needed to say so
    dqn = run_cli("train", "dqn-cartpole", "--set", "env=Pendulum-v1", "--no-write")
    assert_one_line_error(dqn, "dqn on skrl cannot handle the continuous action space of 'Pendulum-v1'")
    assert "for continuous actions use a2c, crossq, ddpg, ppo, redq, reinforce, rpo, sac, td3, tqc or trpo" in dqn.stderr
    for recipe in ("tqc-pendulum", "td3-pendulum"):
        result = run_cli("train", recipe, "--backend", "torchrl", "--set", "env=CartPole-v1", "--no-write")
        assert_one_line_error(result, "cannot handle the discrete action space of 'CartPole-v1'")
        assert "for discrete actions use a2c, c51, dqn, ppo, qrdqn, reinforce, sac or trpo" in result.stderr
    # a multi-agent algorithm is told the multi-agent ones
    qmix = run_cli("train", "vdn-simple-spread", "--set", "env_kwargs.continuous_actions=true", "--no-write")
    assert_one_line_error(qmix, "qmix on skrl cannot handle the continuous action space of 'mpe:simple_spread'")
    assert "for continuous actions use ippo or mappo" in qmix.stderr


def test_listing_commands_import_only_what_they_use():
    """issue 51: `list` reads no recipe and builds nothing; `recipes` and `show` read recipes but probe no environment
    and load no exporter (their start-up is measured against a bare pluggy + entry-points interpreter,
    benchmarks/startup.py's floor row)."""
    layers = ("recipes", "envs", "results", "interop", "hooks", "runs", "data", "tuning")
    code = (
        "import sys, contextlib, io\n"
        "from rlplug.cli import main\n"
        "def loaded():\n"
        f"    return sorted(m for m in sys.modules if m.startswith('rlplug.') and m.split('.')[1] in {layers!r}\n"
        "                  or m in ('tomllib', 'difflib', 'logging', 'rlplug.util.outputs'))\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['list']) == 0\n"
        "    print(loaded(), file=sys.stderr)\n"
        "    assert main(['recipes']) == 0 and main(['show', 'ppo-cartpole']) == 0\n"
        "print(loaded())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "[]"
    after_show = eval(result.stdout)  # noqa: S307 - our own print of a list of module names
    assert all(m.startswith("rlplug.recipes.") or m == "rlplug.recipes" or m == "tomllib" for m in after_show), after_show


def test_the_export_formats_the_parser_offers_are_the_exporter_s():
    from rlplug.cli.export import EXPORT_FORMATS
    from rlplug.results.export import FORMATS

    assert EXPORT_FORMATS == FORMATS


def test_startup_benchmark_measures_the_floor_beside_the_listing_commands():
    import json
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "startup.py"
    result = subprocess.run([sys.executable, str(script), "--repeats", "1", "--listing-only", "--json"], capture_output=True,
                            text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["floor: python, pluggy and the rlplug.plugins entry points"]["median"] > 0
    for command in ("list", "recipes", "show ppo-cartpole"):  # a row each beside the floor (timings: benchmarks, not here)
        assert data[f"rlplug {command} ÷ floor"]["median"] > 0
