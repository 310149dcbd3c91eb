"""The off-policy building blocks in the core: cadence, schedules, settings and both target updaters."""

from types import SimpleNamespace

import pytest
import torch
from rlplug.families import LinearSchedule, REPLAY_PARAMS, TARGET_PARAMS, replay_settings
from rlplug.families.offpolicy import gradient_steps_due
from torch import nn

DEFAULTS = {p.name: p.default for p in REPLAY_PARAMS + TARGET_PARAMS}
RECIPE = SimpleNamespace(num_envs=4, steps=10_000)


def test_gradient_steps_follow_the_update_to_data_ratio():
    # nothing before learning_starts, then utd_ratio steps per transition, fractional ratios included
    assert gradient_steps_due(1000, 1000, 1.0, 0) == 0
    assert gradient_steps_due(1004, 1000, 1.0, 0) == 4
    assert gradient_steps_due(1004, 1000, 0.5, 0) == 2
    assert gradient_steps_due(1003, 1000, 0.25, 0) == 0
    assert gradient_steps_due(1008, 1000, 0.25, 0) == 2
    assert gradient_steps_due(1008, 1000, 0.25, 2) == 0
    total, done = 0, 0
    for transitions in range(0, 5000, 8):  # a vector env of 8, utd 0.5 over 4000 transitions past the start
        owed = gradient_steps_due(transitions, 1000, 0.5, done)
        done += owed
        total = transitions
    assert done == (total - 1000) // 2


def test_linear_schedule_anneals_then_holds():
    schedule = LinearSchedule(1.0, 0.1, 100)
    assert schedule(0) == 1.0
    assert schedule(50, 12345) == pytest.approx(0.55)
    assert schedule(100) == pytest.approx(0.1)
    assert schedule(10_000) == pytest.approx(0.1)
    assert LinearSchedule(1.0, 0.1, 0)(0) == 0.1


@pytest.mark.parametrize(
    "override, message",
    [({"utd_ratio": 0.0}, "utd_ratio"), ({"tau": 1.5}, "tau"), ({"target_update_period": 0}, "target_update_period")],
)
def test_replay_settings_refuse_impossible_values(override, message):
    with pytest.raises(ValueError, match=message):
        replay_settings({**DEFAULTS, **override}, RECIPE)


def test_replay_settings_log_at_least_one_vector_step():
    settings = replay_settings({**DEFAULTS, "log_every": 1}, RECIPE)
    assert settings["log_every"] == RECIPE.num_envs


def _pair(seed):
    torch.manual_seed(seed)
    online, target = nn.Linear(3, 2), nn.Linear(3, 2)
    return target, online


def _perturb(module):
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn_like(p))


def _params(module):
    return [p.detach().clone() for p in module.parameters()]


def test_skrl_soft_update_blends_by_tau_every_period():
    pytest.importorskip("skrl")
    from rlplug.backends.skrl import ModuleTargetUpdate

    target, online = _pair(0)
    updater = ModuleTargetUpdate([(target, online)], "soft", tau=0.1, period=2)
    before_target, before_online = _params(target), _params(online)
    updater.step()  # step 1 of period 2: no change
    assert all(torch.equal(a, b) for a, b in zip(_params(target), before_target))
    updater.step()
    for new, old, src in zip(_params(target), before_target, before_online):
        torch.testing.assert_close(new, 0.9 * old + 0.1 * src, rtol=0, atol=1e-7)


def test_skrl_hard_update_copies_every_period_only():
    pytest.importorskip("skrl")
    from rlplug.backends.skrl import ModuleTargetUpdate

    target, online = _pair(1)
    updater = ModuleTargetUpdate([(target, online)], "hard", period=3)
    for step in range(1, 10):
        _perturb(online)
        before = _params(target)
        updater.step()
        if step % 3 == 0:
            assert all(torch.equal(t, o) for t, o in zip(_params(target), _params(online)))
        else:
            assert all(torch.equal(t, b) for t, b in zip(_params(target), before))
    state = updater.state_dict()
    fresh = ModuleTargetUpdate([(target, online)], "hard", period=3)
    fresh.load_state_dict(state)
    assert fresh.steps == 9


