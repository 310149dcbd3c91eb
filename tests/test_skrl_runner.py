"""``rlplug recipe from-skrl``: skrl Runner files (tests/data/skrl_runner_*.yaml, sources in their headers) as recipes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rlplug.cli import main
from rlplug.pipeline.session import Session, backend_settings
from rlplug.interop.skrl_runner import read_runner_file, translate_runner

pytest.importorskip("yaml")
DATA = Path(__file__).parent / "data"
FILES = {"ppo": DATA / "skrl_runner_ppo.yaml", "sac": DATA / "skrl_runner_sac.yaml"}


def translated(algorithm, tmp_path):
    out = tmp_path / f"{algorithm}.toml"
    assert main(["recipe", "from-skrl", str(FILES[algorithm]), "--env", "Pendulum-v1", "--name", f"r-{algorithm}",
                 "--out", str(out)]) == 0  # fmt: skip
    return Session(recipe_files=[str(out)]), out


@pytest.mark.parametrize("algorithm", ["ppo", "sac"])
def test_every_key_of_skrls_runner_files_is_translated_or_dropped(algorithm):
    cfg = read_runner_file(FILES[algorithm])
    table, lines = translate_runner(cfg, "Pendulum-v1", "r", source=str(FILES[algorithm]))
    text = "\n".join(lines)
    for section in ("models", "memory", "agent", "trainer"):
        for key in cfg[section]:
            assert f"  {section}.{key}" in text, (section, key)
    assert table["algorithm"] == algorithm and table["steps"] == cfg["trainer"]["timesteps"]


def skrl_runner_agent_cfg(algorithm, directory):
    """The agent configuration skrl's own Runner builds from the file, on Pendulum-v1."""
    import gymnasium as gym
    from skrl.envs.wrappers.torch import wrap_env
    from skrl.utils.runner.torch import Runner

    env = wrap_env(gym.make("Pendulum-v1"), wrapper="gymnasium")
    cfg = Runner.load_cfg_from_yaml(str(FILES[algorithm]))
    cfg["trainer"]["close_environment_at_exit"] = False  # closed below, not at interpreter exit
    cfg["agent"]["experiment"].update(directory=str(directory), write_interval=0, checkpoint_interval=0)  # no files
    try:
        return Runner(env, cfg).agent.cfg
    finally:
        env.close()


def test_translated_ppo_matches_skrls_runner_agent(tmp_path):
    session, _ = translated("ppo", tmp_path)
    recipe = session.resolve("r-ppo")
    spec = session.host.algorithm("ppo")
    ours = backend_settings(spec, "skrl", {**spec.defaults(), **recipe.hyperparameters}, recipe)
    theirs = skrl_runner_agent_cfg("ppo", tmp_path)
    assert theirs.learning_rate == (ours["learning_rate"],) * 2  # skrl's Runner: one rate per model (policy, value)
    for key in ("rollouts", "learning_epochs", "mini_batches", "discount_factor", "gae_lambda", "grad_norm_clip", "ratio_clip", "value_clip", "entropy_loss_scale", "value_loss_scale", "kl_threshold",
                "time_limit_bootstrap"):  # fmt: skip
        assert ours[key] == getattr(theirs, key), key
    assert {ours["learning_rate_scheduler"]} == {s.__name__ for s in theirs.learning_rate_scheduler} == {"KLAdaptiveLR"}
    assert [ours["learning_rate_scheduler_kwargs"]] * 2 == list(theirs.learning_rate_scheduler_kwargs)
    assert ours["observation_preprocessor"] == theirs.observation_preprocessor.__name__ == "RunningStandardScaler"
    assert ours["value_preprocessor"] == theirs.value_preprocessor.__name__
    assert (ours["hidden_sizes"], ours["activation"]) == ([32, 32], "elu")
    assert recipe.steps == 4800 and recipe.seed == 42


def test_translated_sac_matches_skrls_runner_agent(tmp_path):
    session, _ = translated("sac", tmp_path)
    recipe = session.resolve("r-sac")
    spec = session.host.algorithm("sac")
    ours = backend_settings(spec, "skrl", {**spec.defaults(), **recipe.hyperparameters}, recipe)
    theirs = dataclasses.asdict(skrl_runner_agent_cfg("sac", tmp_path))
    for key in ("batch_size", "discount_factor", "grad_norm_clip", "learn_entropy", "initial_entropy_value", "target_entropy"):
        assert ours[key] == theirs[key], key
    assert ours["learning_rate"] == list(theirs["learning_rate"]) and ours["tau"] == theirs["polyak"]
    assert ours["learning_starts"] == theirs["learning_starts"] and ours["utd_ratio"] == theirs["gradient_steps"]
    assert (ours["buffer_size"], ours["hidden_sizes"], ours["squash_actions"]) == (15_000, [400, 300], False)


@pytest.mark.parametrize("algorithm, steps", [("ppo", 256), ("sac", 300)])
def test_translated_recipes_train_on_skrl(algorithm, steps, tmp_path, capsys):
    _, out = translated(algorithm, tmp_path)
    argv = ["train", f"r-{algorithm}", "--recipes", str(out), "--steps", str(steps), "--no-write", "--set", "eval_episodes=1"]
    assert main(argv) == 0, capsys.readouterr().err


@pytest.mark.parametrize("text, expected", [
    ("agent: {class: DQN}\ntrainer: {timesteps: 10}\n", "agent class 'DQN' is not translated (rlplug reads skrl PPO, SAC Runner files)"),
    ("models: {}\n", "has no 'agent' section"),
    ("agent: {class: PPO}\n", "the trainer section has no 'timesteps'"),
])  # fmt: skip
def test_bad_runner_files_are_one_line(text, expected, tmp_path, capsys):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    assert main(["recipe", "from-skrl", str(path), "--env", "Pendulum-v1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err


def test_an_existing_out_file_is_kept(tmp_path, capsys):
    out = tmp_path / "mine.toml"
    out.write_text("# mine\n")
    assert main(["recipe", "from-skrl", str(FILES["ppo"]), "--env", "Pendulum-v1", "--out", str(out)]) == 2
    assert out.read_text() == "# mine\n" and "exists" in capsys.readouterr().err
