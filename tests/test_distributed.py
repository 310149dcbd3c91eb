"""Data-parallel training through torchrun: two gloo processes on CPU, end to end through the CLI.

What the checkpoint's rank states show: the networks, optimisers and normaliser statistics of rank 0
and rank 1 are bit-identical after training, while their environments and data are not.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "my-a2c"
TORCHRL = pytest.mark.skipif(importlib.util.find_spec("torchrl") is None, reason="torchrl missing")
# the parts of a trainer's state that must agree across ranks (networks, optimisers, statistics)
NETWORK_KEYS = ("modules", "agent", "actor", "critic", "loss", "optimizer", "extra", "value_normalizer")
PPO_FAST = ["--set", "num_envs=2", "--set", "rollout_steps=64", "--set", "epochs=2", "--set", "eval_episodes=2"]
OFF_POLICY_FAST = ["--set", "learning_starts=200", "--set", "batch_size=64", "--set", "eval_episodes=1"]


def tensors(tree, prefix=""):
    import torch

    if isinstance(tree, torch.Tensor):
        yield prefix, tree
    elif isinstance(tree, dict):
        for key, value in tree.items():
            yield from tensors(value, f"{prefix}/{key}")
    elif isinstance(tree, (list, tuple)):
        for i, value in enumerate(tree):
            yield from tensors(value, f"{prefix}/{i}")


def split_state(state):
    """(network tensors, everything else) of one rank's trainer state, keyed by path."""
    everything = dict(t for key in state for t in tensors(state[key], key))
    # exploration noise draws from each rank's own stream
    shared = {k for k in everything if k.split("/")[0] in NETWORK_KEYS and "noise" not in k}
    return {k: everything[k] for k in shared}, {k: v for k, v in everything.items() if k not in shared}


