"""`rlplug show NAME --backend torchrl --format hydra`: a recipe as a config in TorchRL's own trainer config groups,
composed by Hydra and trained by TorchRL's trainer in a process that never imports rlplug."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlplug.cli import main

pytestmark = pytest.mark.skipif(importlib.util.find_spec("hydra") is None, reason="the hydra extra is not installed")

# Compose each file with Hydra's compose API, instantiate cfg.trainer, train; what it trained, as JSON. TorchRL only.
RUNNER = textwrap.dedent("""
    import json, sys, time, warnings
    from pathlib import Path
    warnings.simplefilter("ignore")
    import hydra, torch
    import torchrl.trainers.algorithms.configs  # registers TorchRL's config groups in Hydra's ConfigStore
    torch.set_num_threads(1)
    out = {}
    for job in json.loads(sys.argv[1]):
        path = Path(job["file"])
        with hydra.initialize_config_dir(config_dir=str(path.parent), version_base=None):
            cfg = hydra.compose(config_name=path.stem, overrides=job["overrides"])
        start = time.perf_counter()
        trainer = hydra.utils.instantiate(cfg.trainer)
        before = [p.detach().clone() for p in trainer.loss_module.parameters()]
        trainer.train()
        after = list(trainer.loss_module.parameters())
        loss, stepper = trainer.loss_module, getattr(trainer, "optimization_stepper", None)
        exploration = getattr(trainer, "exploration_module", None)
        out[job["name"]] = {"trainer": type(trainer).__name__, "loss": type(loss).__name__,
                            "frames": trainer.collected_frames, "buffer": len(trainer.replay_buffer),
                            "changed": sum(not torch.equal(b, a) for b, a in zip(before, after)),
                            "seconds": round(time.perf_counter() - start, 2),
                            # what makes the TD3 trainer DDPG's: one critic, no smoothing or delay, Gaussian noise
                            "critics": getattr(loss, "num_qvalue_nets", None),
                            "policy_noise": getattr(loss, "policy_noise", None),
                            "policy_delay": getattr(stepper, "policy_update_delay", None),
                            "actor_lr": getattr(stepper, "optimizer_actor", trainer.optimizer).param_groups[0]["lr"],
                            "exploration_std": float(exploration.std * exploration.sigma) if exploration else None}
    out["rlplug_imported"] = any(name == "rlplug" or name.startswith("rlplug.") for name in sys.modules)
    assert "rlplug" not in sys.modules
    print("RESULT " + json.dumps(out))
