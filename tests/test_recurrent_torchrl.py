"""Recurrent PPO on TorchRL (issue 33): hidden states carried through the rollout and reset at episode starts,
the update's sequences replaying the rollout (a reset inside a sequence included), resume equivalence with
hidden states mid-episode, deterministic acting that carries its state, and the exported policy
``(observation, hidden) -> (action, hidden)`` acting as the trainer does over a whole episode."""

from __future__ import annotations

import io
import math

import gymnasium as gym
import numpy as np
import pytest

from conftest import make_ppo_build

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from rlplug.backends.torchrl.recurrent import INIT_KEY, cut_sequences, module_hidden_keys  # noqa: E402
from rlplug.errors import RecipeError  # noqa: E402
from torchrl.modules import set_recurrent_mode  # noqa: E402

NO_VELOCITY = "RlplugTestCartPoleNoVel-v1"
SMALL = dict(hidden_sizes=[16], recurrent_hidden_size=16, epochs=2, minibatches=2)


def cartpole_without_velocities() -> gym.Env:
    """CartPole observing position and angle only (indices 0 and 2): a task a policy needs memory for."""
    env = gym.make("CartPole-v1")
    space = gym.spaces.Box(env.observation_space.low[[0, 2]], env.observation_space.high[[0, 2]], dtype=np.float32)
    return gym.wrappers.TransformObservation(env, lambda obs: obs[[0, 2]], space)


if NO_VELOCITY not in gym.registry:
    gym.register(NO_VELOCITY, entry_point=cartpole_without_velocities)


@pytest.fixture
def builds(ppo_builds):
    def make(**kwargs):
        return ppo_builds("torchrl", **{**SMALL, **kwargs})

    return make


def _captured_batches(trainer) -> list:
    batches = []
    trainer.register_op("batch_process", lambda batch: batches.append(batch.clone()) or batch)
    return batches


def test_hidden_states_are_carried_through_the_rollout_and_reset_at_episode_starts(builds):
    build = builds(env_id=NO_VELOCITY, recurrent="lstm", num_envs=4, rollout_steps=32, sequence_length=8, seed=1)
    trainer = build.trainer
    batches, history = _captured_batches(trainer), []
    trainer.train(384, callbacks=[lambda _, metrics: history.append(metrics)])
    assert trainer.recurrent_state_shape == (1, 32)  # an LSTM's h and c side by side
    assert len(history) == 3 and all(math.isfinite(v) for m in history for v in m.values())
    keys = module_hidden_keys(trainer.actor) + module_hidden_keys(trainer.critic)
    assert keys == ["actor_rnn_h", "actor_rnn_c", "critic_rnn_h", "critic_rnn_c"]
    starts = 0
    for batch in batches:
        is_init, done = batch[INIT_KEY].squeeze(-1), batch["next", "done"].squeeze(-1)
        assert torch.equal(is_init[:, 1:], done[:, :-1])  # a step after an episode's end starts the next one
        starts += int(is_init.sum())
        for key in keys:
            stored, after = batch[key], batch["next", key]
            assert not stored[is_init].any()  # zeros start every episode
            assert stored[~is_init].abs().sum(dim=(-1, -2)).gt(0).all()
            carried = (stored[:, 1:] == after[:, :-1]).flatten(2).all(-1)
            assert torch.equal(carried, ~done[:, :-1])  # the state after a step is the next step's, within an episode
    assert starts > 4  # episodes ended inside the rollouts, not only at the first batch


def test_the_update_replays_each_sequence_from_its_stored_state_with_resets_inside(builds):
    build = builds(recurrent="gru", num_envs=2, rollout_steps=48, sequence_length=12, recurrent_layers=2, seed=3)
    trainer = build.trainer
    checked = []

    def replay(batch):  # before the update: the actor still has the parameters the rollout acted with
        sequences = cut_sequences(batch, 12)
        assert sequences.shape == (8, 12)
        assert torch.equal(sequences["observation"][5], batch["observation"][1, 12:24])  # env 1's second sequence
        inside = sequences[INIT_KEY][:, 1:].squeeze(-1).any(-1)
        assert inside.any(), "no episode started inside a sequence"
        with torch.no_grad(), set_recurrent_mode(True):
            log_prob = trainer.actor.get_dist(sequences.exclude("action_log_prob")).log_prob(sequences["action"])
            without_resets = sequences.exclude("action_log_prob").clone()
            without_resets[INIT_KEY][:, 1:] = False
            leaked = trainer.actor.get_dist(without_resets).log_prob(sequences["action"])
        torch.testing.assert_close(log_prob, sequences["action_log_prob"], rtol=0, atol=1e-5)
        # carrying the ended episode's state over the reset would act differently: the reset is what matches
        assert (leaked - sequences["action_log_prob"])[inside].abs().max() > 1e-3
        checked.append(True)
        return batch

    trainer.register_op("batch_process", replay)
    history = []
    trainer.train(96, callbacks=[lambda _, metrics: history.append(metrics)])
    assert checked == [True]
    assert history[0]["train/minibatches"] == 2 * 2  # epochs x (8 sequences / 4 per minibatch)


def test_a_recurrent_cell_resumes_equivalently_with_hidden_states_mid_episode(builds):
    from rlplug.testing import check_cell

    overrides = ["num_envs=2", "rollout_steps=16", "sequence_length=8", "hidden_sizes=[16]", "recurrent=lstm",
                 "recurrent_hidden_size=16", "epochs=2"]  # fmt: skip
    assert "resume equivalence" in check_cell("ppo-cartpole", "torchrl", overrides, steps=64)
    # what the check's checkpoint at 64 steps holds: episodes under way, with the state they carry
    trainer = builds(recurrent="lstm", num_envs=2, rollout_steps=16, sequence_length=8, seed=42).trainer
    trainer.train(64)
    carrier = trainer.state_dict()["collector"]["carrier"]
    running = ~carrier[INIT_KEY].squeeze(-1)
    assert running.any() and carrier["actor_rnn_h"][running].abs().sum() > 0


