"""sac/torchrl: SACLoss trains, its target Q parameters move as the updater says, the state round-trips."""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest
import torch

pytest.importorskip("torchrl")

from rlplug_sac import SAC  # noqa: E402
from rlplug_sac.settings import torchrl_settings  # noqa: E402

SMALL = {"hidden_sizes": [32, 32], "batch_size": 64, "log_every": 200}


def _sac_build(builds, seed=0, **kw):
    return builds("rlplug_sac", "torchrl", "Pendulum-v1", num_envs=1, steps=100_000, seed=seed, **{**SMALL, **kw})


def _filled_without_updates(builds, transitions=200, **kw):
    build = _sac_build(builds, learning_starts=1_000_000, log_every=transitions, **kw)
    build.trainer.train(transitions)
    assert build.trainer.gradient_steps == 0 and len(build.memory) == transitions
    return build


def test_trains_with_finite_losses_and_moving_critics(builds):
    build = _sac_build(builds, learning_starts=100)
    loss = build.loss
    critics_before = loss.qvalue_network_params.clone()
    actor_before = [p.detach().clone() for p in build.models["actor"].parameters()]
    rows = []
    build.trainer.train(400, [lambda trainer, metrics: rows.append(metrics)])
    assert build.trainer.env_steps == 400 and build.trainer.gradient_steps == 300
    for row in rows:
        for term in ("loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"):
            assert np.isfinite(row[f"loss/{term}"]), row
        assert 0 < row["train/alpha"] < 1.0
    for key, after in loss.qvalue_network_params.items(True, True):
        assert not torch.equal(after, critics_before[key]), key
    # the collector's actor is the loss's actor: its parameters are the ones optimised
    assert all(not torch.equal(a, b) for a, b in zip(actor_before, build.models["actor"].parameters()))


def test_target_q_parameters_move_as_a_soft_update_with_tau(builds):
    build = _filled_without_updates(builds, tau=0.1)
    loss, trainer = build.loss, build.trainer
    targets_before = loss.target_qvalue_network_params.clone()
    trainer.gradient_step()
    online_after = loss.qvalue_network_params
    for key, after in loss.target_qvalue_network_params.items(True, True):
        expected = 0.9 * targets_before[key] + 0.1 * online_after[key].detach()
        assert torch.allclose(after, expected, atol=1e-6), key
        assert not torch.equal(after, targets_before[key])


def test_state_dict_round_trip(builds):
    trained = _sac_build(builds, learning_starts=100)
    trained.trainer.train(300)
    buffer = io.BytesIO()
    torch.save(trained.trainer.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)

    fresh = _sac_build(builds, seed=7, learning_starts=100)
    observations = np.random.default_rng(0).uniform(-1, 1, size=(16, 3)).astype(np.float32)
    assert not np.array_equal(fresh.trainer.act_deterministic(observations), trained.trainer.act_deterministic(observations))
    fresh.trainer.load_state_dict(state)
    np.testing.assert_array_equal(fresh.trainer.act_deterministic(observations), trained.trainer.act_deterministic(observations))
    assert torch.equal(fresh.loss.log_alpha, trained.loss.log_alpha) and trained.loss.log_alpha.item() < 0
    assert (fresh.loss.target_qvalue_network_params == trained.loss.target_qvalue_network_params).all()
    assert fresh.trainer.gradient_steps == 200 and fresh.trainer.env_steps == 300
    assert fresh.target_updater.steps == 200


def test_td_lambda_samples_trajectory_slices(builds):
    build = _sac_build(builds, learning_starts=100, value_estimator="td_lambda", batch_size=32, trajectory_slice=8)
    assert type(build.loss.value_estimator).__name__ == "TDLambdaEstimator"
    build.trainer.train(200)
    sample = build.memory.sample()
    assert sample.shape == (32,)
    # four slices of eight consecutive steps, each closed by done (truncated) so TD(lambda) stops there
    assert sample["next", "done"].view(4, 8)[:, -1].all()
    index = sample["index"].view(4, 8)
    assert ((index[:, 1:] - index[:, :-1]) == 1).all()
    rows = []
    build.trainer.train(300, [lambda trainer, metrics: rows.append(metrics)])
    assert np.isfinite(rows[-1]["loss/loss_qvalue"])


def test_fixed_alpha_has_two_parameter_groups(builds):
    build = _sac_build(builds, learn_alpha=False, initial_alpha=0.3, learning_starts=50)
    assert len(build.trainer.optimizer.param_groups) == 2
    build.trainer.train(100)
    assert build.trainer.extra_metrics()["train/alpha"] == pytest.approx(0.3)


def test_settings_translate_and_validate():
    hp = SAC.defaults()
    recipe = SimpleNamespace(num_envs=2, steps=1000)
    s = torchrl_settings(hp, recipe)
    assert s["target_entropy"] == "auto" and s["value_estimator"] == "td0" and s["num_qvalue_nets"] == 2
    assert torchrl_settings({**hp, "target_entropy": -2.0}, recipe)["target_entropy"] == -2.0
    with pytest.raises(ValueError, match="needs num_envs = 1"):
        torchrl_settings({**hp, "value_estimator": "td1"}, recipe)
    with pytest.raises(ValueError, match="initial_alpha must be positive"):
        torchrl_settings({**hp, "initial_alpha": 0.0}, recipe)


def _lag1_autocorrelation(x: np.ndarray) -> float:
    x = x - x.mean()
    return float((x[1:] * x[:-1]).mean() / (x * x).mean())


def test_ou_exploration_noise_correlates_actions_in_bounds(builds):
    """``exploration_noise = "ou"``: the collector runs the actor then OU noise projected into the
    bounds, so consecutive collected actions are correlated, unlike the actor's i.i.d. samples."""
    stored = {}
    for noise in ("none", "ou"):
        build = _sac_build(builds, learning_starts=0, utd_ratio=0.01, log_every=400, exploration_noise=noise,
                           exploration_std=1.0, ou_theta=0.05)
        build.trainer.train(400)
        stored[noise] = build.memory[:400]["action"][:, 0].numpy()
    assert np.all(np.abs(stored["ou"]) <= 2.0) and np.all(np.abs(stored["none"]) <= 2.0)
    assert _lag1_autocorrelation(stored["ou"]) > 0.5 > 0.2 > abs(_lag1_autocorrelation(stored["none"]))
    assert torchrl_settings(SAC.defaults(), SimpleNamespace(num_envs=1, steps=1000))["exploration_noise"] is None


def test_conforms_to_the_contract():
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence."""
    from rlplug.testing import check_cell

    check_cell("sac-pendulum", "torchrl", ["learning_starts=64", "hidden_sizes=[16, 16]", "batch_size=16", "log_every=64"], steps=128)
