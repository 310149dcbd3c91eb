"""td3/torchrl: TD3Loss + rlplug's off-policy loop trains, delays its actor, moves targets as the updater
says, anneals its exploration noise, and round-trips its state."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from rlplug_td3.torchrl_backend import TorchRLTD3Trainer, describe_td3_loss  # noqa: E402
from torchrl.modules import AdditiveGaussianModule, OrnsteinUhlenbeckProcessModule  # noqa: E402
from torchrl.objectives import TD3Loss  # noqa: E402
from torchrl.objectives.value import TDLambdaEstimator  # noqa: E402

SMALL = dict(hidden_sizes=[16, 16], batch_size=32, learning_starts=64, log_every=100, buffer_size=2_000)


def td3_build(builds, **kwargs):
    options = {"num_envs": 2, "steps": 400, "seed": 0, **SMALL, **kwargs}
    return builds("rlplug_td3", "torchrl", "Pendulum-v1", **options)


def _flat(params):
    return {key: value.detach().clone() for key, value in params.flatten_keys().items()}


def _equal(a, b):
    assert a.keys() == b.keys()
    return all(torch.equal(a[k], b[k]) for k in a)


def _online_and_targets(loss):
    online = {**{("actor", k): v for k, v in _flat(loss.actor_network_params).items()},
              **{("qvalue", k): v for k, v in _flat(loss.qvalue_network_params).items()}}  # fmt: skip
    targets = {**{("actor", k): v for k, v in _flat(loss.target_actor_network_params).items()},
               **{("qvalue", k): v for k, v in _flat(loss.target_qvalue_network_params).items()}}  # fmt: skip
    return online, targets


def _watch_updates(trainer):
    """Wrap ``trainer.gradient_step`` to check the policy delay: the actor changes exactly on every
    ``policy_delay``-th gradient step, the critics on every step."""
    original, loss = trainer.gradient_step, trainer.loss
    seen = {"delayed": 0, "plain": 0}

    def gradient_step():
        actor, critics = _flat(loss.actor_network_params), _flat(loss.qvalue_network_params)
        terms = original()
        assert not _equal(critics, _flat(loss.qvalue_network_params))
        delayed = trainer.update_schedule.steps % trainer.build.settings["policy_delay"] == 0
        assert _equal(actor, _flat(loss.actor_network_params)) != delayed
        assert ("loss_actor" in terms) == delayed
        seen["delayed" if delayed else "plain"] += 1
        return terms

    trainer.gradient_step = gradient_step
    return seen


def _watch_targets(updater, loss, check):
    original = updater.step

    def step():
        sources, before = _online_and_targets(loss)
        original()
        check(before, sources, _online_and_targets(loss)[1], updater.steps)

    updater.step = step


def test_trains_with_delayed_actor_and_hard_targets(builds):
    build = td3_build(builds, target_update="hard", target_update_period=3, policy_delay=2)
    trainer = build.trainer
    assert isinstance(trainer, TorchRLTD3Trainer) and isinstance(build.loss, TD3Loss)
    assert isinstance(trainer.noise, AdditiveGaussianModule)
    seen = _watch_updates(trainer)

    def hard(before, sources, after, steps):
        if steps % 3 == 0:
            assert _equal(after, sources)  # a copy on every 3rd updater step
        else:
            assert _equal(after, before)  # and nothing in between

    _watch_targets(build.target_updater, build.loss, hard)
    history = []
    trainer.train(400, callbacks=[lambda t, metrics: history.append(metrics)])
    assert trainer.env_steps == 400 and trainer.gradient_steps == 400 - 64
    assert seen["delayed"] == seen["plain"] == (400 - 64) // 2
    assert build.target_updater.steps == (400 - 64) // 2
    losses = [m for m in history if "loss/loss_qvalue" in m]
    assert losses and all(math.isfinite(v) for m in losses for v in m.values())
    assert all("loss/loss_actor" in m for m in losses)


def test_soft_targets_follow_polyak_on_actor_steps(builds):
    build = td3_build(builds, steps=200, target_update="soft", tau=0.1, target_update_period=2, policy_delay=3)
    seen = _watch_updates(build.trainer)

    def soft(before, sources, after, steps):
        if steps % 2:
            assert _equal(after, before)
        else:
            for key in after:
                torch.testing.assert_close(after[key], before[key] + 0.1 * (sources[key] - before[key]), rtol=1e-6, atol=1e-7)

    _watch_targets(build.target_updater, build.loss, soft)
    build.trainer.train(200)
    assert seen["delayed"] == (200 - 64) // 3 and build.target_updater.steps == seen["delayed"]


def test_checkpoint_round_trip_and_ou_annealing(builds):
    options = dict(steps=300, exploration_noise="ou", exploration_final_scale=0.2, exploration_decay_steps=300,
                   value_estimator="td_lambda", td_lambda=0.9, num_envs=1)  # fmt: skip
    build = td3_build(builds, **options)
    assert isinstance(build.trainer.noise, OrnsteinUhlenbeckProcessModule)
    assert isinstance(build.loss.value_estimator, TDLambdaEstimator)
    history = []
    build.trainer.train(300, callbacks=[lambda t, metrics: history.append(metrics)])
    scales = [m["train/exploration_scale"] for m in history]
    assert scales == sorted(scales, reverse=True) and scales[-1] == pytest.approx(0.2)
    buffer = io.BytesIO()
    torch.save(build.trainer.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)

    fresh = td3_build(builds, **{**options, "seed": 1})
    observations = np.random.default_rng(0).uniform(-1, 1, size=(16, 3)).astype(np.float32)
    assert not np.array_equal(fresh.trainer.act_deterministic(observations), build.trainer.act_deterministic(observations))
    fresh.trainer.load_state_dict(state)
    np.testing.assert_array_equal(fresh.trainer.act_deterministic(observations), build.trainer.act_deterministic(observations))
    assert fresh.trainer.update_schedule.steps == build.trainer.update_schedule.steps > 0
    assert fresh.target_updater.steps == build.target_updater.steps
    assert float(fresh.trainer.noise.eps) == pytest.approx(0.2)
    assert fresh.trainer.env_steps == 300 and fresh.trainer.collection.frames == 300  # past the random warm-up
    online, targets = _online_and_targets(fresh.loss)
    online_old, targets_old = _online_and_targets(build.loss)
    assert _equal(online, online_old) and _equal(targets, targets_old)


def test_describe_lists_accepted_keys():
    facts = describe_td3_loss()
    assert {"action", "state_action_value", "reward", "done", "terminated"} <= set(facts["set_keys"])


def test_conforms_to_the_contract():
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence."""
    from rlplug.testing import check_cell

    check_cell("td3-pendulum", "torchrl", ["learning_starts=64", "hidden_sizes=[16, 16]", "batch_size=16", "log_every=64"], steps=128)
