"""The TorchRL on-policy base's lean rollouts give the learner what TorchRL's Collector gives it.

The same recipe on a fixed seed, once per path (``torchrl.collector = true`` / ``false``): every rollout (every
key, its order, the dims' names; after the advantages too), the logged losses, the rollout buffer, the network
parameters, the checkpointed collection state and torch's random state after training are bitwise equal.
The runs cover PPO on discrete and continuous actions with observation and value normalisation, partial
autoresets (CartPole, several envs), time-limit truncations bootstrapped from the true last observation (on
different steps in different envs; on Pendulum, on one step in every env, where TorchRL's wrapper resets the
vector env once more), Dict observations with a uint8 image, a policy with a forward hook (acting on the
carrier), a batch hook, checkpoints resumed on the other path, and where the lean path falls back.
"""

from __future__ import annotations

import io

import pytest
import torch

pytest.importorskip("torchrl")

import rlplug  # noqa: E402
from rlplug.backends.torchrl.rollout_collection import CollectorRollouts, LeanRollouts  # noqa: E402

SMALL = ["num_envs=3", "rollout_steps=16", "epochs=2", "minibatches=2", "hidden_sizes=[16]"]

# name: (recipe, env steps, overrides)
CASES = {
    # episodes end by termination or by the 25-step limit, at different steps in different envs; bootstrapped
    "discrete": ("ppo-cartpole", 480, ["time_limit=25", "normalize_observations=true", "bootstrap_truncated=true"]),
    # 2 envs x 20-step episodes: every env truncated on one step; Gaussian actions, loc and scale stored
    "continuous": ("ppo-pendulum", 320, ["num_envs=2", "time_limit=20", "normalize_observations=true",
                                         "bootstrap_truncated=true"]),  # fmt: skip
    # without the bootstrap (a cut ends the return), the loop's ("next", "terminated") replacement
    "discrete-no-bootstrap": ("ppo-cartpole", 288, ["time_limit=25", "bootstrap_truncated=false", "normalize_values=false"]),
    # normalised rewards learnt from, the env's own returns reported (the lean path reads them from the step's info)
    "discrete-normalized-reward": ("ppo-cartpole", 288, ["time_limit=25", "normalize_reward=true"]),
}

DICT_RECIPE = """
[recipes.lean-dict-ppo]
extends = "ppo-cartpole"
env = "RlplugTinyDict-v0"
encoder_kwargs = { channels = [4], kernels = [3], strides = [1], features = 8 }
[recipes.lean-dict-ppo.hyperparameters]
hidden_sizes = [16]
"""


def _overrides(overrides: list[str], collector: bool) -> list[str]:
    return [*SMALL, *overrides, f"torchrl.collector={str(collector).lower()}"]


class _Captured:
    """The trainer's rollouts, each kept as handed to the loop (the advantages are then added to it)."""

    def __init__(self, rollouts):
        self.rollouts, self.kept = rollouts, []

    def __iter__(self):
        return self

    def __next__(self):
        self.kept.append(next(self.rollouts))
        return self.kept[-1]


def _trained(recipe: str, steps: int, overrides: list[str], collector: bool, session=None, prepare=None) -> dict:
    make = session.build if session is not None else lambda name, backend, over: rlplug.build(name, backend=backend, overrides=over)
    build = make(recipe, "torchrl", _overrides(overrides, collector))
    trainer = build.trainer
    try:
        assert isinstance(trainer.collection, CollectorRollouts if collector else LeanRollouts)
        assert trainer.collection_fallback is None
        on_tensors = prepare(trainer) if prepare is not None else True
        if not collector:
            assert (trainer.collection.tensor_policy is not None and not trainer.collection.tensor_policy.hooked()) == on_tensors
        trainer._batches = captured = _Captured(trainer._batches)
        rows = []
        trainer.train(steps, [lambda _, metrics: rows.append(metrics)])
        storage = build.memory._storage
        return {
            "rollouts": captured.kept,
            "rows": rows,
            "memory": storage._storage[: len(storage)].clone(),
            "parameters": [p.detach().clone() for p in build.loss.parameters()],
            "buffers": [b.clone() for b in build.loss.buffers()],
            "collection": trainer.state_dict()["collector"],
            "rng": torch.get_rng_state(),
            "env_steps": trainer.env_steps,
        }
    finally:
        trainer.close()


def _assert_same_tensordict(a, b, what: str, ordered: bool = True) -> None:
    keys = list(a.keys(True, True))
    assert (keys if ordered else set(keys)) == (list if ordered else set)(b.keys(True, True)), what  # in the same order
    assert a.batch_size == b.batch_size and a.names == b.names, what
    for key in a.keys(True, True):
        assert a[key].dtype == b[key].dtype and torch.equal(a[key], b[key]), (what, key)


