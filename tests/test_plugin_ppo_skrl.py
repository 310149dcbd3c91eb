"""ppo/skrl: the loss-delegating agent matches upstream skrl PPO, trains, and round-trips its state."""

from __future__ import annotations

import copy
import functools
import io
import math

import numpy as np
import pytest

from conftest import make_ppo_build

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")

from rlplug.backends.skrl import configure_threads, seed_skrl, stochastic_policy, value_model  # noqa: E402
from rlplug.backends.skrl.env import make_vector_env, true_next_observations  # noqa: E402
from rlplug_ppo.skrl_backend import ClipLoss, LossDelegatingPPO  # noqa: E402
from skrl.agents.torch.ppo import PPO as UpstreamPPO  # noqa: E402
from skrl.agents.torch.ppo import PPO_CFG  # noqa: E402
from skrl.memories.torch import RandomMemory  # noqa: E402
from skrl.resources.preprocessors.torch import RunningStandardScaler  # noqa: E402
from skrl.resources.schedulers.torch import KLAdaptiveLR  # noqa: E402

CARTPOLE = dict(
    rollout_steps=64, epochs=8, minibatches=4, learning_rate=1e-3, lr_schedule="kl_adaptive", kl_target=0.008,
    normalize_observations=True, normalize_values=True, entropy_coef=0.01, value_coef=1.0, value_clip=0.2,
    max_grad_norm=0.5, gamma=0.99, gae_lambda=0.95, hidden_sizes=[64, 64], activation="tanh",
)  # fmt: skip
TERMS = ("loss_policy", "loss_value", "loss_entropy")


def make_build(**kwargs):
    return make_ppo_build("skrl", **kwargs)


@pytest.fixture
def builds(ppo_builds):
    return functools.partial(ppo_builds, "skrl")


# ---- (a) loss parity with upstream skrl PPO -----------------------------------------------------

PARITY_CFG = dict(
    rollouts=16, learning_epochs=3, mini_batches=4, discount_factor=0.99, gae_lambda=0.95, learning_rate=1e-3,
    grad_norm_clip=0.5, ratio_clip=0.2, value_clip=0.2, entropy_loss_scale=0.01, value_loss_scale=1.0,
    experiment={"write_interval": 0, "checkpoint_interval": 0},
)  # fmt: skip
UPSTREAM_TAGS = {"loss_policy": "Loss / Policy loss", "loss_value": "Loss / Value loss", "loss_entropy": "Loss / Entropy loss"}


def _paired_agents(env, kl_threshold):
    configure_threads()
    seed_skrl(0)
    policy = stochastic_policy(env.observation_space, env.action_space, "cpu", [32, 32], "tanh", initial_log_std=-0.5)
    value = value_model(env.observation_space, env.action_space, "cpu", [32, 32], "tanh")

    def cfg():
        return PPO_CFG(
            **PARITY_CFG,
            kl_threshold=kl_threshold,
            learning_rate_scheduler=KLAdaptiveLR,
            learning_rate_scheduler_kwargs={"kl_threshold": 0.008},
            observation_preprocessor=RunningStandardScaler,
            observation_preprocessor_kwargs={"size": env.observation_space, "device": "cpu"},
            value_preprocessor=RunningStandardScaler,
            value_preprocessor_kwargs={"size": 1, "device": "cpu"},
        )

    common = dict(observation_space=env.observation_space, action_space=env.action_space, device="cpu")
    upstream = UpstreamPPO(
        models={"policy": policy, "value": value}, memory=RandomMemory(memory_size=16, num_envs=env.num_envs),
        cfg=cfg(), **common,
    )  # fmt: skip
    ours = LossDelegatingPPO(
        models={"policy": copy.deepcopy(policy), "value": copy.deepcopy(value)},
        memory=RandomMemory(memory_size=16, num_envs=env.num_envs), cfg=cfg(), **common,
        loss=ClipLoss(ratio_clip=0.2, value_clip=0.2, entropy_loss_scale=0.01, value_loss_scale=1.0),
        terms=TERMS, reported=("approx_kl",),
    )  # fmt: skip
    for agent in (upstream, ours):
        agent.init()
        agent.enable_training_mode(True)
    return upstream, ours


