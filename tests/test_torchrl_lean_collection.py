"""The TorchRL off-policy base's lean collection gives the learner what TorchRL's Collector gives it.

The same recipe on a fixed seed, once per path (``torchrl.collector = true`` / ``false``): the replay
contents (every key, every slot), the writer's cursor, the logged losses, the network parameters and
torch's random state after training are bitwise equal. The runs cover the random warm-up (whole
batches), the exploration policies (SAC's samples with OU noise, TD3's Gaussian noise, DQN's
epsilon-greedy, also among an action mask's valid actions), partial autoresets (CartPole, several envs), Pendulum's time limit ending every env
on one step (where TorchRL's wrapper resets the vector env once more), and a replay that wraps around.
"""

from __future__ import annotations

import io

import pytest
import torch

pytest.importorskip("torchrl")

import rlplug  # noqa: E402
from rlplug.backends.torchrl.collection import CollectorCollection, LeanCollection  # noqa: E402

SMALL = ["hidden_sizes=[16, 16]", "batch_size=16", "log_every=100"]

# name: (recipe, steps, overrides, whether the lean path acts on tensors rather than on the carrier)
CASES = {
    # 1 env: the time limit at step 200 ends the only env; TanhNormal samples on tensors
    "sac": ("sac-pendulum", 320, ["learning_starts=150", "utd_ratio=0.25"], True),
    # OU noise keeps its state in the carrier: the policy runs on the carrier
    "sac-ou": ("sac-pendulum", 320, ["learning_starts=150", "exploration_noise=ou", "utd_ratio=0.25"], False),
    # 2 envs x 2 steps a batch, both truncated on one step; warm-up of 101 rounds up to 104 transitions
    "td3": ("td3-pendulum", 440, ["num_envs=2", "train_every=2", "learning_starts=101", "utd_ratio=0.25"], True),
    # 3 envs ending at different steps; a 256-slot replay that wraps around; epsilon set at every step
    "dqn": ("dqn-cartpole", 600, ["num_envs=3", "train_every=4", "learning_starts=90", "buffer_size=256", "utd_ratio=0.25"],
            True),  # fmt: skip
    # upstream's EGreedyModule, its epsilon set once per batch
    "dqn-batch-epsilon": ("dqn-cartpole", 300, ["num_envs=2", "train_every=4", "learning_starts=40", "utd_ratio=0.25",
                                                "torchrl.epsilon_per_step=false"], True),  # fmt: skip
    # normalised rewards learnt from, the env's own returns reported (the lean path reads them from the step's info)
    "dqn-normalized-reward": ("dqn-cartpole", 300, ["num_envs=2", "train_every=4", "learning_starts=40", "utd_ratio=0.25",
                                                    "normalize_reward=true", "log_every=40"], True),  # fmt: skip
    # an action mask (Dict key): the warm-up, epsilon-greedy and the argmax among the valid actions, on tensors
    "dqn-masked": ("dqn-cartpole", 300, ["env=tiny_envs:TinyMasked-v0", "num_envs=3", "train_every=4", "learning_starts=40",
                                         "utd_ratio=0.25"], True),  # fmt: skip
}


def _trained(recipe: str, steps: int, overrides: list[str], collector: bool, on_tensors: bool, hooked: bool = False) -> dict:
    build = rlplug.build(recipe, backend="torchrl", overrides=[*SMALL, *overrides, f"torchrl.collector={str(collector).lower()}"])
    try:
        assert isinstance(build.trainer.collection, CollectorCollection if collector else LeanCollection)
        if not collector:
            assert (build.trainer.collection.tensor_policy is not None) == on_tensors
        if hooked:  # batch_process replaces the batch's rewards (``set``), LogScalar reads them
            from rlplug.hooks import LogScalar, RewardScaling

            RewardScaling().register(build.trainer)
            LogScalar().register(build.trainer)
        rows = []
        build.trainer.train(steps, [lambda trainer, metrics: rows.append(metrics)])
        storage = build.memory._storage
        return {
            "rows": rows,
            "replay": storage._storage[: len(storage)].clone(),
            "cursor": build.memory._writer._cursor,
            "write_count": build.memory._writer._write_count,
            "parameters": [p.detach().clone() for p in build.loss.parameters()],
            "rng": torch.get_rng_state(),
            "env_steps": build.trainer.env_steps,
        }
    finally:
        build.trainer.close()


@pytest.mark.parametrize("case", [*CASES, "td3-hooked"])
def test_lean_collection_stores_and_learns_what_the_collector_does(case):
    recipe, steps, overrides, on_tensors = CASES[case.removesuffix("-hooked")]
    hooked = case.endswith("-hooked")
    collector, lean = (_trained(recipe, steps, overrides, flag, on_tensors, hooked) for flag in (True, False))
    assert lean["env_steps"] == collector["env_steps"] > steps - 20
    keys = set(collector["replay"].keys(True, True))
    assert keys == set(lean["replay"].keys(True, True)) and ("next", "truncated") in keys
    for key in keys:
        assert torch.equal(lean["replay"][key], collector["replay"][key]), key
    assert lean["replay"]["next", "done"].any()  # episodes ended inside the compared stretch
    assert (lean["cursor"], lean["write_count"]) == (collector["cursor"], collector["write_count"])
    assert lean["rows"] == collector["rows"] and any("loss/" in key for key in lean["rows"][-1])
    assert all(torch.equal(a, b) for a, b in zip(lean["parameters"], collector["parameters"]))
    assert torch.equal(lean["rng"], collector["rng"])


