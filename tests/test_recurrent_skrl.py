"""Recurrent PPO on skrl (issue 33): hidden states carried through the rollout and reset at episode ends,
sequences replayed from their stored states, resume equivalence mid-episode, acting and export that carry
the state over whole episodes; and ``hide_observation``, the masking wrapper its recipes use."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from conftest import make_ppo_build

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")

from rlplug import RlplugError  # noqa: E402
from rlplug.backends.skrl import model_inputs  # noqa: E402
from rlplug.backends.skrl.recurrent_agent import RecurrentOnPolicyAgent  # noqa: E402
from rlplug.backends.skrl.rollout_agent import sequence_minibatches  # noqa: E402
from rlplug.pipeline.session import Session  # noqa: E402
from rlplug.testing import ConformanceError, check_cell  # noqa: E402

HAS_ONNX = all(importlib.util.find_spec(m) is not None for m in ("onnx", "onnxruntime"))
FORMATS = ("torchscript", "onnx") if HAS_ONNX else ("torchscript",)
LENGTH = 8
TINY = ["num_envs=2", "rollout_steps=16", f"sequence_length={LENGTH}", "minibatches=2", "epochs=2", "recurrent_hidden_size=8",
        "hidden_sizes=[16]"]  # fmt: skip


def _build(kind, env_id="CartPole-v1", **hp):
    hp = {"num_envs": 3, "rollout_steps": 32, "minibatches": 2, "epochs": 1, "recurrent": kind, "recurrent_hidden_size": 8,
          "recurrent_layers": 2, "sequence_length": LENGTH, "hidden_sizes": [16], **hp}  # fmt: skip
    return make_ppo_build("skrl", env_id=env_id, **hp)


def _rollout_without_update(build):
    """One rollout into the memory, the update replaced by nothing: what the update would read."""
    agent = build.trainer.agent
    agent.update = lambda **_: None
    with pytest.raises(IndexError):  # no update, so no loss terms tracked for the metrics
        build.trainer.step()
    return agent


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_replaying_the_rollout_in_sequences_gives_back_its_log_probs_and_values(kind):
    build = _build(kind)
    try:
        agent = _rollout_without_update(build)
        tensors = agent.memory.tensors
        done = (tensors["terminated"] | tensors["truncated"])[..., 0]  # [steps, envs]
        inside = done.view(-1, LENGTH, done.shape[1])[:, :-1].any()
        assert inside, "the rollout has no episode end inside a sequence; the test would not check the resets"
        names = [*agent._tensors_names, *agent._rnn_tensors_names]
        agent.enable_models_training_mode(True)  # the update's mode: sequences
        with torch.no_grad():
            for sampled in sequence_minibatches(agent.memory, names, 2, LENGTH):
                batch = dict(zip(names, sampled))
                _, outputs = agent.policy.act({**model_inputs(batch, "policy"), "taken_actions": batch["actions"]}, role="policy")
                values, _ = agent.value.act(model_inputs(batch, "value"), role="value")
                torch.testing.assert_close(outputs["log_prob"], batch["log_prob"], rtol=0, atol=1e-5)
                torch.testing.assert_close(values, batch["values"], rtol=0, atol=1e-5)
                # the stored states matter: from zeros the same sequences give other log-probabilities
                zeros = {key: torch.zeros_like(x) if key.startswith("rnn_") else x for key, x in batch.items()}
                _, fresh = agent.policy.act({**model_inputs(zeros, "policy"), "taken_actions": batch["actions"]}, role="policy")
                assert (fresh["log_prob"] - batch["log_prob"]).abs().max() > 1e-4
    finally:
        build.trainer.close()


def test_states_are_carried_through_the_rollout_and_zero_after_an_episode_end():
    build = _build("lstm")
    try:
        agent = _rollout_without_update(build)
        tensors = agent.memory.tensors
        done = (tensors["terminated"] | tensors["truncated"])[..., 0]
        assert done[:-1].any() and not done[:-1].all()
        for name in agent._rnn_tensors_names:  # the state each step acted from: [steps, envs, layers, hidden]
            stored = tensors[name].abs().flatten(2).amax(-1)
            assert stored[0].eq(0).all(), name  # a run begins from zeros
            assert stored[1:][done[:-1]].eq(0).all(), name  # the step after an episode end begins from zeros
            assert stored[1:][~done[:-1]].gt(0).all(), name  # every other step carries the state on
    finally:
        build.trainer.close()


def test_sequence_minibatches_deal_whole_sequences_of_one_env_each():
    from skrl.memories.torch import RandomMemory

    steps, envs = 8, 3
    memory = RandomMemory(memory_size=steps, num_envs=envs, device="cpu")
    memory.create_tensor("where", size=2, dtype=torch.float32)
    for t in range(steps):
        memory.add_samples(where=torch.tensor([[t, e] for e in range(envs)], dtype=torch.float32))
    batches = sequence_minibatches(memory, ["where"], 4, 4)
    assert sorted(len(rows) for (rows,) in batches) == [4, 4, 8, 8]  # 6 sequences of 4 steps in 4 minibatches
    seen = set()
    for (rows,) in batches:
        for sequence in rows.view(-1, 4, 2):
            times, env = sequence[:, 0].tolist(), sequence[:, 1].unique().tolist()
            assert len(env) == 1 and times in ([0, 1, 2, 3], [4, 5, 6, 7])  # consecutive steps of one env
            seen.add((env[0], times[0]))
    assert len(seen) == envs * steps // 4  # every sequence once


def test_a_recurrent_cell_conforms_and_resumes_with_hidden_states_mid_episode():
    passed = check_cell("ppo-lstm-cartpole-novel", "skrl", TINY, steps=64)
    assert passed[-1] == "resume equivalence"


def test_the_resume_check_sees_hidden_states_left_out_of_the_checkpoint(monkeypatch):
    saved_load = RecurrentOnPolicyAgent.load_carried_states

    def forgetful(agent, saved):  # a checkpoint that restarts the carried states from zeros
        saved_load(agent, {role: [torch.zeros_like(s) for s in states] for role, states in saved.items()})

    monkeypatch.setattr(RecurrentOnPolicyAgent, "load_carried_states", forgetful)
    with pytest.raises(ConformanceError, match=r"^\[resume equivalence\]"):
        check_cell("ppo-lstm-cartpole-novel", "skrl", [*TINY, "recurrent=\"gru\""], steps=64)


@pytest.mark.parametrize("kind,width", [("lstm", 16), ("gru", 8)])
def test_acting_carries_the_hidden_state_until_reset_or_a_new_batch_size(kind, width):
    build = _build(kind)
    trainer = build.trainer
    try:
        assert trainer.recurrent_state_shape == (2, width)
        observations = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
        trainer.reset_acting_state()
        first = [trainer.act_deterministic(observations) for _ in range(4)]
        carried = trainer._acting_hidden.clone()
        assert carried.shape == (5, 2, width) and carried.abs().max() > 0
        trainer.reset_acting_state()
        assert np.array_equal(trainer.act_deterministic(observations), first[0])
        trainer.act_deterministic(observations[:2])  # another batch size starts from zeros
        assert trainer._acting_hidden.shape == (2, 2, width)
    finally:
        trainer.close()


def test_a_feed_forward_cell_has_no_recurrent_state():
    build = make_ppo_build("skrl", num_envs=2, rollout_steps=16, hidden_sizes=[16])
    try:
        assert build.trainer.recurrent_state_shape is None
        assert not any(name.startswith("rnn_") for name in build.trainer.agent.memory.tensors)
    finally:
        build.trainer.close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_exported_recurrent_policy_acts_as_the_trainer_over_whole_episodes(tmp_path, fmt):
    from rlplug.results.export import evaluate_exported, export_policy, load_exported

    build = Session().build("ppo-lstm-pendulum-novel", "skrl", [*TINY, "rollout_steps=32", "steps=64", "eval_episodes=2"])
    try:
        build.trainer.train(64)
        path = tmp_path / ("policy.pt" if fmt == "torchscript" else "policy.onnx")
        result = export_policy(build, path, fmt)  # checked over 2 whole Pendulum episodes (200 steps each)
        assert result["max_abs_difference"] <= 1e-5
        assert result["metadata"]["hidden"] == {"name": "hidden", "dtype": "float32", "shape": ["B", 1, 16]}
        exported = load_exported(path)
        # the same episodes; onnxruntime's float arithmetic differs from torch's in the last bits
        assert evaluate_exported(build, exported, 2) == pytest.approx(build.trainer.evaluate(2), rel=1e-6)

        # one call with a state of the caller's: zeros start an episode, the returned state is the next input
        observation = np.zeros((1, 2), dtype=np.float32)
        build.trainer.reset_acting_state()
        action, hidden = exported.step(observation, np.zeros((1, 1, 16), dtype=np.float32))
        np.testing.assert_allclose(action, build.trainer.act_deterministic(observation), atol=1e-5)
        np.testing.assert_allclose(hidden, build.trainer._acting_hidden.numpy(), atol=1e-5)
    finally:
        build.trainer.close()


@pytest.mark.parametrize("env_id", ["RlplugTinyImage-v0", "RlplugTinyDict-v0"])
def test_the_core_reads_the_encoders_features_of_images_and_dicts(tmp_path, env_id):
    import image_envs  # noqa: F401 - registers the tiny image and Dict environments
    from rlplug.results.export import export_policy

    cnn = "encoder_kwargs={ channels = [4], kernels = [3], strides = [1], features = 8 }"
    build = Session().build("ppo-lstm-cartpole-novel", "skrl", [*TINY, "hide_observation=[]", f'env="{env_id}"', cnn, "steps=64"])
    try:
        policy = build.trainer.agent.policy
        assert policy.recurrent.rnn.input_size == policy.encoder.features  # the core reads the encoder's features
        build.trainer.train(64)
        assert export_policy(build, tmp_path / "policy.pt")["max_abs_difference"] == 0.0  # checked over 2 episodes
    finally:
        build.trainer.close()


def test_an_export_whose_state_is_not_carried_is_refused(tmp_path, monkeypatch):
    from rlplug.errors import ExportUnsupportedError
    from rlplug.results.export import ExportedFile, export_policy

    build = Session().build("ppo-lstm-pendulum-novel", "skrl", [*TINY, "rollout_steps=32", "steps=64"])
    step = ExportedFile.step
    monkeypatch.setattr(ExportedFile, "step", lambda self, observations, hidden=None: step(self, observations, np.zeros_like(hidden)))
    try:
        build.trainer.train(64)
        with pytest.raises(ExportUnsupportedError, match="differ from act_deterministic's"):
            export_policy(build, tmp_path / "policy.pt")
        assert not (tmp_path / "policy.pt").exists()
    finally:
        build.trainer.close()


# ---- hide_observation -------------------------------------------------------------------------------


def test_hide_observation_removes_entries_in_training_and_evaluation():
    from rlplug.envs.factory import make_gym_env

    build = Session().prepare("ppo-lstm-cartpole-novel")
    space = build.observation_space
    assert space.shape == (2,) and np.allclose(space.high, [4.8, 0.41887903])  # position and angle, velocities gone
    for training in (True, False):
        env = make_gym_env(build.env_spec, training=training)
        observation, _ = env.reset(seed=0)
        full, _ = make_gym_env("CartPole-v1").reset(seed=0)
        assert np.array_equal(observation, full[[0, 2]])
        env.close()
    assert build.recipe.to_table()["hide_observation"] == [1, 3]  # a recipe field: `rlplug show` prints it


def test_hide_observation_refusals_are_one_line():
    session = Session()
    cases = {
        "hide_observation=[4]": "hide_observation = [4]: index 4 is outside the observation of 'CartPole-v1', which has 4 "
                                "entries (indices 0 to 3)",
        "hide_observation=[0, 1, 2, 3]": "hide_observation = [0, 1, 2, 3] hides all 4 entries of the observation of "
                                         "'CartPole-v1'; keep at least one",
        "env=\"FrozenLake-v1\"": "hide_observation = [1, 3] removes entries of a flat Box observation; 'FrozenLake-v1' "
                                 "observes Discrete(16)",
    }  # fmt: skip
    for override, line in cases.items():
        with pytest.raises(RlplugError) as caught:
            session.prepare("ppo-lstm-cartpole-novel", overrides=[override])
        assert str(caught.value) == line
    with pytest.raises(RlplugError, match=r"'hide_observation' = \[1, 1\] lists index 1 twice"):
        session.resolve("ppo-lstm-cartpole-novel", ["hide_observation=[1, 1]"])


def test_hiding_other_entries_changes_the_task_and_drops_the_target():
    session = Session()
    assert session.resolve("ppo-cartpole-novel").target == session.resolve("ppo-lstm-cartpole-novel").target == 475.0
    assert session.resolve("ppo-lstm-cartpole-novel", ["hide_observation=[]"]).target is None
    assert "hide_observation" not in session.resolve("ppo-cartpole").to_table()  # recipes that hide nothing print as before
