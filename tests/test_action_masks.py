"""Action masks (``rlplug.envs.masks``): an env's mask of valid Discrete actions, from its Dict observation key
``action_mask`` or from ``info["action_mask"]``, reaches every cell in one form, and PPO and DQN on both backends
never take a masked action: sampled, greedy, epsilon-greedy, random warm-up or exported. Masked actions have
probability zero without a NaN in the loss, entropy or gradients; DQN's target maxes over the next step's valid
actions (a hand-computed case); the refusals are one line each.

The env is ``tiny_envs:TinyMasked-v0`` (a Dict key) and ``TinyMaskedInfo-v0`` (info): 5 actions, 3 valid in
each of 4 states, an invalid action ends the episode."""

from __future__ import annotations

import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from conftest import refused_in_process, weights_only_round_trip

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")
pytest.importorskip("torchrl")

from rlplug.envs.factory import make_gym_env  # noqa: E402
from rlplug.errors import ActionMaskError  # noqa: E402
from rlplug.pipeline.session import Session  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "my-a2c"
DICT, INFO = "tiny_envs:TinyMasked-v0", "tiny_envs:TinyMaskedInfo-v0"
ENVS = {"dict": [f"env={DICT}"], "info": [f"env={INFO}", "action_mask=info"]}
SMALL = {
    "ppo": ("ppo-cartpole", ["num_envs=2", "rollout_steps=32", "minibatches=2", "epochs=2", "hidden_sizes=[16]"]),
    "dqn": ("dqn-cartpole", ["num_envs=2", "learning_starts=64", "hidden_sizes=[16]", "batch_size=16", "log_every=64",
                             "epsilon_decay_steps=200", "train_every=4", "target_update_period=16"]),
}  # fmt: skip
BACKENDS = ("skrl", "torchrl")
N = 5  # TinyMasked's actions


def _build(algorithm, backend, source="dict", extra=()):
    recipe, overrides = SMALL[algorithm]
    return Session().build(recipe, backend, [*ENVS[source], *overrides, *extra])


@pytest.fixture
def built():
    made = []

    def make(*args, **kwargs):
        made.append(_build(*args, **kwargs))
        return made[-1]

    yield make
    for build in made:
        build.trainer.close()


def _random_batch(count=64, seed=0):
    """Observations as the wrapped env gives them: one-hot states and masks of 1 to 5 valid actions (some of a
    single one, the hardest case for a softmax)."""
    rng = np.random.default_rng(seed)
    features = np.eye(4, dtype=np.float32)[rng.integers(0, 4, count)]
    mask = rng.integers(0, 2, size=(count, N)).astype(bool)
    mask[np.arange(count), rng.integers(0, N, count)] = True
    mask[:8] = False
    mask[np.arange(8), np.arange(8) % N] = True  # exactly one valid action
    return {"action_mask": mask, "observation": features}


def _valid(actions, mask):
    actions = np.asarray(actions).reshape(-1).astype(int)
    return bool(np.asarray(mask)[np.arange(len(actions)), actions].all())


# ---- the one internal form --------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["dict", "info"])
def test_both_conventions_reach_the_cells_as_a_bool_observation_key(source):
    env_id, mask_field = (DICT, "auto") if source == "dict" else (INFO, "info")
    from rlplug.envs.spec import EnvSpec

    env = make_gym_env(EnvSpec(env_id, action_mask=mask_field))
    try:
        assert env.observation_space == gym.spaces.Dict(
            {"action_mask": gym.spaces.Box(0, 1, (N,), np.bool_), "observation": gym.spaces.Box(0.0, 1.0, (4,), np.float32)})
        observation, info = env.reset(seed=0)
        assert observation["action_mask"].dtype == np.bool_ and observation["action_mask"].sum() == 3
        assert "action_mask" not in info  # moved into the observation, not read twice
        observation, _, _, _, info = env.step(int(np.flatnonzero(observation["action_mask"])[0]))
        assert observation["action_mask"].sum() == 3 and "action_mask" not in info
    finally:
        env.close()


def test_ignore_drops_the_mask():
    from rlplug.envs.spec import EnvSpec

    env = make_gym_env(EnvSpec(DICT, action_mask="ignore"))
    assert env.observation_space == gym.spaces.Box(0.0, 1.0, (4,), np.float32)
    assert env.reset(seed=0)[0].shape == (4,)
    env.close()
    build = Session().prepare("ppo-cartpole", "skrl", [f"env={INFO}"])  # info masks are read only when asked
    assert build.observation_space == gym.spaces.Box(0.0, 1.0, (4,), np.float32)


def test_the_encoder_reads_the_features_not_the_mask():
    build = Session().prepare("dqn-cartpole", "torchrl", ENVS["dict"])
    assert build.encoder == "mlp"  # the flat "observation" Box, not a multi-input over the mask too
    from rlplug.backends.torchrl import action_mask_key, observation_keys

    assert observation_keys(build) == ["observation"] and action_mask_key(build) == "action_mask"