def _drive_both(env, upstream, ours, updates):
    """Feed both agents the same transitions and the same random streams through ``updates`` updates."""
    observations, _ = env.reset()
    for timestep in range(16 * updates):
        actions = {}
        for name, agent in (("upstream", upstream), ("ours", ours)):
            torch.manual_seed(timestep)
            with torch.no_grad():
                actions[name], _ = agent.act(observations, None, timestep=timestep, timesteps=16 * updates)
        assert torch.equal(actions["upstream"], actions["ours"])
        with torch.no_grad():
            next_observations, rewards, terminated, truncated, infos = env.step(actions["upstream"])
        for agent in (upstream, ours):
            agent.record_transition(observations=observations, states=None, actions=actions["upstream"], rewards=rewards,
                                    next_observations=next_observations, next_states=None, terminated=terminated,
                                    truncated=truncated, infos=infos, timestep=timestep, timesteps=16 * updates)  # fmt: skip
        for agent in (upstream, ours):
            torch.manual_seed(10_000 + timestep)  # the update's minibatch permutations and Gaussian samples
            agent.post_interaction(timestep=timestep, timesteps=16 * updates)
        observations = next_observations


def _assert_same_parameters(upstream, ours):
    for role in ("policy", "value"):
        for (name, a), (_, b) in zip(upstream.models[role].named_parameters(), ours.models[role].named_parameters()):
            assert torch.allclose(a, b, atol=1e-6), f"{role}.{name} differs"
    for name in ("observation_preprocessor", "value_preprocessor"):
        for key, a in upstream.checkpoint_modules[name].state_dict().items():
            assert torch.allclose(a, ours.checkpoint_modules[name].state_dict()[key]), f"{name}.{key} differs"
    assert upstream.optimizer.param_groups[0]["lr"] == pytest.approx(ours.optimizer.param_groups[0]["lr"])


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_update_matches_upstream_skrl(env_id):
    env = make_vector_env(env_id, {}, 4, 0, "cpu")
    try:
        upstream, ours = _paired_agents(env, kl_threshold=0.0)
        _drive_both(env, upstream, ours, updates=2)
        for term, tag in UPSTREAM_TAGS.items():
            got, expected = ours.tracking_data[f"Loss / {term}"], upstream.tracking_data[tag]
            assert len(got) == len(expected) == 2
            assert np.allclose(got, expected, rtol=1e-5, atol=1e-7), (term, got, expected)
        assert all(math.isfinite(v) for v in ours.tracking_data["Loss / approx_kl"])
        _assert_same_parameters(upstream, ours)
        # the update really moved the parameters away from the shared start
        assert upstream.optimizer.state and ours.optimizer.state
    finally:
        env.close()


def test_kl_early_stop_matches_upstream_skrl():
    env = make_vector_env("CartPole-v1", {}, 4, 0, "cpu")
    try:
        upstream, ours = _paired_agents(env, kl_threshold=0.005)
        _drive_both(env, upstream, ours, updates=2)
        _assert_same_parameters(upstream, ours)
        steps = [int(next(iter(a.optimizer.state.values()))["step"]) for a in (upstream, ours)]
        assert steps[0] == steps[1] and 0 < steps[1] < 2 * 3 * 4  # some minibatches were stopped, not all
    finally:
        env.close()


def test_kl_adaptive_schedule_needs_approx_kl():
    env = make_vector_env("CartPole-v1", {}, 2, 0, "cpu")
    try:
        upstream, _ = _paired_agents(env, kl_threshold=0.0)
        with pytest.raises(ValueError, match="approx_kl"):
            LossDelegatingPPO(
                models=upstream.models, memory=RandomMemory(memory_size=16, num_envs=2), device="cpu",
                observation_space=env.observation_space, action_space=env.action_space,
                cfg=PPO_CFG(rollouts=16, learning_rate_scheduler=KLAdaptiveLR),
                loss=ClipLoss(0.2, 0.2, 0.0, 1.0), terms=TERMS, reported=(),
            )  # fmt: skip
    finally:
        env.close()