def _assert_same_training(collector: dict, lean: dict) -> None:
    assert lean["env_steps"] == collector["env_steps"] and len(lean["rollouts"]) == len(collector["rollouts"]) >= 3
    for i, (a, b) in enumerate(zip(collector["rollouts"], lean["rollouts"])):
        _assert_same_tensordict(a, b, f"rollout {i}")
        assert "advantage" in b.keys()
    assert lean["rows"] == collector["rows"] and any("loss/" in key for key in lean["rows"][-1])
    _assert_same_tensordict(collector["memory"], lean["memory"], "rollout buffer")
    assert all(torch.equal(a, b) for a, b in zip(collector["parameters"], lean["parameters"], strict=True))
    assert all(torch.equal(a, b) for a, b in zip(collector["buffers"], lean["buffers"], strict=True))  # normalisers
    saved = [state for state in (collector["collection"], lean["collection"])]
    assert saved[0].keys() == saved[1].keys()
    for name in ("frames", "iter", "traj_pool", "raw"):
        assert saved[0][name] == saved[1][name], name
    from tensordict import TensorDict

    # the carrier the next rollout steps from (its key order is not saved: a checkpoint restores by key)
    _assert_same_tensordict(*(TensorDict.from_dict(state["carrier"]) for state in saved), "carrier", ordered=False)
    assert torch.equal(lean["rng"], collector["rng"])


@pytest.mark.parametrize("case", CASES)
def test_lean_rollouts_train_as_the_collector_does(case):
    recipe, steps, overrides = CASES[case]
    collector, lean = (_trained(recipe, steps, overrides, flag) for flag in (True, False))
    _assert_same_training(collector, lean)
    flags = torch.cat([rollout["next", "truncated"] for rollout in lean["rollouts"]])
    dones = torch.cat([rollout["next", "done"] for rollout in lean["rollouts"]])
    assert flags.any() and (dones & ~flags).any() != (recipe == "ppo-pendulum")  # truncations, and (CartPole) terminations
    if recipe == "ppo-cartpole":  # sub-envs ended on different steps: partial resets
        assert any((rollout["next", "done"].squeeze(-1).sum(0) == 1).any() for rollout in lean["rollouts"])


def test_dict_observations_with_an_image(tmp_path):
    """A Dict space with a uint8 image, episodes ending on both sub-envs: where an episode ends both paths store
    the true last observation (TorchRL 0.14's vector ``GymWrapper`` would store zeros there; rlplug's
    ``DictFinalObservations`` reads the true one), so the truncation bootstrap sees the same values and the
    training is bitwise equal."""
    import image_envs  # noqa: F401 - registers the tiny environments

    path = tmp_path / "recipes.toml"
    path.write_text(DICT_RECIPE)
    session = rlplug.pipeline.session.Session(recipe_files=[str(path)])
    collector, lean = (_trained("lean-dict-ppo", 192, ["num_envs=2"], flag, session) for flag in (True, False))
    rollout = lean["rollouts"][0]
    assert rollout["image"].dtype == torch.uint8 and rollout["next", "vector"].shape == (2, 16, 3)
    pairs = [*zip(collector["rollouts"], lean["rollouts"]), (collector["memory"], lean["memory"])]
    for theirs, ours in pairs:
        ended = ours["next", "done"].squeeze(-1)
        assert ended.any() and torch.equal(ended, theirs["next", "done"].squeeze(-1))
        assert torch.equal(ours["next", "vector"][ended][:, 0].abs(), torch.ones(int(ended.sum())))  # the env's side flag
        assert torch.equal(theirs["next", "vector"][ended], ours["next", "vector"][ended])
        assert torch.equal(theirs["next", "image"][ended], ours["next", "image"][ended])
    _assert_same_training(collector, lean)


def test_a_hooked_policy_acts_on_the_carrier_with_the_same_draws():
    """A forward hook on the actor: the lean path calls the policy on its carrier so the hook runs, as many
    times as in the collector; a batch hook op (reward scaling) reads and replaces the rollout's rewards."""
    calls = {}

    def prepare(trainer):
        from rlplug.hooks import RewardScaling

        RewardScaling().register(trainer)
        key = "collector" if trainer.collector is not None else "lean"
        calls[key] = 0

        def count(*_):
            calls[key] += 1

        trainer.actor.register_forward_hook(count)
        return False

    recipe, steps, overrides = CASES["discrete"]
    collector, lean = (_trained(recipe, 192, overrides, flag, prepare=prepare) for flag in (True, False))
    _assert_same_training(collector, lean)
    assert calls["lean"] == calls["collector"] == 192 // 3  # one call per vector step