# ---- refusals ----------------------------------------------------------------------------------------


def test_a_mask_on_box_actions_is_refused_naming_the_env():
    with pytest.raises(ActionMaskError) as refused:
        Session().prepare("sac-pendulum", "skrl", [f"env={DICT}", "env_kwargs={continuous = true}"])
    assert str(refused.value) == (
        f"environment '{DICT}' supplies an action mask (observation key 'action_mask') but its action space is "
        "Box(-1.0, 1.0, (1,), float32); action masks are for Discrete actions (set action_mask = \"ignore\" to train without it)"
    )


def test_a_mask_of_the_wrong_length_is_refused(capsys):
    refused_in_process(
        capsys, f"environment '{DICT}' declares an action mask (observation key 'action_mask') of shape (4,); its action "
        "space Discrete(5) needs (5,): one entry per action",
        "train", "dqn-cartpole", "--set", f"env={DICT}", "--set", "env_kwargs={mask_size = 4}", "--no-write",
    )  # fmt: skip


def test_an_algorithm_without_mask_support_is_refused(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))  # the example plugin's A2C: discrete actions, no masks declared
    refused_in_process(
        capsys, f"recipe 'mya2c-cartpole': environment '{DICT}' supplies an action mask (its observation key "
        "'action_mask'), which mya2c on skrl does not support (it would take masked actions); algorithms that honour "
        "masks: dqn, ppo; or set action_mask = \"ignore\" to train without it",
        "train", "mya2c-cartpole", "--plugin", "my_a2c:plugin", "--backend", "skrl", "--set", f"env={DICT}", "--no-write",
    )  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_info_mask_that_is_not_there_is_refused(backend):
    with pytest.raises(ActionMaskError) as refused:
        _build("dqn", backend, extra=["env=tiny_envs:Tiny-v0", "action_mask=info"]).trainer.close()
    assert str(refused.value) == ("environment 'tiny_envs:Tiny-v0' returned no info['action_mask'] in reset (the recipe's "
                                  "action_mask = \"info\" reads it there)")


def test_a_mask_with_no_valid_action_mid_episode_is_refused():
    from rlplug.envs.mask_wrappers import ActionMaskObservation

    class Stuck(gym.Wrapper):  # the env's mask empties after its first step, with the episode going on
        def step(self, action):
            observation, reward, terminated, truncated, info = self.env.step(action)
            return {**observation, "action_mask": np.zeros(N, np.int8)}, reward, False, truncated, info

    env = ActionMaskObservation(Stuck(gym.make(DICT)), DICT)
    observation, _ = env.reset(seed=0)
    with pytest.raises(ActionMaskError, match=r"^environment 'tiny_envs:TinyMasked-v0' returned an action mask with no "
                       r"valid action in step 1 of an episode that did not end the episode$"):
        env.step(int(np.flatnonzero(observation["action_mask"])[0]))


# ---- training: both conventions, both backends, PPO and DQN ---------------------------------------------


def _stored(build):
    """Every stored (action, mask of the observation it was taken in) of the trainer's rollout or replay."""
    from rlplug.backends.common.encoders import flat_mask_columns, split_flat_mask

    if build.backend == "skrl":
        memory = build.trainer.agent.memory
        rows = memory.memory_size if memory.filled else memory.memory_index
        observations = memory.tensors["observations"][:rows].reshape(-1, memory.tensors["observations"].shape[-1])
        actions = memory.tensors["actions"][:rows].reshape(-1)
        return actions.numpy(), split_flat_mask(flat_mask_columns(build.observation_space), observations)[1].numpy()
    data = build.memory[: len(build.memory)] if build.algorithm.name == "dqn" else build.memory._storage[:]
    return data["action"].reshape(-1).numpy(), data["action_mask"].reshape(-1, N).numpy()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("algorithm", ["ppo", "dqn"])
@pytest.mark.parametrize("source", ["dict", "info"])
def test_trains_a_few_hundred_steps_and_never_takes_a_masked_action(built, backend, algorithm, source):
    build = built(algorithm, backend, source)
    history = []
    build.trainer.train(384, callbacks=[lambda trainer, metrics: history.append(metrics)])
    losses = [value for row in history for name, value in row.items() if name.startswith("loss/")]
    assert losses and all(math.isfinite(v) for v in losses)
    actions, masks = _stored(build)
    assert len(actions) >= 64 and _valid(actions, masks)  # sampled / epsilon-greedy / warm-up actions
    assert all(math.isfinite(r) for r in build.trainer.evaluate(2))