def test_building_the_env_leaves_the_global_rng_alone():
    """TorchRL's wrapper probes the specs with random steps of the not yet seeded envs until one ends: on the
    masked env an invalid random action ends it, so the number of draws varied from run to run and a seeded
    run's warm-up actions with it. The probe now draws from a fork of torch's RNG."""
    import tiny_envs  # noqa: F401  (registers TinyMasked-v0)
    from rlplug.backends.torchrl.env import make_env

    for _ in range(3):
        torch.manual_seed(0)
        before = torch.get_rng_state()
        make_env("TinyMasked-v0", {}, 3, seed=0).close()
        assert torch.equal(torch.get_rng_state(), before)


def test_a_collector_checkpoint_resumes_on_the_lean_path():
    """The lean path saves what the collector saves (the vector env, the carrier, the frame count): a run
    checkpointed on one path and resumed on the other continues as a straight run does."""
    recipe, overrides = "td3-pendulum", ["learning_starts=50", "utd_ratio=0.25"]

    def build(collector: bool):
        return rlplug.build(recipe, backend="torchrl", overrides=[*SMALL, *overrides, f"torchrl.collector={str(collector).lower()}"])

    straight = build(False)  # each build seeds torch's global RNG: build, then train, one run after the other
    straight.trainer.train(260)
    first = build(True)
    try:
        first.trainer.train(130)
        buffer = io.BytesIO()
        torch.save(first.trainer.state_dict(), buffer)
        buffer.seek(0)
        resumed = build(False)
        try:
            resumed.trainer.load_state_dict(torch.load(buffer, weights_only=True))
            resumed.trainer.train(260)
            a, b = straight.memory._storage, resumed.memory._storage
            for key in a._storage.keys(True, True):
                assert torch.equal(a._storage[key][: len(a)], b._storage[key][: len(b)]), key
            assert all(torch.equal(x, y) for x, y in zip(straight.loss.parameters(), resumed.loss.parameters()))
        finally:
            resumed.trainer.close()
    finally:
        straight.trainer.close()
        first.trainer.close()


@pytest.mark.parametrize("memmap", [False, True])
def test_leaf_writes_leave_the_storage_as_upstream_does(memmap):
    """``TransitionStorage`` (and its memmap twin) against upstream's storage: the same extends, past a
    wrap-around, give the same content, length, cursor and state."""
    from tensordict import TensorDict
    from torchrl.data import LazyMemmapStorage, LazyTensorStorage, RandomSampler, TensorDictReplayBuffer
    from rlplug.backends.torchrl.buffers import TransitionMemmapStorage, TransitionStorage

    upstream, ours = (LazyMemmapStorage, TransitionMemmapStorage) if memmap else (LazyTensorStorage, TransitionStorage)
    buffers = [TensorDictReplayBuffer(storage=cls(10), sampler=RandomSampler(), batch_size=4) for cls in (upstream, ours)]
    generator = torch.Generator().manual_seed(0)
    for n in (3, 1, 4, 3, 2):
        batch = TensorDict({"observation": torch.randn(n, 2, generator=generator), "action": torch.randint(0, 3, (n,), generator=generator),
                            "next": {"reward": torch.randn(n, 1, generator=generator), "done": torch.rand(n, 1, generator=generator) > 0.5}},
                           [n])  # fmt: skip
        for buffer in buffers:
            buffer.extend(batch.clone())
    reference, lean = buffers
    assert len(reference) == len(lean) == 10 and reference._writer._cursor == lean._writer._cursor == 3
    assert reference._storage._last_cursor.tolist() == lean._storage._last_cursor.tolist()
    for key in reference._storage._storage.keys(True, True):
        assert torch.equal(reference._storage._storage[key], lean._storage._storage[key]), key
    reference_state, lean_state = reference.state_dict(), lean.state_dict()
    assert reference_state["_writer"] == lean_state["_writer"] and reference_state["_sampler"] == lean_state["_sampler"]
    assert (reference_state["_storage"]["_len"], reference_state["_storage"]["initialized"]) == (lean_state["_storage"]["_len"], True)
    # and the leaf path was the one taken: a transition shaped as the stored ones qualifies
    assert lean._storage._leaf_pairs(torch.arange(1), lean._storage._storage[:1].clone()) is not None
    # sampling (the leaf path's get): the same batch as upstream's, from the same draws
    samples = []
    for buffer in buffers:
        torch.manual_seed(3)
        samples.append(buffer.sample())
    assert samples[0].batch_size == samples[1].batch_size and samples[0].device == samples[1].device
    assert set(samples[0].keys(True, True)) == set(samples[1].keys(True, True))
    for key in samples[0].keys(True, True):
        assert torch.equal(samples[0][key], samples[1][key]), key
    assert not samples[1].is_locked