# ---- (b) CartPole really learns -----------------------------------------------------------------


def test_cartpole_learns(builds):
    trainer = builds(num_envs=8, steps=10_240, seed=0, **CARTPOLE).trainer
    history = []
    trainer.train(10_240, callbacks=[lambda t, metrics: history.append(metrics)])
    assert trainer.env_steps == 10_240 and trainer.iterations == 20
    for metrics in history:
        assert {f"loss/{t}" for t in (*TERMS, "approx_kl")} <= metrics.keys()
        assert "train/lr" in metrics
        assert all(math.isfinite(v) for v in metrics.values())
    returns = [m["train/episode_return"] for m in history if "train/episode_return" in m]
    early, late = np.mean(returns[:3]), np.mean(returns[-3:])
    assert late > 2 * early and late > 60, returns
    # skrl keeps appending to tracking_data when its writers are off (§14.9); the trainer drains it
    assert not trainer.agent.tracking_data


# ---- (c) state_dict round trip ------------------------------------------------------------------


@pytest.mark.parametrize(("env_id", "lr_schedule"), [("CartPole-v1", "kl_adaptive"), ("Pendulum-v1", "linear")])
def test_state_dict_round_trip(builds, env_id, lr_schedule):
    hp = dict(CARTPOLE, rollout_steps=32, epochs=2, lr_schedule=lr_schedule)
    trained = builds(env_id=env_id, seed=3, **hp).trainer
    trained.step()
    trained.step()
    buffer = io.BytesIO()
    torch.save(trained.state_dict(), buffer)
    expected_draws = torch.rand(4)

    fresh = builds(env_id=env_id, seed=3, **hp).trainer
    buffer.seek(0)
    fresh.load_state_dict(torch.load(buffer, weights_only=True))
    assert torch.equal(torch.rand(4), expected_draws)  # the RNG state came back too

    assert fresh.counters() == trained.counters() and fresh.env_steps == 2 * 32 * 4 and fresh.iterations == 2
    for role in ("policy", "value"):
        for a, b in zip(trained.agent.models[role].parameters(), fresh.agent.models[role].parameters()):
            assert torch.equal(a, b)
    for name in ("observation_preprocessor", "value_preprocessor"):
        for key, value in trained.agent.checkpoint_modules[name].state_dict().items():
            assert torch.equal(value, fresh.agent.checkpoint_modules[name].state_dict()[key])
    assert fresh.agent.optimizer.param_groups[0]["lr"] == trained.agent.optimizer.param_groups[0]["lr"]
    assert fresh.agent.scheduler.state_dict() == trained.agent.scheduler.state_dict()
    for a, b in zip(trained.agent.optimizer.state.values(), fresh.agent.optimizer.state.values()):
        assert all(torch.equal(a[k], b[k]) for k in ("exp_avg", "exp_avg_sq"))

    observations = np.random.default_rng(0).normal(size=(16, *trained.build.observation_space.shape)).astype(np.float32)
    np.testing.assert_array_equal(trained.act_deterministic(observations), fresh.act_deterministic(observations))
    fresh.step()  # training continues from the loaded state
    assert fresh.env_steps == 3 * 32 * 4


# ---- (d) continuous actions ---------------------------------------------------------------------


def test_pendulum_trains_a_few_iterations(builds):
    trainer = builds(env_id="Pendulum-v1", num_envs=4, rollout_steps=64, epochs=4, minibatches=4, gamma=0.9,
                     normalize_observations=True, normalize_values=True, bootstrap_truncated=True).trainer  # fmt: skip
    history = [trainer.step() for _ in range(4)]  # 4 x 256 steps: episodes of 200 end (truncate) on the way
    assert trainer.env_steps == 4 * 64 * 4
    assert all(math.isfinite(v) for m in history for v in m.values())
    assert "train/policy_std" in history[-1] and "train/episode_return" in history[-1]
    action = trainer.act_deterministic(np.zeros((1, 3), dtype=np.float32))
    assert action.shape == (1, 1) and action.dtype == np.float32
    assert len(trainer.evaluate(1)) == 1