@pytest.mark.parametrize("backend,collector", [("skrl", False), ("torchrl", False), ("torchrl", True)],
                         ids=["skrl", "torchrl-lean", "torchrl-collector"])
def test_a_resumed_dqn_run_stays_within_the_mask(built, backend, collector):
    extra = ["learning_starts=300", *(["torchrl.collector=true"] if collector else [])]  # resumed mid warm-up
    first = built("dqn", backend, extra=extra)
    first.trainer.train(192)
    state = weights_only_round_trip(first.trainer.state_dict())
    resumed = built("dqn", backend, extra=extra)
    resumed.trainer.load_state_dict(state)
    resumed.trainer.train(384)
    actions, masks = _stored(resumed)
    assert resumed.trainer.env_steps == 384 and _valid(actions, masks)


# ---- masked actions never chosen: greedy, sampled, epsilon-greedy, exported --------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("algorithm", ["ppo", "dqn"])
def test_greedy_actions_are_valid(built, backend, algorithm):
    build = built(algorithm, backend)
    batch = _random_batch()
    assert _valid(build.trainer.act_deterministic(batch), batch["action_mask"])


def _skrl_policy_outputs(build, batch):
    from rlplug.backends.skrl.models import flat_observations

    policy = build.models["policy"]
    flat = flat_observations(batch, "cpu")
    actions, outputs = policy.act({"observations": flat, "states": None}, role="policy")
    return actions, outputs["log_prob"], policy.distribution(role="policy").probs, policy.get_entropy(role="policy")


def _torchrl_policy_outputs(build, batch):
    from rlplug.backends.torchrl.modules import observation_batch
    from torchrl.envs import ExplorationType, set_exploration_type

    actor, td = build.models["actor"], observation_batch(batch)
    with set_exploration_type(ExplorationType.RANDOM):
        out = actor(td)
    dist = actor.get_dist(td)
    return out["action"], out["action_log_prob"], dist.probs, dist.entropy()