def _dqn_loss():
    from torchrl.modules import QValueActor
    from torchrl.objectives import DQNLoss

    torch.manual_seed(0)
    net = nn.Linear(4, 2)
    actor = QValueActor(net, in_keys=["observation"], action_space="categorical")
    return DQNLoss(actor, delay_value=True, action_space="categorical")


def _torchrl_pairs(loss):
    online = [p.detach().clone() for p in loss.value_network_params.values(True, True)]
    target = [p.detach().clone() for p in loss.target_value_network_params.values(True, True)]
    return online, target


def test_torchrl_hard_update_copies_every_period_only():
    pytest.importorskip("torchrl")
    from rlplug.backends.torchrl import LossTargetUpdate

    loss = _dqn_loss()
    updater = LossTargetUpdate(loss, "hard", period=3)
    for step in range(1, 10):
        with torch.no_grad():
            for p in loss.value_network_params.values(True, True):
                p.add_(torch.randn_like(p))
        _, before = _torchrl_pairs(loss)
        updater.step()
        online, target = _torchrl_pairs(loss)
        if step % 3 == 0:
            assert all(torch.equal(t, o) for t, o in zip(target, online))
        else:
            assert all(torch.equal(t, b) for t, b in zip(target, before))


def test_torchrl_soft_update_blends_by_tau_every_period():
    pytest.importorskip("torchrl")
    from rlplug.backends.torchrl import LossTargetUpdate

    loss = _dqn_loss()
    with torch.no_grad():
        for p in loss.value_network_params.values(True, True):
            p.add_(1.0)
    updater = LossTargetUpdate(loss, "soft", tau=0.25, period=2)
    online, before = _torchrl_pairs(loss)
    updater.step()
    assert all(torch.equal(t, b) for t, b in zip(_torchrl_pairs(loss)[1], before))
    updater.step()
    for new, old, src in zip(_torchrl_pairs(loss)[1], before, online):
        torch.testing.assert_close(new, 0.75 * old + 0.25 * src, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "plugin_module, env_id, backend",
    [("rlplug_sac", "Pendulum-v1", "skrl"), ("rlplug_sac", "Pendulum-v1", "torchrl"),
     ("rlplug_dqn", "CartPole-v1", "skrl"), ("rlplug_dqn", "CartPole-v1", "torchrl")],
)  # fmt: skip
def test_replay_memory_travels_in_the_checkpoint(builds, plugin_module, env_id, backend):
    """A resumed off-policy run samples from the replay it had, not from an empty buffer."""
    import io

    pytest.importorskip(backend)
    small = dict(num_envs=2, steps=300, learning_starts=100, batch_size=16, hidden_sizes=[16], log_every=100)
    build = builds(plugin_module, backend, env_id, **small)
    build.trainer.train(300)
    buffer = io.BytesIO()
    torch.save(build.trainer.state_dict(), buffer)
    buffer.seek(0)
    fresh = builds(plugin_module, backend, env_id, seed=7, **{k: v for k, v in small.items() if k != "seed"})
    fresh.trainer.load_state_dict(torch.load(buffer, weights_only=True))
    if backend == "skrl":
        old, new = build.trainer.agent.memory, fresh.trainer.agent.memory
        assert len(new) == len(old) == 300
        rows = old.memory_index  # unfilled rows are NaN in both
        assert torch.equal(new.get_tensor_by_name("observations")[:rows], old.get_tensor_by_name("observations")[:rows])
        assert new.memory_index == old.memory_index and rows == 150
    else:
        old, new = build.trainer.memory, fresh.trainer.memory
        assert len(new) == len(old) == 300
        assert torch.equal(new[:]["observation"], old[:]["observation"])
