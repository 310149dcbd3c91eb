"""cql/torchrl: CQLLoss / DiscreteCQLLoss cells train on a dataset, move their targets, round-trip
their state; rlplug's ``BatchedCQLLoss`` equals upstream ``CQLLoss`` in value and gradient."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from rlplug.util.rng import restore_rng_state

pytest.importorskip("torchrl")

from rlplug_cql import CQL  # noqa: E402
from rlplug_cql.settings import torchrl_settings  # noqa: E402

SMALL = {"hidden_sizes": [32, 32], "batch_size": 64, "log_every": 50, "eval_every": 0, "num_random": 4}
ENVS = {"continuous": "Pendulum-v1", "discrete": "CartPole-v1"}


def _cql_build(builds, random_dataset, space="continuous", seed=0, **kw):
    env_id = ENVS[space]
    return builds("rlplug_cql", "torchrl", env_id, num_envs=1, steps=300, seed=seed, dataset=random_dataset(env_id), **{**SMALL, **kw})


def _online_and_target(loss):
    """(online, target) parameter tensors of the loss's Q network(s)."""
    if hasattr(loss, "qvalue_network_params"):
        online, target = loss.qvalue_network_params, loss.target_qvalue_network_params
    else:
        online, target = loss.value_network_params, loss.target_value_network_params
    return list(zip(online.values(True, True), target.values(True, True)))


# ---- training -----------------------------------------------------------------------------------


@pytest.mark.parametrize("space", ["continuous", "discrete"])
def test_trains_with_finite_losses_and_a_falling_q_loss(builds, random_dataset, space):
    build = _cql_build(builds, random_dataset, space)
    rows = []
    build.trainer.train(300, [lambda trainer, metrics: rows.append(metrics)])
    assert build.trainer.updates == 300 and len(rows) == 6
    terms = ("loss_qvalue", "loss_cql") + (("loss_actor", "loss_alpha", "loss_actor_bc", "alpha", "entropy") if space == "continuous" else ("pred_value",))
    for row in rows:
        for term in terms:
            assert np.isfinite(row[f"loss/{term}"]), row
    assert rows[-1]["loss/loss_qvalue"] < rows[0]["loss/loss_qvalue"]
    if space == "continuous":
        assert 0 < rows[-1]["loss/alpha"] < 1.0
        assert build.trainer.optimizer.param_groups[0]["lr"] == CQL.param_map["actor_learning_rate"].default
    actions = build.trainer.act_deterministic(np.zeros((5, build.observation_space.shape[0]), np.float32))
    assert actions.shape == ((5,) if space == "discrete" else (5, 1))
    assert all(build.action_space.contains(np.asarray(a, dtype=build.action_space.dtype)) for a in actions)


def test_behaviour_cloning_loss_is_reported_not_optimised(builds, random_dataset):
    build = _cql_build(builds, random_dataset)
    assert "loss_actor_bc" in build.loss_entry.reported and "loss_actor_bc" not in build.trainer.optimised_terms
    metrics = build.trainer.step()
    assert np.isfinite(metrics["loss/loss_actor_bc"])


@pytest.mark.parametrize("space", ["continuous", "discrete"])
def test_target_parameters_move_as_a_soft_update_with_tau(builds, random_dataset, space):
    build = _cql_build(builds, random_dataset, space, tau=0.1)
    pairs = _online_and_target(build.loss)
    before = [target.detach().clone() for _, target in pairs]
    build.trainer.gradient_step()
    for (online, target), old in zip(pairs, before):
        assert torch.allclose(target, 0.9 * old + 0.1 * online.detach(), atol=1e-6)
        assert not torch.equal(target, old)


def test_hard_target_update_copies_every_period(builds, random_dataset):
    build = _cql_build(builds, random_dataset, "discrete", target_update="hard", target_update_period=2)
    (online, target), *_ = _online_and_target(build.loss)
    build.trainer.gradient_step()
    assert not torch.equal(target, online.detach())
    build.trainer.gradient_step()
    assert torch.equal(target, online.detach())


# ---- checkpoints --------------------------------------------------------------------------------


@pytest.mark.parametrize("space", ["continuous", "discrete"])
def test_state_dict_round_trip_restores_the_policy_and_continues_identically(builds, random_dataset, space):
    trained = _cql_build(builds, random_dataset, space)
    trained.trainer.train(100)
    buffer = io.BytesIO()
    torch.save(trained.trainer.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)

    fresh = _cql_build(builds, random_dataset, space, seed=7)
    observations = np.random.default_rng(0).uniform(-1, 1, size=(16, fresh.observation_space.shape[0])).astype(np.float32)
    if space == "continuous":
        assert not np.array_equal(fresh.trainer.act_deterministic(observations), trained.trainer.act_deterministic(observations))
    fresh.trainer.load_state_dict(state)
    np.testing.assert_array_equal(fresh.trainer.act_deterministic(observations), trained.trainer.act_deterministic(observations))
    assert fresh.trainer.updates == 100 and fresh.target_updater.steps == trained.target_updater.steps == 100
    if space == "continuous":
        assert torch.equal(fresh.loss.log_alpha, trained.loss.log_alpha)

    # the RNG is process-wide (building `fresh` reseeded it): both continue from the checkpoint's
    for trainer in (trained.trainer, fresh.trainer):
        restore_rng_state(state["rng"])
        trainer.train(250)
    for (online_a, target_a), (online_b, target_b) in zip(_online_and_target(trained.loss), _online_and_target(fresh.loss)):
        assert torch.equal(online_a, online_b) and torch.equal(target_a, target_b)
    np.testing.assert_array_equal(fresh.trainer.act_deterministic(observations), trained.trainer.act_deterministic(observations))