@pytest.mark.parametrize("backend", BACKENDS)
def test_ppo_gives_masked_actions_zero_probability_and_no_nan(built, backend):
    build = built("ppo", backend)
    batch = _random_batch(256)
    outputs = _skrl_policy_outputs if backend == "skrl" else _torchrl_policy_outputs
    actions, log_prob, probs, entropy = outputs(build, batch)
    mask = torch.as_tensor(batch["action_mask"])
    assert _valid(actions, batch["action_mask"])  # 256 samples
    assert torch.all(probs[~mask] == 0) and torch.allclose(probs.sum(-1), torch.ones(len(probs)))
    assert torch.isfinite(log_prob).all() and torch.isfinite(entropy).all()
    assert torch.allclose(entropy[:8], torch.zeros(8), atol=1e-6)  # one valid action: certain, no entropy
    (log_prob.sum() + entropy.sum()).backward()
    grads = [p.grad for p in build.models["policy" if backend == "skrl" else "actor"].parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_skrl_dqn_explores_among_the_valid_actions_only(built):
    from rlplug.backends.skrl.models import flat_observations

    build = built("dqn", "skrl")
    agent, batch = build.trainer.agent, _random_batch(256)
    actions, _ = agent.act(flat_observations(batch, "cpu"), None, timestep=0, timesteps=1000)
    assert agent.epsilon == 1.0 and _valid(actions, batch["action_mask"])


@pytest.mark.parametrize("lean", [False, True], ids=["tensordict", "tensors"])
def test_torchrl_dqn_explores_among_the_valid_actions_only(built, lean):
    from rlplug.backends.torchrl.acting import tensor_policy
    from rlplug.backends.torchrl.modules import observation_batch
    from torchrl.envs import ExplorationType, set_exploration_type

    build = built("dqn", "torchrl")
    trainer, batch = build.trainer, _random_batch(256)
    trainer.egreedy.eps.fill_(1.0)
    td = observation_batch(batch)
    with set_exploration_type(ExplorationType.RANDOM):
        if lean:  # the lean collection's acting on tensors: masked QValueModule and EGreedyModule steps
            policy = tensor_policy(trainer.exploration_policy, ["observation", "action_mask"], td.batch_size)
            assert policy is not None
            actions = policy(dict(td.items()))["action"]
        else:
            actions = trainer.exploration_policy(td)["action"]
    assert _valid(actions, batch["action_mask"])
    assert len(set(actions.tolist())) == N  # every action drawn somewhere: random, not greedy


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("algorithm", ["ppo", "dqn"])
def test_exported_files_take_the_mask_and_never_pick_a_masked_action(built, tmp_path, backend, algorithm):
    import importlib.util

    from rlplug.results.export import export_policy, load_exported

    build = built(algorithm, backend)
    build.trainer.train(128)
    formats = ["torchscript"] + (["onnx"] if importlib.util.find_spec("onnxruntime") else [])
    batch = _random_batch(256, seed=1)
    for fmt in formats:
        written = export_policy(build, tmp_path / f"policy.{fmt}", fmt)  # checked against act_deterministic
        assert [spec["name"] for spec in written["metadata"]["inputs"]] == ["action_mask", "observation"]
        actions = load_exported(written["path"]).act(batch)
        assert _valid(actions, batch["action_mask"])
        np.testing.assert_array_equal(actions, build.trainer.act_deterministic(batch))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_recurrent_ppo_policy_never_takes_a_masked_action(built, tmp_path, backend):
    """An LSTM between the encoder and the head: the mask still reaches the head (sampled, greedy and exported)."""
    from rlplug.results.export import export_policy, load_exported

    build = built("ppo", backend, extra=['recurrent="lstm"', "recurrent_hidden_size=8", "sequence_length=8"])
    build.trainer.train(256)
    actions, masks = _stored(build)
    assert len(actions) >= 64 and _valid(actions, masks)
    batch = _random_batch(256, seed=1)
    build.trainer.reset_acting_state()
    assert _valid(build.trainer.act_deterministic(batch), batch["action_mask"])
    written = export_policy(build, tmp_path / "policy.torchscript", "torchscript")  # checked against act_deterministic
    assert [spec["name"] for spec in written["metadata"]["inputs"]] == ["action_mask", "observation"]
    assert _valid(load_exported(written["path"]).act(batch), batch["action_mask"])


# ---- DQN's target: the max over the next step's valid actions -------------------------------------------

Q_VALUES = torch.tensor([1.0, 5.0, 3.0, 10.0, 2.0])  # Q(s', .) for every s'
NEXT_MASK = [True, False, True, False, True]  # action 3 (Q = 10) masked: the max is Q = 3 (action 2)
REWARD, GAMMA, TAKEN = 1.0, 0.99, 1
TARGET = REWARD + GAMMA * 3.0  # 3.97; without the mask 1 + 0.99 * 10 = 10.9


def _constant_q(parameters):
    """Every Q network made to output ``Q_VALUES`` whatever it reads: last layer's weights 0, bias Q_VALUES."""
    with torch.no_grad():
        for value in parameters:
            if value.shape == (N,):
                value.copy_(Q_VALUES)
            elif value.ndim == 2 and value.shape[0] == N:
                value.zero_()


@pytest.mark.parametrize("double", [False, True])
def test_skrl_dqn_target_maxes_over_the_valid_next_actions(built, double):
    from rlplug.backends.skrl.models import flat_observations

    build = built("dqn", "skrl", extra=[f"double_dqn={str(double).lower()}", "td_loss=l2"])
    for name in ("q_network", "target_q_network"):
        _constant_q(build.models[name].parameters())
    now = {"action_mask": np.array([[True] * N]), "observation": np.eye(4, dtype=np.float32)[:1]}
    then = {"action_mask": np.array([NEXT_MASK]), "observation": np.eye(4, dtype=np.float32)[1:2]}
    batch = {
        "observations": flat_observations(now, "cpu"), "next_observations": flat_observations(then, "cpu"), "states": None,
        "next_states": None, "actions": torch.tensor([[TAKEN]]), "rewards": torch.tensor([[REWARD]]),
        "terminated": torch.tensor([[False]]),
    }  # fmt: skip
    terms = build.loss(build.trainer.agent, batch, "q")
    assert terms["q_target"].item() == pytest.approx(TARGET)
    assert terms["loss_q"].item() == pytest.approx((Q_VALUES[TAKEN].item() - TARGET) ** 2)


@pytest.mark.parametrize("double", [False, True])
@pytest.mark.parametrize("loss", ["dqn", "dqn-lean"])
def test_torchrl_dqn_target_maxes_over_the_valid_next_actions(built, loss, double):
    from tensordict import TensorDict

    build = built("dqn", "torchrl", extra=[f"loss={loss}", f"double_dqn={str(double).lower()}", "td_loss=l2"])
    _constant_q([*build.loss.value_network_params.values(True, True), *build.loss.target_value_network_params.values(True, True)])
    batch = TensorDict({
        "observation": torch.eye(4)[:1], "action_mask": torch.ones(1, N, dtype=torch.bool), "action": torch.tensor([TAKEN]),
        "next": {"observation": torch.eye(4)[1:2], "action_mask": torch.tensor([NEXT_MASK]), "reward": torch.tensor([[REWARD]]),
                 "done": torch.tensor([[False]]), "terminated": torch.tensor([[False]]), "truncated": torch.tensor([[False]])},
    }, batch_size=[1])  # fmt: skip
    value = build.loss(batch)["loss"].item()
    assert value == pytest.approx((Q_VALUES[TAKEN].item() - TARGET) ** 2, rel=1e-5)  # l2: the squared TD error