""")

SMALL_OFFPOLICY = ["collector.total_frames=150", "collector.init_random_frames=100", "collector.frames_per_batch=50",
                   "trainer.optim_steps_per_batch=10", "replay_buffer.batch_size=32"]  # fmt: skip
OFFLINE = ["collector.total_frames=1", "trainer.optim_steps_per_batch=20", "replay_buffer.batch_size=32"]
# recipe, whether it reads the test dataset, Hydra overrides that keep each run to a few hundred frames
JOBS = {
    "ppo": ("ppo-cartpole", False, ["collector.total_frames=256", "collector.frames_per_batch=128", "trainer.num_epochs=2",
                                    "replay_buffer.storage.max_size=128", "replay_buffer.batch_size=64",
                                    "training_env.base_env.num_workers=2"]),
    "sac": ("sac-pendulum", False, SMALL_OFFPOLICY),
    "tqc": ("tqc-pendulum", False, SMALL_OFFPOLICY),
    "dqn": ("dqn-cartpole", False, [*SMALL_OFFPOLICY, "collector.frames_per_batch=64", "collector.total_frames=256"]),
    "td3": ("td3-pendulum", False, SMALL_OFFPOLICY),
    "ddpg": ("ddpg-pendulum", False, [*SMALL_OFFPOLICY, "optimizer_actor.lr=5e-4"]),
    "iql": ("iql-pendulum-medium", True, OFFLINE),
    "cql": ("cql-pendulum-medium", True, OFFLINE),
    "a2c": ("a2c-cartpole", False, ["collector.total_frames=160", "collector.frames_per_batch=40",
                                    "replay_buffer.storage.max_size=40", "replay_buffer.batch_size=40",
                                    "training_env.base_env.num_workers=2"]),
    "reinforce": ("reinforce-cartpole", False, ["collector.total_frames=256", "collector.frames_per_batch=128",
                                                "replay_buffer.storage.max_size=128", "replay_buffer.batch_size=128",
                                                "training_env.base_env.num_workers=2"]),
}  # fmt: skip


def export(recipe, out, *extra):
    return main(["show", recipe, "--backend", "torchrl", "--format", "hydra", "--out", str(out), *extra])


@pytest.fixture(scope="module")
def exported(tmp_path_factory, random_dataset):
    folder = tmp_path_factory.mktemp("torchrl_configs")
    dataset = random_dataset("Pendulum-v1")
    for name, (recipe, offline, _) in JOBS.items():
        extra = ["--set", f"dataset={dataset}"] if offline else []
        assert export(recipe, folder / f"{name}.yaml", *extra) == 0
    return folder


@pytest.fixture(scope="module")
def trained(exported):
    """Every exported file trained by TorchRL alone, in one subprocess (one import of TorchRL and Hydra for all)."""
    jobs = [{"name": name, "file": str(exported / f"{name}.yaml"), "overrides": [*overrides, "trainer.progress_bar=false"]}
            for name, (_, _, overrides) in JOBS.items()]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # rlplug's source tree is not on the path
    env.update(OMP_NUM_THREADS="1", RL_LOGGING_LEVEL="WARNING")
    result = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(jobs)], capture_output=True, text=True,
                            cwd=exported, env=env, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(line.removeprefix("RESULT "))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(JOBS))
def test_each_algorithm_trains_through_torchrls_own_trainer_without_rlplug(trained, name):
    assert trained["rlplug_imported"] is False
    run = trained[name]
    trainer, loss = {"ppo": ("PPOTrainer", "ClipPPOLoss"), "ddpg": ("TD3Trainer", "TD3Loss"),
                      "reinforce": ("ReinforceTrainer", "ReinforceLoss"), "tqc": ("SACTrainer", "TQCLoss")}.get(
        name, (f"{name.upper()}Trainer", f"{name.upper()}Loss"))  # fmt: skip
    assert (run["trainer"], run["loss"]) == (trainer, loss)
    *_, total = (o for o in JOBS[name][2] if o.startswith("collector.total_frames="))  # the last one given wins
    assert run["frames"] == int(total.split("=")[1])
    assert run["changed"] > 0  # the optimiser moved the loss's parameters


@pytest.mark.slow
def test_ddpg_runs_as_td3s_trainer_with_one_critic_no_smoothing_no_delay_and_its_own_noise(trained):
    ddpg, td3 = trained["ddpg"], trained["td3"]
    assert (ddpg["critics"], ddpg["policy_noise"], ddpg["policy_delay"]) == (1, 0.0, 1)
    assert (td3["critics"], td3["policy_noise"], td3["policy_delay"]) == (2, 0.2, 2)
    # rlplug's exploration_std is in action units, as its own AdditiveGaussianModule reads it (not scaled by the range)
    assert (ddpg["exploration_std"], td3["exploration_std"]) == (pytest.approx(0.2), pytest.approx(0.1))
    assert (ddpg["actor_lr"], td3["actor_lr"]) == (5e-4, 1e-3)  # the actor's own Adam, overridable alone


def test_td3_loss_with_one_critic_and_no_smoothing_is_ddpgs_loss():
    """The export's claim behind DDPG on the TD3 trainer: TD3Loss (num_qvalue_nets=1, policy_noise=0, noise_clip=0)
    gives the value and actor losses and gradients of DDPGLoss with target actor and critic (rlplug's DDPG loss)."""
    torch = pytest.importorskip("torch")
    from tensordict import TensorDict
    from tensordict.nn import TensorDictModule, TensorDictSequential
    from torchrl.modules import MLP, TanhModule, ValueOperator
    from torchrl.objectives import DDPGLoss, TD3Loss

    torch.manual_seed(0)
    actor = TensorDictSequential(TensorDictModule(MLP(in_features=3, out_features=1, num_cells=[16]), ["observation"],
                                                  ["param"]), TanhModule(["param"], ["action"], low=-2.0, high=2.0))
    qvalue = ValueOperator(MLP(in_features=4, out_features=1, num_cells=[16]), in_keys=["observation", "action"])
    ddpg = DDPGLoss(actor, qvalue, delay_actor=True, delay_value=True, loss_function="l2")
    td3 = TD3Loss(actor, qvalue, bounds=(-2.0, 2.0), num_qvalue_nets=1, policy_noise=0.0, noise_clip=0.0,
                  loss_function="l2")
    for loss in (ddpg, td3):
        loss.make_value_estimator(gamma=0.98)
    with torch.no_grad():  # the same online and (moved away from them) target weights in both losses
        td3.actor_network_params.data.update_(ddpg.actor_network_params.data)
        td3.qvalue_network_params.data.update_(ddpg.value_network_params.data.unsqueeze(0))
        for targets in (ddpg.target_actor_network_params, ddpg.target_value_network_params):
            for key, p in targets.items(True, True):
                if key[-1] in ("weight", "bias"):  # not TanhModule's bounds, buffers in the actor's parameters
                    p.add_(0.1 * torch.randn_like(p))
        td3.target_actor_network_params.data.update_(ddpg.target_actor_network_params.data)
        td3.target_qvalue_network_params.data.update_(ddpg.target_value_network_params.data.unsqueeze(0))
    n = 64
    batch = TensorDict({"observation": torch.randn(n, 3), "action": 4 * torch.rand(n, 1) - 2,
                        "next": {"observation": torch.randn(n, 3), "reward": torch.randn(n, 1),
                                 "done": torch.rand(n, 1) < 0.1, "terminated": torch.rand(n, 1) < 0.1}}, [n])
    batch["next", "done"] |= batch["next", "terminated"]
    pairs = ((ddpg.loss_value, td3.value_loss, ddpg.value_network_params, td3.qvalue_network_params, True),
             (ddpg.loss_actor, td3.actor_loss, ddpg.actor_network_params, td3.actor_network_params, False))
    for ddpg_term, td3_term, ddpg_params, td3_params, stacked in pairs:
        ddpg_loss, td3_loss = ddpg_term(batch.clone())[0], td3_term(batch.clone())[0]
        assert td3_loss.item() == pytest.approx(ddpg_loss.item(), rel=1e-6)
        ddpg_grads = torch.autograd.grad(ddpg_loss, [p for p in ddpg_params.values(True, True) if p.requires_grad])
        td3_grads = torch.autograd.grad(td3_loss, [p for p in td3_params.values(True, True) if p.requires_grad])
        assert len(ddpg_grads) == len(td3_grads) == 4  # two layers' weights and biases
        for a, b in zip(ddpg_grads, td3_grads):
            torch.testing.assert_close(b[0] if stacked else b, a)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["iql", "cql"])