def test_sequence_length_must_divide_each_envs_rollout(builds):
    with pytest.raises(RecipeError, match="sequence_length 10 does not divide rollout_steps 32"):
        builds(recurrent="gru", num_envs=2, rollout_steps=32, sequence_length=10)


# ---- acting and export ----------------------------------------------------------------------------


def test_deterministic_acting_and_the_exported_policy_carry_the_same_state_over_an_episode(builds):
    build = builds(env_id="Pendulum-v1", recurrent="gru", num_envs=2, rollout_steps=16, sequence_length=8,
                   recurrent_layers=2, normalize_observations=True, seed=2)  # fmt: skip
    trainer = build.trainer
    trainer.train(64)
    assert trainer.recurrent_state_shape == (2, 16)
    module = trainer.export_policy().eval()
    hidden_spec = module.signature["hidden"]
    assert hidden_spec == {"name": "hidden", "dtype": "float32", "shape": ["B", 2, 16]}

    env = gym.make("Pendulum-v1")
    observations = [env.reset(seed=7)[0]]
    trainer.reset_acting_state()
    actions = []
    for _ in range(200):  # a whole episode (Pendulum's time limit)
        actions.append(trainer.act_deterministic(observations[-1][None])[0])
        observation, _, terminated, truncated, _ = env.step(actions[-1])
        observations.append(observation)
    assert truncated and not terminated
    observations = np.stack(observations[:200]).astype(np.float32)

    zeros = torch.zeros(1, *trainer.recurrent_state_shape)
    with torch.no_grad():
        traced = torch.jit.trace(module, (torch.from_numpy(observations[:1]), zeros), check_trace=False)
        hidden, exported = zeros, []
        for observation in observations:
            action, hidden = traced(torch.from_numpy(observation[None]), hidden)
            exported.append(action[0].numpy())
    np.testing.assert_allclose(np.stack(exported), np.stack(actions), rtol=0, atol=1e-5)

    # the state is carried from call to call, and reset by reset_acting_state or a new batch size
    trainer.reset_acting_state()
    first, carried = trainer.act_deterministic(observations[:1]), trainer.act_deterministic(observations[:1])
    assert np.abs(first - carried).max() > 1e-4
    trainer.reset_acting_state()
    np.testing.assert_allclose(trainer.act_deterministic(observations[:1]), first, rtol=0, atol=0)
    pair = trainer.act_deterministic(observations[:2])
    with torch.no_grad():
        fresh, _ = module(torch.from_numpy(observations[:2]), torch.zeros(2, *trainer.recurrent_state_shape))
    np.testing.assert_allclose(pair, fresh.numpy(), rtol=0, atol=1e-5)

    onnxruntime = pytest.importorskip("onnxruntime")
    buffer = io.BytesIO()
    names = {"observation": {0: "batch"}, "hidden": {0: "batch"}, "action": {0: "batch"}, "next_hidden": {0: "batch"}}
    torch.onnx.export(module, (torch.from_numpy(observations[:1]), zeros), buffer, dynamo=False, opset_version=17,
                      input_names=["observation", "hidden"], output_names=["action", "next_hidden"], dynamic_axes=names)  # fmt: skip
    session = onnxruntime.InferenceSession(buffer.getvalue())
    hidden, exported = zeros.numpy(), []
    for observation in observations:
        action, hidden = session.run(None, {"observation": observation[None], "hidden": hidden})
        exported.append(action[0])
    np.testing.assert_allclose(np.stack(exported), np.stack(actions), rtol=0, atol=1e-5)


def test_dict_observations_with_images_go_through_the_encoder_into_the_core(tmp_path):
    import image_envs  # noqa: F401 - registers the tiny environments
    import rlplug

    recipes = tmp_path / "recipes.toml"
    recipes.write_text(
        '[recipes.dict-lstm]\nextends = "ppo-cartpole"\nenv = "RlplugTinyDict-v0"\nnum_envs = 2\n'
        "encoder_kwargs = { channels = [4], kernels = [3], strides = [1], features = 8 }\n"
        '[recipes.dict-lstm.hyperparameters]\nrollout_steps = 16\nepochs = 1\nhidden_sizes = [16]\nrecurrent = "lstm"\n'
        "recurrent_hidden_size = 8\nsequence_length = 8\n"
    )
    session = rlplug.pipeline.session.Session(recipe_files=[str(recipes)])
    build = session.build("dict-lstm", "torchrl")
    try:
        trainer = build.trainer
        trainer.train(64)
        assert build.encoder == "multi_input"
        assert trainer.memory.storage[0]["image"].dtype == torch.uint8  # one stored sequence: [8, 8, 8, 1] frames
        observations = {"image": np.full((3, 8, 8, 1), 255, np.uint8), "vector": np.ones((3, 3), np.float32)}
        actions = trainer.act_deterministic(observations)
        trainer.reset_acting_state()
        module = trainer.export_policy()
        assert module.input_names == ["image", "vector", "hidden"]
        with torch.no_grad():
            exported, hidden = module(torch.from_numpy(observations["image"]), torch.from_numpy(observations["vector"]),
                                      torch.zeros(3, 1, 16))  # fmt: skip
        np.testing.assert_array_equal(exported.numpy(), actions)
        assert hidden.shape == (3, 1, 16)
    finally:
        build.trainer.close()
