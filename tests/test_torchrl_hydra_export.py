"""`rlplug show NAME --backend torchrl --format hydra`: a recipe as a config in TorchRL's own trainer config groups,
composed by Hydra and trained by TorchRL's trainer in a process that never imports rlplug."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

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
        out[job["name"]] = {"trainer": type(trainer).__name__, "loss": type(trainer.loss_module).__name__,
                            "frames": trainer.collected_frames, "buffer": len(trainer.replay_buffer),
                            "changed": sum(not torch.equal(b, a) for b, a in zip(before, after)),
                            "seconds": round(time.perf_counter() - start, 2)}
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
    "dqn": ("dqn-cartpole", False, [*SMALL_OFFPOLICY, "collector.frames_per_batch=64", "collector.total_frames=256"]),
    "td3": ("td3-pendulum", False, SMALL_OFFPOLICY),
    "iql": ("iql-pendulum-medium", True, OFFLINE),
    "cql": ("cql-pendulum-medium", True, OFFLINE),
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
    assert run["trainer"] == f"{name.upper()}Trainer"
    assert run["loss"] == {"ppo": "ClipPPOLoss"}.get(name, f"{name.upper()}Loss")
    *_, total = (o for o in JOBS[name][2] if o.startswith("collector.total_frames="))  # the last one given wins
    assert run["frames"] == int(total.split("=")[1])
    assert run["changed"] > 0  # the optimiser moved the loss's parameters


@pytest.mark.slow
@pytest.mark.parametrize("name", ["iql", "cql"])
def test_offline_trainers_start_from_the_dataset_written_beside_the_file(exported, trained, name):
    assert (exported / f"{name}.dataset.pt").is_file()
    assert trained[name]["buffer"] == 2_000  # the random dataset's transitions; the one online frame overwrote one row
    header = (exported / f"{name}.yaml").read_text().split("defaults:")[0]
    assert "has no offline-only mode" in header and f"{name}.dataset.pt" in header


def test_the_header_names_what_torchrls_trainer_drops(tmp_path):
    assert export("ppo-cartpole", tmp_path / "ppo.yaml") == 0
    text = (tmp_path / "ppo.yaml").read_text()
    header, body = text.split("\ndefaults:\n")
    dropped = header.split("# Dropped")[1].split("# Approximated")[0]
    for field in ("lr_schedule = 'kl_adaptive'", "normalize_observations = True", "normalize_values = True"):
        assert field in dropped
    assert "trainer@trainer: ppo" in body and "loss@loss: ppo" in body
    assert "clip_epsilon: 0.2" in body and "entropy_coeff: 0.01" in body and "num_workers: 8" in body


def test_prints_the_config_without_out(capsys):
    assert main(["show", "td3-pendulum", "--backend", "torchrl", "--format", "hydra", "--set", "hyperparameters.tau=0.01"]) == 0
    out = capsys.readouterr().out
    assert "trainer@trainer: td3" in out and "tau: 0.01" in out and "policy_update_delay: 2" in out


@pytest.mark.parametrize("argv, dataset_env, expected", [
    (["ppo-cartpole", "--backend", "skrl", "--format", "hydra"], None, "use it with --backend torchrl, not 'skrl'"),
    (["mappo-navigation", "--backend", "torchrl", "--format", "hydra"], None, "has no multi-agent PPO trainer config"),
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