def test_offline_trainers_start_from_the_dataset_written_beside_the_file(exported, trained, name):
    assert (exported / f"{name}.dataset.pt").is_file()
    assert trained[name]["buffer"] == 2_000  # the random dataset's transitions; the one online frame overwrote one row
    header = (exported / f"{name}.yaml").read_text().split("defaults:")[0]
    assert "has no offline-only mode" in header and f"{name}.dataset.pt" in header


def test_the_docs_export_table_is_the_codes(exported):
    """docs/parity.md's table: every exported algorithm on the trainer and loss config its file names, in the
    builders' order, then every refused one with the reason rlplug's error gives."""
    from rlplug.interop.torchrl_hydra import BUILDERS, NO_TRAINER

    docs = (Path(__file__).resolve().parents[1] / "docs" / "parity.md").read_text(encoding="utf-8")
    table = docs.split("\n## Export to TorchRL's own trainer configs\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in table.splitlines() if line.startswith("| ")][1:]  # past the header row
    rows = {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines)}
    assert list(rows)[: len(BUILDERS)] == list(BUILDERS) and set(rows) == set(BUILDERS) | set(NO_TRAINER)
    for name in BUILDERS:
        trainer, loss = re.match(r"`(\w+)` / `(\w+)`", rows[name][0]).groups()
        body = (exported / f"{name}.yaml").read_text()
        assert f"trainer@trainer: {trainer}\n" in body and f"loss@loss: {loss}\n" in body, name
    for name, reason in NO_TRAINER.items():
        assert rows[name] == ["refused", reason]


