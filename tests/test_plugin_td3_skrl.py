"""td3/skrl: LossDelegatingTD3 trains, delays its policy, moves targets as the updater says, round-trips
its state, and reproduces upstream skrl TD3.update() exactly."""

from __future__ import annotations

import copy
import io
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")

from rlplug_td3 import TD3 as TD3_SPEC  # noqa: E402
from rlplug_td3.settings import skrl_settings  # noqa: E402
from rlplug_td3.skrl_backend import LossDelegatingTD3, agent_config  # noqa: E402
from skrl.agents.torch.td3 import TD3  # noqa: E402

SMALL = dict(hidden_sizes=[16, 16], batch_size=32, learning_starts=64, log_every=100, buffer_size=2_000)
ROLES = ("policy", "target_policy", "critic_1", "critic_2", "target_critic_1", "target_critic_2")


def td3_build(builds, **kwargs):
    options = {"num_envs": 2, "steps": 400, "seed": 0, **SMALL, **kwargs}
    return builds("rlplug_td3", "skrl", "Pendulum-v1", **options)


def _parameters(*modules):
    return [p.detach().clone() for m in modules for p in m.parameters()]


def _equal(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def _watch_gradient_steps(agent):
    """Wrap ``agent.gradient_step`` to check the policy delay: the policy changes exactly on the
    ``policy_delay``-th critic steps, the critics on every step."""
    original = agent.gradient_step
    seen = {"delayed": 0, "plain": 0}

    def gradient_step(**kwargs):
        policy, critics = _parameters(agent.policy), _parameters(agent.critic_1, agent.critic_2)
        terms = original(**kwargs)
        assert not _equal(critics, _parameters(agent.critic_1, agent.critic_2))
        delayed = agent.update_schedule.steps % agent.cfg.policy_delay == 0
        assert _equal(policy, _parameters(agent.policy)) != delayed
        assert ("loss_policy" in terms) == delayed  # the terms of the stages that ran
        seen["delayed" if delayed else "plain"] += 1
        return terms

    agent.gradient_step = gradient_step
    return seen


def _watch_targets(updater, check):
    """Wrap ``updater.step`` to call ``check(targets_before, sources, targets_after, steps)``."""
    original = updater.step

    def step():
        before = [p.detach().clone() for p in updater.targets]
        sources = [p.detach().clone() for p in updater.sources]
        original()
        check(before, sources, [p.detach().clone() for p in updater.targets], updater.steps)

    updater.step = step


def test_trains_with_delayed_policy_and_hard_targets(builds):
    build = td3_build(builds, target_update="hard", target_update_period=3, policy_delay=2)
    trainer, agent = build.trainer, build.trainer.agent
    assert isinstance(agent, LossDelegatingTD3) and agent.target_updater is build.target_updater
    seen = _watch_gradient_steps(agent)

    def hard(before, sources, after, steps):
        if steps % 3 == 0:
            assert _equal(after, sources)  # a copy on every 3rd updater step
        else:
            assert _equal(after, before)  # and nothing in between

    _watch_targets(build.target_updater, hard)
    history = []
    trainer.train(400, callbacks=[lambda t, metrics: history.append(metrics)])
    assert trainer.env_steps == 400 and trainer.gradient_steps == 400 - 64
    assert seen["delayed"] == seen["plain"] == (400 - 64) // 2
    assert build.target_updater.steps == (400 - 64) // 2
    losses = [m for m in history if "loss/loss_critic" in m]
    assert losses and all(math.isfinite(v) for m in losses for v in m.values())
    assert all("loss/loss_policy" in m for m in losses)


def test_soft_targets_follow_polyak_on_policy_steps(builds):
    build = td3_build(builds, steps=200, target_update="soft", tau=0.1, target_update_period=2, policy_delay=3)
    seen = _watch_gradient_steps(build.trainer.agent)

    def soft(before, sources, after, steps):
        if steps % 2:
            assert _equal(after, before)
        else:
            for old, src, new in zip(before, sources, after, strict=True):
                torch.testing.assert_close(new, 0.9 * old + 0.1 * src, rtol=1e-6, atol=1e-7)

    _watch_targets(build.target_updater, soft)
    build.trainer.train(200)
    assert seen["delayed"] == (200 - 64) // 3 and build.target_updater.steps == seen["delayed"]


def test_checkpoint_round_trip_into_fresh_build(builds):
    build = td3_build(builds, steps=300, exploration_noise="ou", exploration_final_scale=0.2, exploration_decay_steps=300)
    build.trainer.train(300)
    buffer = io.BytesIO()
    torch.save(build.trainer.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)

    fresh = td3_build(builds, steps=300, seed=1, exploration_noise="ou", exploration_final_scale=0.2, exploration_decay_steps=300)
    observations = np.random.default_rng(0).uniform(-1, 1, size=(16, 3)).astype(np.float32)
    assert not np.array_equal(fresh.trainer.act_deterministic(observations), build.trainer.act_deterministic(observations))
    fresh.trainer.load_state_dict(state)
    np.testing.assert_array_equal(fresh.trainer.act_deterministic(observations), build.trainer.act_deterministic(observations))
    old, new = build.trainer.agent, fresh.trainer.agent
    assert new.update_schedule.steps == old.update_schedule.steps > 0
    assert new.target_updater.steps == old.target_updater.steps
    assert torch.equal(new._exploration_noise.state, old._exploration_noise.state)
    assert fresh.trainer.env_steps == 300 and fresh.trainer.gradient_steps == build.trainer.gradient_steps
    assert new.extra_metrics()["train/exploration_scale"] == pytest.approx(old.extra_metrics()["train/exploration_scale"])
    assert old.extra_metrics()["train/exploration_scale"] < 0.3
    for role in ROLES:
        assert _equal(_parameters(new.models[role]), _parameters(old.models[role]))
    assert new.critic_optimizer.state_dict()["state"].keys() == old.critic_optimizer.state_dict()["state"].keys()


@pytest.mark.parametrize("grad_norm_clip", [0.0, 0.5])
def test_parity_with_upstream_td3_update(builds, grad_norm_clip):
    """Two gradient steps (a critic-only step and a delayed policy step) of LossDelegatingTD3 vs
    upstream ``TD3.update()`` with ``gradient_steps=2`` on the same memory, models and seed."""
    # upstream steps torch's default (loop) Adam: compare the loss maths on the same optimiser path
    build = td3_build(builds, steps=200, learning_starts=10_000, grad_norm_clip=grad_norm_clip, tau=0.05, optimizer_impl="loop")
    build.trainer.train(200)  # fills the replay memory with random transitions, no updates
    ours = build.trainer.agent
    assert ours.update_schedule.steps == 0 and len(build.memory) == 200

    cfg = agent_config(build)
    cfg.gradient_steps = 2
    upstream = TD3(
        models=copy.deepcopy(build.models),
        memory=build.memory,
        observation_space=build.observation_space,
        action_space=build.action_space,
        device="cpu",
        cfg=cfg,
    )
    upstream.init()
    for role in ROLES:
        assert _equal(_parameters(upstream.models[role]), _parameters(ours.models[role]))

    initial_policy = _parameters(ours.policy)
    torch.manual_seed(123)
    upstream.enable_models_training_mode(True)
    upstream.update(timestep=0, timesteps=1)
    torch.manual_seed(123)
    ours.enable_models_training_mode(True)
    ours.gradient_step(timestep=0, timesteps=1)
    ours.gradient_step(timestep=0, timesteps=1)

    for role in ROLES:
        ours_params, upstream_params = _parameters(ours.models[role]), _parameters(upstream.models[role])
        assert _equal(ours_params, upstream_params), role
    assert not _equal(_parameters(ours.policy), initial_policy)  # the second step was a policy step
    for name in ("policy_optimizer", "critic_optimizer"):
        ours_state = getattr(ours, name).state_dict()["state"]
        upstream_state = getattr(upstream, name).state_dict()["state"]
        for key in ours_state:
            assert torch.equal(ours_state[key]["exp_avg"], upstream_state[key]["exp_avg"]), name
    assert ours.update_schedule.steps == upstream._update_counter == 2


def test_settings_refuse_torchrl_only_estimators():
    hp = {**TD3_SPEC.defaults(), "value_estimator": "td1"}
    recipe = type("Recipe", (), {"steps": 1000, "num_envs": 1})()
    with pytest.raises(ValueError, match="value_estimator 'td1' is only available on the torchrl backend"):
        skrl_settings(hp, recipe)
    settings = skrl_settings({**TD3_SPEC.defaults(), "target_policy_noise": 0.0}, recipe)
    assert settings["smooth_regularization_noise"] is None


def test_conforms_to_the_contract():
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence."""
    from rlplug.testing import check_cell

    check_cell("td3-pendulum", "skrl", ["learning_starts=64", "hidden_sizes=[16, 16]", "batch_size=16", "log_every=64"], steps=128)