def train_two_ranks(tmp_path, *args):
    result = run_cli("train", *args, "--nproc", "2", "--run-dir", "run", "--json", cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # one JSON document: ranks other than 0 print nothing


CELLS = [
    pytest.param("ppo-cartpole", "skrl", 1024, PPO_FAST, id="ppo-skrl"),
    pytest.param("ppo-cartpole", "torchrl", 1024, PPO_FAST, id="ppo-torchrl", marks=TORCHRL),
    pytest.param("sac-pendulum", "skrl", 300, OFF_POLICY_FAST, id="sac-skrl"),
    pytest.param("sac-pendulum", "torchrl", 300, OFF_POLICY_FAST, id="sac-torchrl", marks=TORCHRL),
    pytest.param("td3-pendulum", "skrl", 300, OFF_POLICY_FAST, id="td3-skrl"),
    pytest.param("a2c-cartpole", "skrl", 512, ["--set", "num_envs=2", "--set", "eval_episodes=2"], id="a2c-skrl"),
    pytest.param("rpo-pendulum", "torchrl", 512, [*PPO_FAST, "--set", "minibatches=2"], id="rpo-torchrl", marks=TORCHRL),
    pytest.param("dqn-cartpole", "torchrl", 512, OFF_POLICY_FAST, id="dqn-torchrl", marks=TORCHRL),
    # the trust-region step averages its gradient, Fisher-vector products and line search over the ranks
    pytest.param("trpo-cartpole", "skrl", 256, ["--set", "num_envs=2", "--set", "rollout_steps=64", "--set", "epochs=2",
                                                "--set", "minibatches=2", "--set", "eval_episodes=2"], id="trpo-skrl"),
    pytest.param("trpo-cartpole", "torchrl", 256, ["--set", "num_envs=2", "--set", "rollout_steps=64", "--set", "epochs=2",
                                                   "--set", "minibatches=2", "--set", "eval_episodes=2"], id="trpo-torchrl",
                 marks=TORCHRL),
    # one rollout of the recipe (a fixed-size iteration runs whole): 3,000 steps per rank
    pytest.param("mappo-navigation", "skrl", 600, ["--set", "eval_episodes=1"], id="mappo-skrl"),
    # gradient updates; each rank samples its own minibatches from the same dataset
    pytest.param("iql-pendulum-medium", "torchrl", 200, ["--set", "eval_episodes=1", "--set", "eval_every=0"],
                 id="iql-torchrl", marks=TORCHRL),
]


@pytest.mark.parametrize("recipe, backend, steps, fast", CELLS)
def test_two_ranks_stay_identical_and_only_rank_0_writes(recipe, backend, steps, fast, tmp_path, random_dataset):
    import torch

    if recipe.startswith("iql"):
        fast = [*fast, "--set", f"dataset={random_dataset('Pendulum-v1')}"]
    summary = train_two_ranks(tmp_path, recipe, "--backend", backend, "--steps", str(steps), *fast)
    assert summary["world_size"] == 2 and summary["ranks_in_sync"] is True
    assert summary["steps"] >= steps and summary["steps_all_ranks"] == 2 * summary["steps"]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no second run directory, no stray files
    assert (tmp_path / "run" / "command.txt").read_text().startswith(f"rlplug train {recipe} --backend {backend}")

    payload = torch.load(tmp_path / "run" / "checkpoints" / "latest.pt", weights_only=True)
    assert payload["rlplug"]["world_size"] == 2 and len(payload["ranks"]) == 1
    networks_0, rest_0 = split_state(payload["trainer"])
    networks_1, rest_1 = split_state(payload["ranks"][0])
    assert networks_0 and networks_0.keys() == networks_1.keys()
    differ = [k for k in networks_0 if not torch.equal(networks_0[k], networks_1[k])]
    assert differ == [], f"networks differ across ranks: {differ[:5]}"
    # each rank ran its own environments (seeded seed + rank * num_envs + i): their states differ
    assert any(not torch.equal(rest_0[k], rest_1[k]) for k in rest_0.keys() & rest_1.keys())


@TORCHRL
def test_resume_on_one_process_then_on_two_again(tmp_path):
    train_two_ranks(tmp_path, "ppo-cartpole", "--backend", "torchrl", "--steps", "512", *PPO_FAST)
    run = str(tmp_path / "run")

    alone = run_cli("resume", run, "--steps", "768", "--json")
    assert alone.returncode == 0, alone.stderr
    assert "trained on 2 processes and resumes on 1" in alone.stderr
    assert json.loads(alone.stdout)["steps"] == 768 and json.loads(alone.stdout)["world_size"] == 1

    import torch

    assert "ranks" not in torch.load(tmp_path / "run" / "checkpoints" / "latest.pt", weights_only=True)
    again = run_cli("resume", run, "--steps", "1024", "--nproc", "2", "--json", timeout=600)
    assert again.returncode == 0, again.stderr
    assert "trained on 1 process and resumes on 2" in again.stderr
    summary = json.loads(again.stdout)
    assert summary["steps"] == 1024 and summary["ranks_in_sync"] is True


def test_two_process_ppo_reaches_the_cartpole_target(tmp_path):
    """ppo-cartpole on two skrl processes, on 30k of the recipe's 100k steps per rank (the whole budget
    passes too: `rlplug bench`-sized, so not run here)."""
    summary = train_two_ranks(tmp_path, "ppo-cartpole", "--backend", "skrl", "--steps", "30720")
    assert summary["passed"], summary


def test_launch_refuses_what_it_cannot_run(tmp_path):
    example = ("--plugin", "my_a2c:plugin")  # a third-party cell that does not declare distributed
    refused = run_cli("train", "mya2c-cartpole", *example, "--backend", "skrl", "--nproc", "2", "--no-write", paths=(EXAMPLE,))
    assert_one_line_error(refused, "mya2c on skrl does not train across processes")
    assert_one_line_error(run_cli("train", "ppo-cartpole", "--nnodes", "2", "--no-write"), "needs --rdzv-endpoint")
    assert_one_line_error(run_cli("train", "ppo-cartpol", "--nproc", "2", "--no-write"), "did you mean 'ppo-cartpole'")
    assert_one_line_error(run_cli("resume", str(tmp_path / "missing"), "--nproc", "2"), "does not exist")


def test_launch_arguments_are_handed_on_without_the_launch_options():
    from rlplug.pipeline.distributed import rank_seed, worker_argv

    argv = ["train", "ppo-cartpole", "--nproc", "2", "--nnodes=1", "--rdzv-endpoint", "h:1", "--run-dir", "x", "--steps", "9"]
    assert worker_argv(argv, "runs/abc") == ["train", "ppo-cartpole", "--steps", "9", "--run-dir", "runs/abc"]
    assert worker_argv(["resume", "r", "--nproc=3"], None) == ["resume", "r"]
    # rank r's environments continue the numbering of the ranks before it
    assert [rank_seed(42, 8, r) for r in range(3)] == [42, 50, 58]


def test_resume_notes_name_what_changes():
    from rlplug.runs import resume_note

    assert resume_note(2, 2) is None
    assert "rank 1's environments and replay memory are left behind" in resume_note(2, 1)
    assert "ranks 2-3 start from rank 0's" in resume_note(2, 4)