@pytest.mark.parametrize("bootstrap", [True, False])
def test_truncation_is_bootstrapped_or_ends_the_return(builds, bootstrap):
    # Pendulum truncates every episode at step 200: the rollout's last row is a time-limit cut
    trainer = builds(env_id="Pendulum-v1", num_envs=2, rollout_steps=200, epochs=1, minibatches=2,
                     bootstrap_truncated=bootstrap).trainer  # fmt: skip
    trainer.step()
    memory = trainer.agent.memory
    terminated, truncated = memory.get_tensor_by_name("terminated"), memory.get_tensor_by_name("truncated")
    assert truncated[-1].all() and not truncated[:-1].any()
    # with bootstrapping skrl adds gamma * V(final observation) and cuts GAE on `truncated`;
    # without it, rlplug (like its TorchRL backend) ends the return there as if terminated
    assert bool(terminated[-1].all()) is not bootstrap and not terminated[:-1].any()


def test_a_step_that_terminates_at_the_time_limit_is_not_bootstrapped(builds):
    # gymnasium flags both when the episode ends in a terminal state on its last allowed step; skrl adds
    # gamma * V(next) to every truncated step's reward, so the trainer stores the cut only where it did not terminate
    trainer = builds(num_envs=3, bootstrap_truncated=True).trainer
    terminated, truncated = torch.tensor([[True], [False], [False]]), torch.tensor([[True], [True], [False]])
    next_observations = torch.zeros(3, 4)
    infos = {"final_obs": np.array([np.ones(4), np.ones(4), None], dtype=object), "_final_obs": np.array([True, True, False])}
    _, stored_terminated, stored_truncated = trainer.stored_outcome(next_observations, terminated, truncated, infos)
    assert stored_terminated[:, 0].tolist() == [True, False, False]
    assert stored_truncated[:, 0].tolist() == [False, True, False]


@pytest.mark.parametrize(("lr_schedule", "expected_lr"), [("constant", 1e-3), ("linear", 1e-3 * (1 - 2 / 16))])
def test_learning_rate_schedules(builds, lr_schedule, expected_lr):
    # 8 updates x 2 epochs: LinearLR steps once per epoch, from 1e-3 down to 0 over 16 steps
    trainer = builds(num_envs=2, rollout_steps=16, epochs=2, minibatches=2, steps=8 * 2 * 16, learning_rate=1e-3,
                     lr_schedule=lr_schedule).trainer  # fmt: skip
    metrics = trainer.step()
    assert metrics["train/lr"] == pytest.approx(expected_lr)


# ---- environment building block -----------------------------------------------------------------


def test_same_step_autoreset_hands_back_the_final_observation():
    env = make_vector_env("CartPole-v1", {}, 2, 0, "cpu")
    try:
        env.reset()
        for _ in range(500):
            next_observations, _, terminated, truncated, infos = env.step(torch.zeros((2, 1), dtype=torch.int64))
            ended = (terminated | truncated).reshape(-1)
            if ended.any():
                break
        assert ended.any()
        patched = true_next_observations(next_observations, infos)
        row = int(ended.nonzero()[0])
        assert torch.allclose(patched[row], torch.as_tensor(infos["final_obs"][row]))
        assert not torch.equal(patched[row], next_observations[row])  # the stored one is the reset observation
        assert torch.equal(patched[~ended], next_observations[~ended])
    finally:
        env.close()


def test_conforms_to_the_contract():
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence."""
    from rlplug.testing import check_cell

    check_cell("ppo-cartpole", "skrl", ["num_envs=2", "rollout_steps=32", "hidden_sizes=[16, 16]"], steps=128)