def test_ddpgs_header_says_why_it_runs_on_td3s_trainer_and_what_it_cannot_anneal(capsys):
    argv = ["show", "ddpg-pendulum", "--backend", "torchrl", "--format", "hydra", "--set",
            "hyperparameters.exploration_decay_steps=5000", "--set", "hyperparameters.exploration_final_scale=0.1"]
    assert main(argv) == 0
    header, body = capsys.readouterr().out.split("\ndefaults:\n")
    assert "DDPG on TorchRL 0.14.1's TD3 trainer" in header and "DDPGTrainer takes no exploration module" in header
    assert "exploration_decay_steps = 5000: TD3Trainer never steps the exploration module's annealing" in header
    assert "policy_delay" not in header.split("# Approximated:")[1]  # one step per update: no target cadence note
    assert "trainer@trainer: td3" in body and "num_qvalue_nets: 1" in body and "policy_update_delay: 1" in body
    assert "optimizer_critic.lr=3e-4" in header  # the override example names an optimiser the file has


def test_the_header_names_what_torchrls_trainer_drops(tmp_path):
    assert export("ppo-cartpole", tmp_path / "ppo.yaml") == 0
    text = (tmp_path / "ppo.yaml").read_text()
    header, body = text.split("\ndefaults:\n")
    dropped = header.split("# Dropped")[1].split("# Approximated")[0]
    for field in ("lr_schedule = 'kl_adaptive'", "normalize_observations = True", "normalize_values = True"):
        assert field in dropped
    assert "trainer@trainer: ppo" in body and "loss@loss: ppo" in body
    assert "clip_epsilon: 0.2" in body and "entropy_coeff: 0.01" in body and "num_workers: 8" in body


def test_a_dueling_q_network_and_n_step_returns_are_listed_as_dropped(capsys):
    assert main(["show", "dqn-cartpole", "--backend", "torchrl", "--format", "hydra", "--set", "dueling=true", "--set", "n_step=3"]) == 0
    dropped = capsys.readouterr().out.split("# Dropped")[1].split("# Approximated")[0]
    assert "dueling = True: TorchRL's config names a plain MLP Q network" in dropped
    assert "n_step = 3: DQNTrainer's config samples one-step transitions" in dropped


def test_prints_the_config_without_out(capsys):
    assert main(["show", "td3-pendulum", "--backend", "torchrl", "--format", "hydra", "--set", "hyperparameters.tau=0.01"]) == 0
    out = capsys.readouterr().out
    assert "trainer@trainer: td3" in out and "tau: 0.01" in out and "policy_update_delay: 2" in out