@pytest.mark.parametrize("first", ["collector", "lean"])
def test_a_checkpoint_resumes_on_the_other_path(first):
    """Each path saves what the collector saves (the vector env, the carrier, counters, the trajectory pool): a
    run checkpointed on one path and resumed on the other goes on as a straight run does."""
    recipe, _, overrides = CASES["discrete"]
    other = first == "lean"  # the resumed run's collector flag

    def build(collector: bool):
        return rlplug.build(recipe, backend="torchrl", overrides=_overrides(overrides, collector))

    straight = build(other)  # each build seeds torch's global RNG: build, then train, one run after the other
    try:
        straight.trainer.train(288)
        expected = straight.trainer.state_dict()
    finally:
        straight.trainer.close()
    half = build(first == "collector")
    try:
        half.trainer.train(144)
        buffer = io.BytesIO()
        torch.save(half.trainer.state_dict(), buffer)
    finally:
        half.trainer.close()
    buffer.seek(0)
    resumed = build(other)
    try:
        resumed.trainer.load_state_dict(torch.load(buffer, weights_only=True))
        resumed.trainer.train(288)
        got = resumed.trainer.state_dict()
    finally:
        resumed.trainer.close()
    for part in ("actor", "critic"):
        assert got[part].keys() == expected[part].keys()
        assert all(torch.equal(tensor, got[part][name]) for name, tensor in expected[part].items()), part
    assert torch.equal(got["rng"]["torch"], expected["rng"]["torch"])
    assert got["collector"]["traj_pool"] == expected["collector"]["traj_pool"]
    assert got["collector"]["frames"] == expected["collector"]["frames"] == 288


RECURRENT = {
    # LSTM: episodes end by termination or the time limit on different steps in different envs, inside sequences
    "lstm-partial-resets": ("ppo-cartpole", 288, ["recurrent=lstm", "sequence_length=8", "time_limit=25",
                                                  "normalize_observations=true", "bootstrap_truncated=true"]),  # fmt: skip
    # GRU, Gaussian actions: every env truncated on one step, where TorchRL's wrapper resets the vector env again
    "gru-all-ended": ("ppo-pendulum", 160, ["num_envs=2", "recurrent=gru", "sequence_length=8", "time_limit=20",
                                           "bootstrap_truncated=true"]),  # fmt: skip
}


@pytest.mark.parametrize("case", RECURRENT)
def test_recurrent_lean_rollouts_carry_hidden_states_as_the_collector_does(case):
    """A recurrent policy acts on tensors (or, hooked, on the carrier); the lean path carries its hidden states and
    ``is_init`` as TorchRL's InitTracker, primers and ``step_mdp`` do (zeros and true where an episode starts): the
    same rollouts, stored states, losses and parameters as the collector's, bit for bit."""
    recipe, steps, overrides = RECURRENT[case]

    def on_the_carrier(trainer):  # a hooked actor: the lean path calls the policy on its carrier
        trainer.actor.register_forward_hook(lambda *_: None)
        return False

    prepare = on_the_carrier if case.startswith("gru") else None  # LSTM: on tensors (acting.py's RNN step)
    collector, lean = (_trained(recipe, steps, overrides, flag, prepare=prepare) for flag in (True, False))
    _assert_same_training(collector, lean)
    starts = torch.cat([rollout["is_init"] for rollout in lean["rollouts"]])
    assert starts[:, 1:].any()  # episodes started inside the rollouts, from zeros
    assert torch.cat([rollout["actor_rnn_h"] for rollout in lean["rollouts"]])[starts.squeeze(-1)].abs().sum() == 0


@pytest.mark.parametrize("env", ["Hopper-v5", "HalfCheetah-v5"])
def test_info_entries_are_stored_as_the_collector_stores_them(env):
    """MuJoCo's envs report ``x_position``, ``reward_forward``, ... in their info, which TorchRL's reader adds to each
    step: the ended episode's last values at ``("next", key)``, the reset's at the next root (zeros for an entry
    a reset's info lacks). Hopper's episodes end by falling on different steps in different envs (partial
    resets); HalfCheetah's all end on one step (TorchRL's extra reset)."""
    pytest.importorskip("mujoco")
    overrides = ["num_envs=2", f"env={env}", "time_limit=12"] + (["time_limit=40"] if env.startswith("Hopper") else [])
    collector, lean = (_trained("ppo-pendulum", 128, overrides, flag) for flag in (True, False))
    _assert_same_training(collector, lean)
    rollout = lean["rollouts"][0]
    assert "reward_forward" in rollout.keys() and ("next", "x_position") in rollout.keys(True)
    ended = torch.cat([r["next", "done"] for r in lean["rollouts"]], 1).squeeze(-1)
    assert ended.any() and (ended.sum(0) == 1).any() == env.startswith("Hopper")


def test_a_multiagent_env_falls_back_to_the_collector():
    pytest.importorskip("mpe2")
    from mappo_builds import make_mappo_build

    build = make_mappo_build("torchrl")
    try:
        assert isinstance(build.trainer.collection, CollectorRollouts)
        assert build.trainer.collection_fallback.startswith("the env is not a gymnasium vector env")
        assert "collector" not in build.settings  # the setting is not offered where it could not be honoured
    finally:
        build.trainer.close()


def test_collector_true_is_the_collector_without_a_fallback_note():
    build = rlplug.build("ppo-cartpole", backend="torchrl", overrides=_overrides([], True))
    try:
        assert isinstance(build.trainer.collection, CollectorRollouts) and build.trainer.collection_fallback is None
    finally:
        build.trainer.close()
    build = rlplug.build("ppo-cartpole", backend="torchrl", overrides=SMALL)
    try:  # the default
        assert isinstance(build.trainer.collection, LeanRollouts) and build.trainer.collector is None
    finally:
        build.trainer.close()