# ---- the losses rlplug adjusts ------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:No target network updater")
def test_batched_cql_loss_equals_upstream_cql_loss_in_value_and_gradient(builds, random_dataset):
    """``BatchedCQLLoss`` drops upstream's ``[B, B * num_random]`` broadcast and nothing else."""
    from rlplug_cql.torchrl_backend import BatchedCQLLoss
    from torchrl.objectives import CQLLoss

    build = _cql_build(builds, random_dataset, min_q_weight=2.0, temperature=0.5)
    batch = build.memory.sample()
    results = []
    for loss_class in (CQLLoss, BatchedCQLLoss):
        torch.manual_seed(0)
        from rlplug_cql.torchrl_backend import build_models

        models = build_models(build)
        loss = loss_class(models["actor"], models["critics"], loss_function="l2", target_entropy=-1.0, num_random=4, min_q_weight=2.0, temperature=0.5)
        loss.make_value_estimator("td0", gamma=0.99)
        torch.manual_seed(1)
        out = loss(batch.clone())
        (out["loss_qvalue"] + out["loss_cql"] + out["loss_actor"] + out["loss_alpha"]).backward()
        results.append((out, [p.grad.clone() for p in loss.parameters() if p.grad is not None]))
    (upstream, upstream_grads), (ours, our_grads) = results
    for key in ("loss_cql", "loss_qvalue", "loss_actor", "loss_alpha"):
        assert torch.allclose(ours[key], upstream[key], rtol=1e-6, atol=1e-6), key
    assert len(our_grads) == len(upstream_grads)
    for a, b in zip(our_grads, upstream_grads):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6)


def test_discrete_penalty_carries_min_q_weight(builds, random_dataset):
    one = _cql_build(builds, random_dataset, "discrete", min_q_weight=1.0)
    three = _cql_build(builds, random_dataset, "discrete", min_q_weight=3.0)
    batch = one.memory.sample()
    assert torch.allclose(three.loss(batch.clone())["loss_cql"], 3.0 * one.loss(batch.clone())["loss_cql"])


def test_discrete_td_target_bootstraps_from_the_target_network(builds, random_dataset):
    """Upstream DiscreteCQLLoss reads the online network there (a keyword its estimator ignores)."""
    build = _cql_build(builds, random_dataset, "discrete", tau=0.01)
    build.trainer.train(50)  # online and target parameters now differ
    loss, batch = build.loss, build.memory.sample()
    with loss.target_value_network_params.to_module(loss.value_network):
        next_q = loss.value_network(batch["next"].clone())["action_value"]
    with loss.value_network_params.to_module(loss.value_network):
        online_next_q = loss.value_network(batch["next"].clone())["action_value"]
    not_terminated = (~batch["next", "terminated"]).float().squeeze(-1)
    expected = batch["next", "reward"].squeeze(-1) + 0.99 * not_terminated * next_q.max(-1)[0]
    assert not torch.allclose(next_q, online_next_q)
    assert torch.allclose(loss(batch.clone())["target_value"], expected.mean(), atol=1e-5)


# ---- settings -----------------------------------------------------------------------------------


def test_settings_translate_and_validate():
    from types import SimpleNamespace

    recipe = SimpleNamespace(num_envs=1, steps=1000)
    hp = CQL.defaults()
    s = torchrl_settings(hp, recipe)
    assert s["target_entropy"] == "auto" and s["loss_function"] == "l2" and s["value_estimator"] == "td0"
    assert torchrl_settings({**hp, "td_loss": "huber", "learn_alpha": False}, recipe)["loss_function"] == "smooth_l1"
    assert torchrl_settings({**hp, "learn_alpha": False}, recipe)["fixed_alpha"] is True
    with pytest.raises(ValueError, match="temperature must be positive"):
        torchrl_settings({**hp, "temperature": 0.0}, recipe)


@pytest.mark.parametrize("recipe, env_id", [("cql-pendulum-medium", "Pendulum-v1"), ("cql-cartpole-medium", "CartPole-v1")])
def test_conforms_to_the_contract(random_dataset, recipe, env_id):
    """The conformance kit on Box and Discrete actions: declarations, construction, short train,
    deterministic evaluation, checkpoint round-trip and bit-for-bit resume equivalence."""
    from rlplug.testing import check_cell

    overrides = [f"dataset={random_dataset(env_id)}", "hidden_sizes=[16, 16]", "batch_size=32", "log_every=50", "eval_every=0"]
    check_cell(recipe, "torchrl", overrides, steps=100)
