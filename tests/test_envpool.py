"""``vector_mode = "envpool"``: EnvPool's pool behind gymnasium's VectorEnv API with the SAME_STEP autoreset every other
vector mode gives (final observations, truncations), trained on both backends, refused in one line where it cannot run."""

from __future__ import annotations

import numpy as np
import pytest

from rlplug.envs.factory import make_gym_vector_env
from rlplug.envs.spec import EnvSpec
from rlplug.errors import RlplugError
from rlplug.pipeline.session import Session

pytest.importorskip("envpool")
ON_POLICY = ["num_envs=4", "rollout_steps=32", "minibatches=2", "epochs=1", "hidden_sizes=[16, 16]"]


def _run(vector_env, actions):
    out = []
    vector_env.reset(seed=3)
    for action in actions:
        out.append(vector_env.step(action))
    vector_env.close()
    return out


def test_a_time_limit_truncates_and_resets_in_the_same_step_as_gymnasiums_vector_env():
    """Pendulum never terminates: with time_limit = 5 every copy is truncated at steps 5 and 10, the step returns the
    reset observation and info carries the last one, with the keys and masks gymnasium's SyncVectorEnv writes."""
    actions = [np.zeros((3, 1), dtype=np.float32)] * 10
    pool = _run(make_gym_vector_env(EnvSpec(id="Pendulum-v1", time_limit=5, vector_mode="envpool"), None, 3), actions)
    sync = _run(make_gym_vector_env(EnvSpec(id="Pendulum-v1", time_limit=5), None, 3), actions)
    for step, (ours, theirs) in enumerate(zip(pool, sync), start=1):
        observations, rewards, terminated, truncated, info = ours
        assert observations.shape == theirs[0].shape and observations.dtype == theirs[0].dtype
        assert rewards.shape == theirs[1].shape and not terminated.any()
        assert truncated.tolist() == theirs[3].tolist() == [step % 5 == 0] * 3
        assert set(info) == set(theirs[4]) - {"final_info", "_final_info"} | ({"final_info", "_final_info"} if info else set())
        if step % 5 == 0:
            assert info["_final_obs"].all() and all(final.shape == (3,) for final in info["final_obs"])
            last = np.stack(info["final_obs"])
            assert not np.allclose(last, observations)  # the step returned the new episode's first observation
    # a new episode starts where it would with gymnasium: the pole hangs at a random angle, moving slowly
    assert np.abs(pool[5][0][:, 2]).max() <= 1.0


def test_a_terminated_episode_hands_over_its_final_observation():
    vector_env = make_gym_vector_env(EnvSpec(id="CartPole-v1", vector_mode="envpool"), None, 2)
    vector_env.reset(seed=0)
    for _ in range(200):
        observations, _, terminated, truncated, info = vector_env.step(np.ones(2, dtype=np.int64))
        if terminated.any():
            break
    i = int(np.flatnonzero(terminated)[0])
    final = info["final_obs"][i]
    assert abs(final[2]) > 0.2094 or abs(final[0]) > 2.4  # the pole fell (or the cart left): why it terminated
    assert np.abs(observations[i]).max() <= 0.05  # CartPole's reset state
    vector_env.close()


def test_the_same_seed_gives_the_same_transitions_and_a_new_seed_others():
    spec = EnvSpec(id="CartPole-v1", vector_mode="envpool")
    actions = [np.array([0, 1])] * 30
    first, again = _run(make_gym_vector_env(spec, None, 2), actions), _run(make_gym_vector_env(spec, None, 2), actions)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(first, again))
    other = make_gym_vector_env(spec, None, 2)
    assert not np.array_equal(other.reset(seed=4)[0], first[0][0])


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_ppo_trains_on_envpool_on_both_backends_and_a_resume_starts_new_episodes(backend):
    build = Session().build("ppo-cartpole", backend, ["vector_mode=envpool", *ON_POLICY])
    try:
        build.trainer.train(256)
        assert build.trainer.progress >= 256
        assert np.isfinite(build.trainer.evaluate(1)).all()
    finally:
        build.trainer.close()


def test_a_checkpoint_keeps_no_envpool_state_and_a_resume_starts_new_episodes():
    from rlplug.envs.state import load_vector_env_state, vector_env_state

    vector_env = make_gym_vector_env(EnvSpec(id="CartPole-v1", vector_mode="envpool"), None, 2)
    state = vector_env_state(vector_env)
    assert state["workers"] and state["envs"] == []
    assert load_vector_env_state(vector_env, state) is True  # the caller resets: new episodes
    vector_env.close()


REFUSALS = [
    (["vector_mode=envpool", "frame_stack=2"], "environment 'CartPole-v1' with vector_mode = \"envpool\": frame_stack wraps "
     "each gymnasium copy, and EnvPool's copies are its own C++ envs; use vector_mode = \"sync\" or \"async\" for it"),
    (["vector_mode=envpool", "env=tiny_envs:Tiny-v0"], "EnvPool steps only its own tasks, not a module's registration"),
    (["vector_mode=envpool", "env=MountainCar-v0"], None),  # EnvPool has it: no refusal
    (["vector_mode=envpool", "env_kwargs={no_such_option = 1}"], "rejected env_kwargs {'no_such_option': 1}"),
]


@pytest.mark.parametrize("overrides,line", REFUSALS, ids=[" ".join(r[0]) for r in REFUSALS])
def test_what_envpool_cannot_run_is_one_line(overrides, line, monkeypatch):
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    if line is None:
        Session().prepare("ppo-cartpole", overrides=overrides)
        return
    with pytest.raises(RlplugError) as caught:
        build = Session().prepare("ppo-cartpole", overrides=overrides)
        make_gym_vector_env(build.env_spec, None, 2).close()  # env_kwargs reach EnvPool when the pool is made
    assert "\n" not in str(caught.value) and caught.value.exit_code == 2 and line in str(caught.value), str(caught.value)


def test_an_id_envpool_lacks_is_refused_with_a_did_you_mean():
    from rlplug.envs.envpool_vector import check_envpool

    with pytest.raises(RlplugError, match="EnvPool has no task 'CartPole-v9' \\(did you mean 'CartPole-v1'\\?\\)"):
        check_envpool(EnvSpec(id="CartPole-v9", vector_mode="envpool"))