@pytest.mark.parametrize("argv, dataset_env, expected", [
    (["ppo-cartpole", "--backend", "skrl", "--format", "hydra"], None, "use it with --backend torchrl, not 'skrl'"),
    (["mappo-navigation", "--backend", "torchrl", "--format", "hydra"], None, "has no multi-agent PPO trainer config"),
    (["td3bc-pendulum-medium", "--backend", "torchrl", "--format", "hydra", "--out", "t.yaml"], "Pendulum-v1",
     "no TD3+BC trainer or loss config, and its TD3 trainer cannot step TD3BCLoss: the trainer calls value_loss, "
     "which TD3BCLoss names qvalue_loss); train it with `rlplug train td3bc-pendulum-medium --backend torchrl`"),
    (["iql-pendulum-medium", "--backend", "torchrl", "--format", "hydra"], "Pendulum-v1", "needs --out FILE.yaml"),
    (["cql-cartpole-medium", "--backend", "torchrl", "--format", "hydra", "--out", "c.yaml"], "CartPole-v1",
     "cql trainer config builds a continuous-action loss; 'CartPole-v1' has discrete actions"),
    (["ppo-cartpole", "--backend", "torchrl", "--out", "x.yaml"], None, "--out writes the --format hydra config"),
    (["ppo-cartpole", "--backend", "torchrl", "--format", "hydra", "--out", "x.toml"], None, "Hydra composes FILE.yaml"),
])  # fmt: skip
def test_refusals_are_one_line_exit_2(argv, dataset_env, expected, capsys, tmp_path, monkeypatch, random_dataset):
    monkeypatch.chdir(tmp_path)
    if dataset_env:
        argv = [*argv, "--set", f"dataset={random_dataset(dataset_env)}"]
    assert main(["show", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rlplug: error:") and expected in err[0], err
    assert not list(tmp_path.iterdir())  # nothing written


def test_out_replaces_an_earlier_export_and_never_a_users_file(tmp_path, capsys):
    mine = tmp_path / "mine.yaml"
    mine.write_text("my own config\n")
    assert export("td3-pendulum", mine) == 2
    assert "is a file (14 bytes), not a TorchRL trainer config rlplug wrote" in capsys.readouterr().err
    assert mine.read_text() == "my own config\n"
    ours = tmp_path / "td3.yaml"
    assert export("td3-pendulum", ours) == 0 and export("td3-pendulum", ours) == 0  # its own earlier export: replaced
    assert ours.read_text().startswith("# TorchRL ")


# ---- a recipe's hooks in the trainer config's hooks list -------------------------------------------------------

LOGGED = '{hook = "log_scalar"}, {hook = "early_stopping", monitor = "batch/next.reward_mean", patience = 1}'
SMALL_PPO = ["--set", "num_envs=2", "--set", "hyperparameters.rollout_steps=64"]  # 128 frames a batch


def sections(text):
    """(notes, dropped lines, approximated lines, body as a dict) of an exported file."""
    import yaml

    header, body = text.split("\ndefaults:\n")
    notes, rest = header.split("# Dropped")
    dropped, approximated = rest.split("# Approximated:")
    return notes, dropped.splitlines()[1:], approximated.splitlines(), yaml.safe_load("defaults:\n" + body)


def test_recipe_hooks_become_the_trainer_configs_hooks_or_are_listed_as_dropped(tmp_path):
    hooks = (f'hooks=[{LOGGED}, {{hook = "reward_scaling"}}, {{hook = "early_stopping"}}, '
             '{hook = "torchrl.trainers.LogScalar", key = ["next", "done"], logname = "done", name = "d"}, '
             '{hook = "torchrl.trainers.UTDRHook"}, {hook = "torchrl.trainers.LogTiming", dest = "pre_steps_log"}]')
    assert export("ppo-cartpole", tmp_path / "ppo.yaml", *SMALL_PPO, "--set", hooks) == 0
    notes, dropped, approximated, cfg = sections((tmp_path / "ppo.yaml").read_text())
    assert cfg["trainer"]["hooks"] == ["${hook0}", "${hook1}", "${hook2}"]
    reward = {"_target_": "builtins.tuple", "_args_": [["next", "reward"]]}  # a nested key, instantiated as a tuple
    assert cfg["hook0"] == {"_target_": "torchrl.trainers.LogScalar", "key": reward, "logname": "batch/next.reward_mean",
                            "include_std": False, "reduction": "mean"}  # fmt: skip
    assert {"hook@hook1": "early_stopping"} in cfg["defaults"]  # TorchRL's own hook config group
    assert cfg["hook1"] == {"monitor": "batch/next.reward_mean", "mode": "max", "min_delta": 0.0, "patience": 128,
                            "wait_for": 0, "check_finite": True}  # 1 report = one 128-frame batch  # fmt: skip
    assert cfg["hook2"]["_target_"] == "torchrl.trainers.LogScalar" and cfg["hook2"]["logname"] == "done"
    assert "whose patience counts frames: 1 report(s) x 128 frames" in notes
    hook_lines = [line for line in dropped if "hooks[" in line]
    assert [line.split(" = ")[0] for line in hook_lines] == ["#   - hooks[2]", "#   - hooks[3]", "#   - hooks[5]", "#   - hooks[6]"]
    for index, why in ((2, "TorchRL has no hook of its meaning: RewardNormalizer"), (3, "monitors 'train/episode_return', which no hook"),
                       (5, "UTDRHook is built with the trainer it works on"), (6, "registers at 'pre_steps_log'; a trainer config")):
        assert why in hook_lines[[2, 3, 5, 6].index(index)]
    assert any("hooks[4] name = 'd': registered as 'log_done'" in line for line in approximated)


def test_off_policy_and_offline_hooks(tmp_path, random_dataset):
    assert export("sac-pendulum", tmp_path / "sac.yaml", "--set", f"hooks=[{LOGGED}]") == 0
    notes, _, approximated, cfg = sections((tmp_path / "sac.yaml").read_text())
    assert cfg["hook1"]["patience"] == 1000  # one report per log_every = 1000 env steps
    assert any("TorchRL's EarlyStopping checks the metric after every collected batch (1 frame)" in a for a in approximated)
    dataset = random_dataset("Pendulum-v1")
    assert export("iql-pendulum-medium", tmp_path / "iql.yaml", "--set", f"dataset={dataset}", "--set", f"hooks=[{LOGGED}]") == 0
    _, dropped, _, cfg = sections((tmp_path / "iql.yaml").read_text())
    assert "hooks" not in cfg["trainer"]
    assert sum("TorchRL's offline trainers call it on the online frames they collect" in line for line in dropped) == 2


@pytest.mark.slow
def test_torchrls_trainer_registers_the_exported_hooks_and_stops_early(tmp_path, monkeypatch):
    """The early stopping of tests/test_trainer_hooks.py in TorchRL's own PPOTrainer: CartPole's reward is always 1,
    so the first batch sets the best value and the second, no better, stops training at 256 of 1024 frames."""
    import hydra
    import torchrl.trainers.algorithms.configs  # noqa: F401

    monkeypatch.chdir(tmp_path)  # the file's CSV logger writes under ./torchrl_logs
    assert export("ppo-cartpole", tmp_path / "ppo.yaml", *SMALL_PPO, "--set", f"hooks=[{LOGGED}]") == 0
    overrides = ["collector.total_frames=1024", "trainer.num_epochs=1", "trainer.progress_bar=false"]
    with hydra.initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        cfg = hydra.compose(config_name="ppo", overrides=overrides)
    trainer = hydra.utils.instantiate(cfg.trainer)
    assert {"log_batch/next.reward_mean", "early_stopping"} <= set(trainer._modules)
    trainer.train()
    assert trainer.collected_frames == 256 and trainer._log_dict["batch/next.reward_mean"] == [1.0, 1.0]
    assert trainer._stop_reason == "Monitored metric 'batch/next.reward_mean' did not improve for 128 frames."
