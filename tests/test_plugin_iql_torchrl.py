"""iql/torchrl: IQLLoss trains offline on a dataset, its target Q parameters move as the updater says,
and the state round-trips and continues identically."""

from __future__ import annotations


import numpy as np
import pytest
import torch

pytest.importorskip("torchrl")

from conftest import weights_only_round_trip  # noqa: E402
from rlplug_iql import IQL  # noqa: E402
from rlplug_iql.settings import torchrl_settings  # noqa: E402

SMALL = {"hidden_sizes": [32, 32], "batch_size": 64, "log_every": 100, "eval_every": 0, "action_margin": 0.01}


@pytest.fixture
def iql_build(builds, random_dataset):
    def make(seed=0, **kw):
        return builds("rlplug_iql", "torchrl", "Pendulum-v1", num_envs=1, steps=10_000, seed=seed,
                      dataset=random_dataset("Pendulum-v1"), **{**SMALL, **kw})  # fmt: skip

    return make


_round_trip = weights_only_round_trip


def test_loss_is_iqlloss_with_the_recipe_hyperparameters_and_td0(iql_build):
    from torchrl.objectives import IQLLoss
    from torchrl.objectives.value import TD0Estimator

    build = iql_build(expectile=0.8, temperature=2.0, gamma=0.95)
    loss = build.loss
    assert isinstance(loss, IQLLoss) and (loss.expectile, loss.temperature, loss.loss_function) == (0.8, 2.0, "l2")
    assert isinstance(loss.value_estimator, TD0Estimator) and loss.value_estimator.gamma == pytest.approx(0.95)
    # three Adam groups: actor, both critics, value, at their own learning rates
    assert [group["lr"] for group in build.trainer.optimizer.param_groups] == [3e-4, 3e-4, 3e-4]


def test_dataset_actions_are_pulled_inside_the_bounds(iql_build):
    build = iql_build(action_margin=0.05)
    actions = build.memory.storage[:]["action"]
    assert actions.abs().max() <= 2.0 * 0.95 + 1e-6 and actions.shape[-1] == 1


def test_trains_with_finite_losses_and_a_falling_critic_loss(iql_build):
    build = iql_build()
    loss = build.loss
    critics_before = loss.qvalue_network_params.clone()
    value_before = loss.value_network_params.clone()
    actor_before = [p.detach().clone() for p in build.models["actor"].parameters()]
    rows = []
    build.trainer.train(400, [lambda trainer, metrics: rows.append(metrics)])
    assert build.trainer.updates == 400 and len(rows) == 4
    for row in rows:
        for term in ("loss_actor", "loss_qvalue", "loss_value", "entropy"):
            assert np.isfinite(row[f"loss/{term}"]), row
    assert rows[-1]["loss/loss_qvalue"] < 0.5 * rows[0]["loss/loss_qvalue"]
    for params, before in ((loss.qvalue_network_params, critics_before), (loss.value_network_params, value_before)):
        for key, after in params.items(True, True):
            assert not torch.equal(after, before[key]), key
    # the evaluated actor is the loss's actor: its parameters are the ones optimised
    assert all(not torch.equal(a, b) for a, b in zip(actor_before, build.models["actor"].parameters()))


def test_evaluates_every_eval_every_updates_with_a_normalised_score(iql_build):
    build = iql_build(eval_every=200, eval_episodes=1)
    rows = []
    build.trainer.train(200, [lambda trainer, metrics: rows.append(metrics)])
    assert "eval/return" not in rows[0] and "eval/normalised_score" in rows[1]
    assert rows[1]["eval/normalised_score"] == pytest.approx(build.trainer.dataset.normalised_score(rows[1]["eval/return"]))
    actions = build.trainer.act_deterministic(np.zeros((5, 3), dtype=np.float32))
    assert actions.shape == (5, 1) and np.all(np.abs(actions) <= 2.0)


def test_target_q_parameters_move_as_a_soft_update_with_tau(iql_build):
    build = iql_build(tau=0.1)
    loss = build.loss
    targets_before = loss.target_qvalue_network_params.clone()
    build.trainer.gradient_step()
    online_after = loss.qvalue_network_params
    for key, after in loss.target_qvalue_network_params.items(True, True):
        assert torch.allclose(after, 0.9 * targets_before[key] + 0.1 * online_after[key].detach(), atol=1e-6), key
        assert not torch.equal(after, targets_before[key])


def test_hard_target_update_copies_every_period(iql_build):
    build = iql_build(target_update="hard", target_update_period=2)
    loss = build.loss
    build.trainer.gradient_step()
    assert not (loss.target_qvalue_network_params == loss.qvalue_network_params.data).all()
    build.trainer.gradient_step()
    assert (loss.target_qvalue_network_params == loss.qvalue_network_params.data).all()


def test_state_dict_round_trips_and_continues_identically(iql_build):
    trained = iql_build()
    trained.trainer.train(200)
    state = _round_trip(trained.trainer.state_dict())
    trained.trainer.train(300)  # continues from the RNG state the checkpoint captured

    fresh = iql_build(seed=7)
    observations = np.random.default_rng(0).uniform(-1, 1, size=(16, 3)).astype(np.float32)
    fresh.trainer.load_state_dict(state)
    assert fresh.trainer.updates == 200 and fresh.trainer.target_updater.steps == 200
    fresh.trainer.train(300)
    np.testing.assert_array_equal(fresh.trainer.act_deterministic(observations), trained.trainer.act_deterministic(observations))
    for key, value in trained.loss.state_dict().items():
        assert torch.equal(value, fresh.loss.state_dict()[key]), key
    assert fresh.trainer.target_updater.steps == 300


def test_settings_translate_and_validate():
    from types import SimpleNamespace

    recipe = SimpleNamespace(num_envs=1, steps=1000)
    s = torchrl_settings(IQL.defaults(), recipe)
    assert (s["expectile"], s["temperature"], s["gamma"], s["value_estimator"]) == (0.7, 3.0, 0.99, "td0")
    assert (s["actor_lr"], s["critic_lr"], s["value_lr"]) == (3e-4, 3e-4, 3e-4) and s["loss_function"] == "l2"
    with pytest.raises(ValueError, match="temperature must not be negative"):
        torchrl_settings({**IQL.defaults(), "temperature": -1.0}, recipe)


def test_conforms_to_the_contract(random_dataset):
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence, on a random Pendulum dataset."""
    from rlplug.testing import check_cell

    overrides = [f"dataset={random_dataset()}", "hidden_sizes=[16, 16]", "batch_size=32", "log_every=50", "eval_every=0"]
    check_cell("iql-pendulum-medium", "torchrl", overrides, steps=100)
