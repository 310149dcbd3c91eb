"""ddpg/torchrl: TD3's cell with torchrl's DDPGLoss trains one critic, steps its actor and targets on every
gradient step with upstream's loss values, and round-trips its state."""

from __future__ import annotations

import io

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from rlplug_ddpg.torchrl_backend import DDPGLoss, describe_ddpg_loss  # noqa: E402
from torchrl.objectives import DDPGLoss as UpstreamDDPGLoss  # noqa: E402

SMALL = dict(hidden_sizes=[16, 16], batch_size=32, learning_starts=64, log_every=100, buffer_size=2_000)


def ddpg_build(builds, **kwargs):
    options = {"num_envs": 2, "steps": 200, "seed": 0, **SMALL, **kwargs}
    return builds("rlplug_ddpg", "torchrl", "Pendulum-v1", **options)


def _flat(params):
    return {key: value.detach().clone() for key, value in params.flatten_keys().items()}


def _equal(a, b):
    assert a.keys() == b.keys()
    return all(torch.equal(a[k], b[k]) for k in a)


def test_trains_actor_and_targets_every_step(builds):
    build = ddpg_build(builds)
    trainer, loss = build.trainer, build.loss
    assert isinstance(loss, DDPGLoss) and trainer.update_schedule.every == [1, 1] and trainer.update_schedule.target_every == 1
    assert loss.target_actor_network_params is not None and loss.target_value_network_params is not None
    original, steps = trainer.gradient_step, []

    def gradient_step():
        actor, critic = _flat(loss.actor_network_params), _flat(loss.value_network_params)
        targets = _flat(loss.target_value_network_params)
        terms = original()
        assert set(terms) == {"loss_qvalue", "loss_actor"}
        assert not _equal(actor, _flat(loss.actor_network_params)) and not _equal(critic, _flat(loss.value_network_params))
        assert not _equal(targets, _flat(loss.target_value_network_params))
        steps.append(build.target_updater.steps)
        return terms

    trainer.gradient_step = gradient_step
    trainer.train(200)
    assert steps == list(range(1, 200 - 64 + 1))


def test_losses_are_upstream_ddpgs(builds):
    """The names TD3's trainer calls return what upstream's DDPGLoss forward returns on the same batch."""
    build = ddpg_build(builds, steps=100)
    build.trainer.train(100)
    sample = build.memory.sample(32)
    out = UpstreamDDPGLoss.forward(build.loss, sample.clone())
    torch.testing.assert_close(build.loss.value_loss(sample.clone())[0], out["loss_value"], rtol=0, atol=0)
    torch.testing.assert_close(build.loss.actor_loss(sample.clone())[0], out["loss_actor"], rtol=0, atol=0)
    assert build.loss.qvalue_network_params is build.loss.value_network_params
    assert {"state_action_value", "reward", "done", "terminated"} <= set(describe_ddpg_loss()["set_keys"])


def test_checkpoint_round_trip_into_fresh_build(builds):
    build = ddpg_build(builds, exploration_noise="ou", num_envs=1)
    build.trainer.train(200)
    buffer = io.BytesIO()
    torch.save(build.trainer.state_dict(), buffer)
    buffer.seek(0)
    fresh = ddpg_build(builds, exploration_noise="ou", num_envs=1, seed=1)
    observations = np.random.default_rng(0).uniform(-1, 1, size=(16, 3)).astype(np.float32)
    assert not np.array_equal(fresh.trainer.act_deterministic(observations), build.trainer.act_deterministic(observations))
    fresh.trainer.load_state_dict(torch.load(buffer, weights_only=True))
    np.testing.assert_array_equal(fresh.trainer.act_deterministic(observations), build.trainer.act_deterministic(observations))
    assert _equal(_flat(fresh.loss.target_actor_network_params), _flat(build.loss.target_actor_network_params))
    assert fresh.target_updater.steps == build.target_updater.steps == 200 - 64


def test_conforms_to_the_contract():
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence."""
    from rlplug.testing import check_cell

    # learning_starts and log_every left to check_cell (meaningful_cadence), as a plugin author's first test would
    check_cell("ddpg-pendulum", "torchrl", ["hidden_sizes=[16, 16]", "batch_size=16"], steps=128)
