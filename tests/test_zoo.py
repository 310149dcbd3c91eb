"""``zoo:ALGO/ENV`` recipes: RL Baselines3 Zoo's entries translated key by key (rlplug.interop.zoo)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from rlplug.cli import main
from rlplug.pipeline.session import Session, backend_settings

pytest.importorskip("yaml")
if importlib.util.find_spec("rl_zoo3") is None:  # the zoo extra; its files are read as data, never imported
    pytest.skip("the zoo extra (rl_zoo3) is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def session():
    return Session()


def hp(session, name):
    return session.resolve(name).hyperparameters


def rows(name):
    from rlplug.interop.zoo import translation

    done = translation(name)
    return {r.key: r for r in done.translated}, {r.key: r for r in done.dropped}


def test_ppo_entry_translates_sb3_semantics(session):
    recipe = session.resolve("zoo:ppo/Acrobot-v1")  # n_envs 16, n_steps 256, batch 64, normalize: true
    assert (recipe.env, recipe.num_envs, recipe.steps, recipe.normalize_reward) == ("Acrobot-v1", 16, 1_000_000, True)
    h = recipe.hyperparameters
    # batch_size is SB3's minibatch size: 16 x 256 transitions in minibatches of 64
    assert (h["rollout_steps"], h["minibatches"], h["epochs"], h["gae_lambda"]) == (256, 64, 4, 0.94)
    assert h["normalize_observations"] is True and h["lr_schedule"] == "constant"
    assert (h["hidden_sizes"], h["activation"]) == ([64, 64], "tanh")  # SB3's PPO defaults
    atari = session.resolve("zoo:ppo/ALE/Breakout-v5")  # the Zoo's 'atari' entry for any ALE game
    assert (atari.atari, atari.terminal_on_life_loss, atari.frame_stack, atari.encoder) == (True, True, 4, "nature_cnn")
    assert (atari.hyperparameters["learning_rate"], atari.hyperparameters["lr_schedule"]) == (2.5e-4, "linear")
    assert atari.hyperparameters["hidden_sizes"] == []  # SB3 puts CnnPolicy's heads straight on NatureCNN
    # clip_range lin_0.1: the clip follows SB3's schedule too (rlplug.families.ClipSchedule)
    assert (atari.hyperparameters["clip_ratio"], atari.hyperparameters["clip_schedule"]) == (0.1, "linear")
    assert (h["clip_ratio"], h["clip_schedule"]) == (0.2, "constant")  # Acrobot's SB3 default 0.2
    translated, dropped = rows("zoo:ppo/ALE/Breakout-v5")
    assert translated["clip_range"].text == "clip_ratio = 0.1, clip_schedule = \"linear\""
    assert not any(key.startswith("clip_range") for key in dropped) and "env_wrapper AtariWrapper (FireResetEnv)" in dropped


def test_policy_kwargs_are_read_as_data_not_evaluated(session):
    h = hp(session, "zoo:ppo/HalfCheetah-v4")  # dict(log_std_init=-2, ortho_init=False, nn.ReLU, pi/vf 256x2)
    assert (h["hidden_sizes"], h["activation"], h["initial_log_std"]) == ([256, 256], "relu", -2.0)
    from rlplug.interop.zoo.sb3 import read_python_literal

    with pytest.raises(ValueError, match="cannot read"):
        read_python_literal("dict(net_arch=__import__('os').getcwd())")


def test_offpolicy_entries_translate_sb3_semantics(session):
    h = hp(session, "zoo:dqn/CartPole-v1")  # train_freq 256, gradient_steps 128, target_update_interval 10 env steps
    assert (h["train_every"], h["utd_ratio"], h["target_update"], h["target_update_period"]) == (256, 0.5, "hard", 128)
    assert (h["epsilon_decay_steps"], h["epsilon_end"], h["td_loss"]) == (8_000, 0.04, "huber")  # 0.16 x 50k
    assert hp(session, "zoo:dqn/Acrobot-v1")["target_update_period"] == 250  # 250 env steps, one gradient step each
    sac = hp(session, "zoo:sac/MountainCarContinuous-v0")  # ent_coef 0.1: a fixed alpha; gSDE with expln
    assert (sac["learn_alpha"], sac["initial_alpha"], sac["squash_actions"], sac["train_every"]) == (False, 0.1, True, 32)
    assert (sac["use_sde"], sac["initial_log_std"], sac["use_expln"], sac.get("sde_sample_freq", -1)) == (True, -3.67, True, -1)
    _, dropped = rows("zoo:sac/MountainCarContinuous-v0")
    assert not dropped
    td3 = hp(session, "zoo:td3/Pendulum-v1")  # SB3's noise is on actions scaled to [-1, 1]; Pendulum's are [-2, 2]
    assert (td3["exploration_noise"], td3["exploration_std"], td3["target_policy_noise"]) == ("gaussian", 0.2, 0.4)
    assert (td3["hidden_sizes"], td3["gamma"], td3["learning_starts"]) == ([400, 300], 0.98, 10_000)
    ddpg = hp(session, "zoo:ddpg/Pendulum-v1")  # translated as TD3's entries; SB3's DDPG has one critic, no delay
    assert (ddpg["exploration_noise"], ddpg["exploration_std"], ddpg["hidden_sizes"], ddpg["batch_size"]) == ("gaussian", 0.2, [400, 300], 256)
    assert not {"policy_delay", "target_policy_noise"} & set(ddpg)
    translated, _ = rows("zoo:ddpg/Pendulum-v1")
    assert translated["policy_kwargs.n_critics"].text == "the one critic of rlplug's ddpg"
    ou = hp(session, "zoo:ddpg/MountainCarContinuous-v0")  # SB3's OU noise, dt = 0.01
    assert (ou["exploration_noise"], ou["exploration_std"], ou["ou_theta"]) == ("ou", pytest.approx(0.05), pytest.approx(0.0015))


def test_a2c_entry_translates_sb3_semantics(session):
    recipe = session.resolve("zoo:a2c/CartPole-v1")  # n_envs 8, ent_coef 0: SB3's A2C defaults otherwise
    h = recipe.hyperparameters
    assert (recipe.num_envs, recipe.steps, h["rollout_steps"], h["minibatches"], h["gae_lambda"]) == (8, 500_000, 5, 1, 1.0)
    assert (h["optimizer"], h["rmsprop_alpha"], h["rmsprop_eps"], h["normalize_advantage"]) == ("rmsprop", 0.99, 1e-5, False)
    assert (h["learning_rate"], h["value_coef"], h["entropy_coef"]) == (7e-4, 0.5, 0.0)
    pendulum = session.resolve("zoo:a2c/Pendulum-v1")  # normalize, lin_7e-4, log_std_init -2, gSDE
    p = pendulum.hyperparameters
    assert (p["lr_schedule"], p["initial_log_std"], p["normalize_observations"], pendulum.normalize_reward) == ("linear", -2.0, True, True)
    _, dropped = rows("zoo:a2c/Pendulum-v1")
    assert set(dropped) == {"use_sde"} and "not this algorithm" in dropped["use_sde"].text
    _, dropped = rows("zoo:a2c/ALE/Pong-v5")  # SB3's RMSpropTFLike is not torch's RMSprop: named, not hidden
    assert "policy_kwargs.optimizer_class" in dropped and "RMSpropTFLike" in dropped["policy_kwargs.optimizer_class"].text


def test_n_step_returns_translate_for_dqn_and_qrdqn_only():
    import gymnasium as gym
    from rlplug.interop.zoo.translate import Translation, translate

    def translated(algorithm, entry):
        done = translate(Translation(ref=f"zoo:{algorithm}/X", algorithm=algorithm, env="CartPole-v1", entry="X", file="f"),
                         {"n_timesteps": 1000, "n_steps": 3, **entry}, lambda: gym.spaces.Discrete(2))  # fmt: skip
        return done.table["hyperparameters"], {r.key: r for r in done.dropped}

    dqn, dropped = translated("dqn", {})
    assert dqn["n_step"] == 3 and "n_steps" not in dropped
    qrdqn, dropped = translated("qrdqn", {})
    assert qrdqn["n_step"] == 3 and "n_steps" not in dropped
    sac, dropped = translated("sac", {})
    assert "n_step" not in sac and "exist in rlplug's dqn and qrdqn only" in dropped["n_steps"].text


def test_qrdqn_entries_translate_sb3_contrib_semantics(session):
    """zoo:qrdqn/ENV (sb3-contrib's QRDQN): DQN's keys, n_quantiles from policy_kwargs, sb3-contrib's defaults
    (200 quantiles, no gradient clip) where the entry is silent."""
    h = hp(session, "zoo:qrdqn/CartPole-v1")  # policy_kwargs: dict(net_arch=[256, 256], n_quantiles=10)
    assert (h["n_quantiles"], h["hidden_sizes"], h["max_grad_norm"]) == (10, [256, 256], 0.0)
    assert (h["train_every"], h["utd_ratio"], h["target_update"], h["target_update_period"]) == (256, 0.5, "hard", 128)
    assert (h["epsilon_decay_steps"], h["epsilon_end"]) == (8_000, 0.04) and "td_loss" not in h
    assert hp(session, "zoo:qrdqn/Acrobot-v1")["n_quantiles"] == 25  # its own policy_kwargs


def test_tqc_entries_translate_sb3_contrib_semantics(session):
    """zoo:tqc/ENV (sb3-contrib's TQC): SAC's keys, the truncation and sb3-contrib's critics (2 x 25 quantiles,
    256x256) where the entry is silent, n_critics / n_quantiles from policy_kwargs, the squashed policy."""
    h = hp(session, "zoo:tqc/Pendulum-v1")  # n_timesteps 20000, learning_rate 1e-3 and nothing else
    assert (h["n_critics"], h["n_quantiles"], h["top_quantiles_to_drop_per_net"]) == (2, 25, 2)
    assert (h["hidden_sizes"], h["critic_learning_rate"], h["squash_actions"]) == ([256, 256], 1e-3, True)
    translated, dropped = rows("zoo:tqc/MountainCarContinuous-v0")
    assert not dropped and "top_quantiles_to_drop_per_net" in translated
    assert translated["use_sde"].text == "use_sde = true" and translated["policy_kwargs.use_expln"].text == "use_expln = true"


def test_crossq_entries_translate_sb3_contrib_semantics(session):
    """zoo:crossq/ENV (sb3-contrib's CrossQ): SAC's keys less the target networks', the policy delay, the critics'
    batch renormalisation and CrossQPolicy's Adam beta1 0.5; its 1024-wide default critics are named as dropped."""
    h = hp(session, "zoo:crossq/Pendulum-v1")  # n_timesteps 20000, policy_delay 2, net_arch [256, 256]
    assert (h["policy_delay"], h["hidden_sizes"], h["critic_learning_rate"], h["adam_beta1"]) == (2, [256, 256], 1e-3, 0.5)
    assert (h["batch_norm_momentum"], h["batch_norm_eps"], h["renorm_warmup_steps"]) == (0.01, 0.001, 100_000)
    assert h["squash_actions"] is True and "tau" not in h and "target_update" not in h
    translated, dropped = rows("zoo:crossq/BipedalWalker-v3")  # net_arch=dict(pi=[256, 256], qf=[1024, 1024])
    assert "policy_kwargs.net_arch.qf" in dropped and translated["policy_kwargs.net_arch"].text.startswith("hidden_sizes = [256, 256]")
    translated, dropped = rows("zoo:crossq/MountainCarContinuous-v0")
    assert "use_sde" in translated and translated["policy_delay"].text == "policy_delay = 2"


def test_show_lists_translated_and_dropped_keys(capsys):
    assert main(["show", "zoo:sac/MountainCarContinuous-v0", "--backend", "torchrl"]) == 0
    out = capsys.readouterr().out
    assert "#   ent_coef = 0.1 -> learn_alpha = false, initial_alpha = 0.1" in out
    assert "#   use_sde = true -> use_sde = true" in out and "dropped" not in out
    assert main(["show", "zoo:ppo/MountainCarContinuous-v0"]) == 0  # PPO's gSDE: log_std_init -3.29, every rollout
    out = capsys.readouterr().out
    assert "#   use_sde = true -> use_sde = true" in out and "#   policy_kwargs.log_std_init = -3.29 -> initial_log_std = -3.29" in out
    assert main(["show", "zoo:dqn/CartPole-v1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"key": "gradient_steps", "value": 128, "origin": "zoo"}.items() <= data["zoo"]["translated"][9].items() or any(
        r["key"] == "gradient_steps" and r["to"].startswith("utd_ratio = 0.5") for r in data["zoo"]["translated"])


@pytest.mark.parametrize("name, expected", [
    ("zoo:ppo/Acrobot-v2", "unknown Zoo pair 'zoo:ppo/Acrobot-v2': the Zoo has no ppo entry for 'Acrobot-v2' (did you mean 'Acrobot-v1'?)"),
    ("zoo:ppp/Acrobot-v1", "(did you mean 'ppo'?)"),
    ("zoo:ppo", "a Zoo recipe is named zoo:ALGO/ENV"),
    ("zoo:ppo/Acrobot-v1@2", "has no version 2"),
])  # fmt: skip
def test_bad_zoo_names_are_one_line(name, expected, capsys):
    assert main(["show", name]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err


def test_without_the_extra_a_zoo_name_names_it(monkeypatch, capsys):
    from rlplug.interop import zoo
    from rlplug.interop.zoo import files

    caches = (files.hyperparams_dir, files.load, zoo.translation)
    monkeypatch.setattr(files, "DISTRIBUTION", "rl-zoo3-not-installed")
    for cache in caches:
        cache.cache_clear()
    try:
        assert main(["show", "zoo:ppo/Acrobot-v1"]) == 2
        assert main(["recipes", "--zoo"]) == 2
    finally:
        for cache in caches:
            cache.cache_clear()
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["rlplug: error: recipe 'zoo:ppo/Acrobot-v1' is read from RL Baselines3 Zoo's hyperparameter files, "
                   "which are not installed: pip install 'rlplug[zoo]'",
                   "rlplug: error: recipe 'zoo:...' is read from RL Baselines3 Zoo's hyperparameter files, which are not "
                   "installed: pip install 'rlplug[zoo]'"]  # fmt: skip


def test_recipes_lists_the_zoo_only_with_zoo(monkeypatch, capsys):
    from rlplug.interop.zoo import files

    def refuse(*args, **kwargs):
        raise AssertionError("listing recipes must not read the Zoo")

    monkeypatch.setattr(files, "load", refuse)
    assert main(["recipes"]) == 0
    assert "zoo:" not in capsys.readouterr().out
    monkeypatch.undo()
    assert main(["recipes", "--zoo", "--json"]) == 0
    listed = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert listed["zoo:ppo/BipedalWalker-v3"]["env_status"] == "installed" and listed["zoo:ppo/BipedalWalker-v3"]["verified"] == "not yet"
    from rlplug.interop.zoo import verified

    recorded = {pair for pair, entry in verified().items() if "result" in entry}
    assert recorded and all(listed[f"zoo:{pair}"]["verified"] == verified()[pair]["result"] for pair in recorded)
    assert listed["zoo:dqn/ALE/*"]["algorithm"] == "dqn"
    assert listed["zoo:ddpg/Pendulum-v1"]["algorithm_installed"] is True
    assert listed["zoo:sac/HalfCheetahBulletEnv-v0"]["env_status"] == "not registered here: pip install pybullet_envs_gymnasium"
    assert listed["zoo:ppo/Reacher-v2"]["env_status"] == "not makeable with gymnasium 1.x (needs mujoco-py)"


def test_every_pair_that_can_be_made_here_resolves_on_both_backends(session):
    from rlplug.interop.zoo import pairs

    names = [p.name for p in pairs(session.host.algorithms) if p.env_status == "installed" and not p.env.startswith("ALE/")]
    assert len(names) >= 40 and {"zoo:ddpg/Pendulum-v1", "zoo:ddpg/LunarLanderContinuous-v3"} <= set(names)
    for name in [*names, "zoo:ppo/ALE/Pong-v5", "zoo:dqn/ALE/Pong-v5"]:
        recipe = session.resolve(name)
        spec = session.host.algorithm(recipe.algorithm)
        for backend in ("skrl", "torchrl"):
            backend_settings(spec, backend, {**spec.defaults(), **recipe.hyperparameters}, recipe)


def test_a_user_recipe_extends_a_zoo_recipe(tmp_path, session):
    path = tmp_path / "mine.toml"
    path.write_text('[recipes.my-acrobot]\nextends = "zoo:dqn/Acrobot-v1"\nsteps = 500\n[recipes.my-acrobot.hyperparameters]\nbatch_size = 32\n')
    mine = Session(recipe_files=[str(path)]).resolve("my-acrobot")
    zoo = session.resolve("zoo:dqn/Acrobot-v1")
    assert mine.steps == 500 and mine.hyperparameters == {**zoo.hyperparameters, "batch_size": 32}


def test_a_zoo_recipe_trains_into_a_run_dir_that_evaluates(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["train", "zoo:dqn/CartPole-v1", "--steps", "300", "--set", "learning_starts=100", "--set", "train_every=50"]
    assert main(argv) == 0, capsys.readouterr().err
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name.startswith("zoo-dqn-CartPole-v1-skrl-")
    recorded = json.loads((run / "recipe.json").read_text())["recipe"]
    assert recorded["name"] == "zoo:dqn/CartPole-v1" and recorded["hyperparameters"]["td_loss"] == "huber"
    assert main(["eval", str(run), "--episodes", "1"]) == 0, capsys.readouterr().err


def test_zoo_listing_and_show_import_neither_torch_nor_the_zoo():
    code = (
        "import sys, contextlib, io\n"
        "from rlplug.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    for argv in (['recipes', '--zoo'], ['show', 'zoo:td3/Pendulum-v1'], ['show', 'zoo:ppo/Acrobot-v1']):\n"
        "        assert main(argv) == 0, argv\n"
        "print([m for m in ('torch', 'skrl', 'torchrl', 'rl_zoo3', 'stable_baselines3') if m in sys.modules])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stderr


def test_a_recorded_pair_is_judged_against_the_zoo_score_and_cites_it(session):
    """verified.toml's Zoo score and random return set the target (normalised score 0.9) and the reference."""
    from rlplug.interop.zoo import verified, zoo_target

    assert zoo_target(-73.506, -500.0) == -116.2
    pair = verified()["ppo/Swimmer-v4"]
    recipe = session.resolve("zoo:ppo/Swimmer-v4")
    assert recipe.target == zoo_target(pair["zoo_score"], pair["random_return"])
    assert pair["random_return"] < recipe.target < pair["zoo_score"]
    assert recipe.reference["value"] == pair["zoo_score"] and "Zoo" in recipe.reference["source"]


def test_bench_from_runs_judges_a_zoo_pair_by_its_verification_record():
    """A Zoo run trained before its pair's record existed (target: Gymnasium's threshold, or 0) is judged by
    the record as it is now; a first-party run keeps the target it was trained with."""
    from rlplug.cli.bench import judged_by
    from rlplug.interop.zoo import verified, zoo_target

    pair = verified()["sac/Pendulum-v1"]
    runs = [({"seed": s, "eval_return_mean": r, "target": 0.0, "passed": False}, {"target": 0.0}) for s, r in ((0, -120.0), (1, -400.0))]
    summaries, target, reference = judged_by("zoo:sac/Pendulum-v1@1", runs)
    assert target == zoo_target(pair["zoo_score"], pair["random_return"]) and reference["value"] == pair["zoo_score"]
    assert [s["passed"] for s in summaries] == [True, False] and all(s["target"] == target for s in summaries)
    kept, target, _ = judged_by("sac-pendulum@1", runs)
    assert target == 0.0 and [s["passed"] for s in kept] == [False, False]


def test_trpo_entry_translates_sb3_contrib_semantics(session):
    recipe = session.resolve("zoo:trpo/CartPole-v1")  # n_steps 512 x 2 envs, batch_size 512, 20 critic passes
    h = recipe.hyperparameters
    assert (recipe.num_envs, h["rollout_steps"], h["minibatches"], h["epochs"], h["gae_lambda"]) == (2, 512, 2, 20, 0.98)
    assert (h["cg_damping"], h["cg_steps"], h["max_kl"], h["line_search_shrink"], h["line_search_steps"]) == (1e-3, 15, 0.01, 0.8, 10)
    assert h["normalize_advantage"] and "max_grad_norm" not in h  # sb3-contrib's TRPO has no clip: trpo's own default 0
    acrobot = session.resolve("zoo:trpo/Acrobot-v1")  # normalize: observations and rewards
    assert acrobot.hyperparameters["normalize_observations"] and acrobot.normalize_reward
    _, dropped = rows("zoo:trpo/Pendulum-v1")  # gSDE, named
    assert set(dropped) == {"use_sde", "sde_sample_freq"}
    translated, _ = rows("zoo:trpo/HalfCheetah-v4")  # target_kl 0.04: the trust region's bound
    assert translated["target_kl"].text == "max_kl = 0.04"
