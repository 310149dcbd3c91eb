"""cql/skrl: trains on a dataset (Box and Discrete), moves its targets, round-trips its state, and
computes TorchRL's CQL maths (same weights, same batch, same random draws -> the same loss values)."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from rlplug.util.rng import restore_rng_state

pytest.importorskip("skrl")

from rlplug_cql import CQL  # noqa: E402
from rlplug_cql.settings import skrl_settings  # noqa: E402

SMALL = {"hidden_sizes": [32, 32], "batch_size": 64, "log_every": 50, "eval_every": 0, "num_random": 4}
ENVS = {"continuous": "Pendulum-v1", "discrete": "CartPole-v1"}


def _cql_build(builds, random_dataset, space="continuous", seed=0, **kw):
    env_id = ENVS[space]
    return builds("rlplug_cql", "skrl", env_id, num_envs=1, steps=300, seed=seed, dataset=random_dataset(env_id), **{**SMALL, **kw})


def _online_and_target(build):
    m = build.models
    if "q_network" in m:
        return [(m["q_network"], m["target_q_network"])]
    return [(m["critic_1"], m["target_critic_1"]), (m["critic_2"], m["target_critic_2"])]


# ---- training -----------------------------------------------------------------------------------


@pytest.mark.parametrize("space", ["continuous", "discrete"])
def test_trains_with_finite_losses_and_a_falling_critic_loss(builds, random_dataset, space):
    build = _cql_build(builds, random_dataset, space)
    rows = []
    build.trainer.train(300, [lambda trainer, metrics: rows.append(metrics)])
    assert build.trainer.updates == 300 and len(rows) == 6
    terms = ("loss_critic", "loss_cql", "q_data") + (("loss_policy", "loss_entropy", "alpha", "entropy") if space == "continuous" else ())
    for row in rows:
        for term in terms:
            assert np.isfinite(row[f"loss/{term}"]), row
    assert rows[-1]["loss/loss_critic"] < rows[0]["loss/loss_critic"]
    if space == "continuous":
        assert 0 < rows[-1]["loss/alpha"] < 1.0  # tuned down from 1.0 towards the target entropy
    actions = build.trainer.act_deterministic(np.zeros((5, build.observation_space.shape[0]), np.float32))
    assert actions.shape == ((5,) if space == "discrete" else (5, 1))
    assert all(build.action_space.contains(np.asarray(a, dtype=build.action_space.dtype)) for a in actions)


@pytest.mark.parametrize("space", ["continuous", "discrete"])
def test_target_networks_move_as_a_soft_update_with_tau(builds, random_dataset, space):
    build = _cql_build(builds, random_dataset, space, tau=0.1)
    pairs = _online_and_target(build)
    before = [[p.detach().clone() for p in target.parameters()] for _, target in pairs]
    build.trainer.agent.gradient_step()
    for (online, target), old in zip(pairs, before):
        for after, online_after, previous in zip(target.parameters(), online.parameters(), old):
            assert torch.allclose(after, 0.9 * previous + 0.1 * online_after, atol=1e-6)
            assert not torch.equal(after, previous)


def test_hard_target_update_copies_every_period(builds, random_dataset):
    build = _cql_build(builds, random_dataset, "discrete", target_update="hard", target_update_period=2)
    (online, target), = _online_and_target(build)
    build.trainer.agent.gradient_step()
    assert not torch.equal(target.net[0].weight, online.net[0].weight)
    build.trainer.agent.gradient_step()
    assert torch.equal(target.net[0].weight, online.net[0].weight)


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
    a, b = trained.trainer.agent, fresh.trainer.agent
    assert fresh.trainer.updates == 100 and b.target_updater.steps == a.target_updater.steps == 100
    if space == "continuous":
        assert torch.equal(a.log_entropy_coefficient, b.log_entropy_coefficient)
        assert torch.equal(a.entropy_coefficient, b.entropy_coefficient)

    # the RNG is process-wide (building `fresh` reseeded it): both continue from the checkpoint's
    for trainer in (trained.trainer, fresh.trainer):
        restore_rng_state(state["rng"])
        trainer.train(250)
    for (online_a, target_a), (online_b, target_b) in zip(_online_and_target(trained), _online_and_target(fresh)):
        for x, y in zip([*online_a.parameters(), *target_a.parameters()], [*online_b.parameters(), *target_b.parameters()]):
            assert torch.equal(x, y)
    np.testing.assert_array_equal(fresh.trainer.act_deterministic(observations), trained.trainer.act_deterministic(observations))


# ---- the same maths as TorchRL --------------------------------------------------------------------


def _batch_in_both_layouts(build, size=32):
    """A fixed batch from the skrl dataset memory, and the same transitions in TorchRL's layout."""
    from tensordict import TensorDict

    memory = build.memory
    index = torch.arange(size) * 7
    get = {name: memory.tensors_view[name][index] for name in ("observations", "actions", "rewards", "next_observations", "terminated")}
    skrl_batch = {**get, "states": None, "next_states": None}
    action = get["actions"].reshape(size) if get["actions"].dtype == torch.int64 else get["actions"]
    nxt = {"observation": get["next_observations"], "reward": get["rewards"], "terminated": get["terminated"], "done": get["terminated"]}
    torchrl_batch = TensorDict({"observation": get["observations"], "action": action, "next": TensorDict(nxt, [size])}, [size])
    return skrl_batch, torchrl_batch


@pytest.mark.parametrize("deterministic_backup", [True, False])
def test_critic_stage_matches_torchrl_cql_loss(builds, random_dataset, deterministic_backup):
    """skrl's critic stage (TD + penalty) equals TorchRL's ``loss_qvalue`` and ``loss_cql`` when the
    networks hold the same weights and both draw the same random numbers in the same order."""
    pytest.importorskip("torchrl")
    kw = {"deterministic_backup": deterministic_backup, "min_q_weight": 2.0, "temperature": 0.7, "initial_alpha": 0.3}
    skrl_build = _cql_build(builds, random_dataset, **kw)
    torchrl_build = builds("rlplug_cql", "torchrl", "Pendulum-v1", num_envs=1, steps=300, dataset=random_dataset("Pendulum-v1"), **{**SMALL, **kw})
    actor_net = torchrl_build.models["actor"].module[0].module[0]  # the MLP before NormalParamExtractor
    skrl_build.models["policy"].net.load_state_dict(actor_net.state_dict())
    for i, critic in enumerate(torchrl_build.models["critics"], start=1):  # the loss holds copies of these initial weights
        skrl_build.models[f"critic_{i}"].net.load_state_dict(critic.module.net.state_dict())
        skrl_build.models[f"target_critic_{i}"].net.load_state_dict(critic.module.net.state_dict())
    skrl_batch, torchrl_batch = _batch_in_both_layouts(skrl_build)

    torch.manual_seed(3)
    expected = torchrl_build.loss(torchrl_batch)
    torch.manual_seed(3)
    got = skrl_build.loss(skrl_build.trainer.agent, skrl_batch, "critic")
    assert torch.allclose(got["loss_critic"], expected["loss_qvalue"], rtol=1e-5, atol=1e-5)
    assert torch.allclose(got["loss_cql"], expected["loss_cql"], rtol=1e-5, atol=1e-5)


def test_discrete_q_stage_matches_torchrl_discrete_cql_loss(builds, random_dataset):
    """The same online and (different) target weights, the same batch: the same TD and penalty terms."""
    pytest.importorskip("torchrl")
    skrl_build = _cql_build(builds, random_dataset, "discrete", min_q_weight=3.0)
    torchrl_build = builds("rlplug_cql", "torchrl", "CartPole-v1", num_envs=1, steps=300, dataset=random_dataset("CartPole-v1"), **{**SMALL, "min_q_weight": 3.0, "tau": 0.05})
    torchrl_build.trainer.train(50)  # online and target parameters now differ
    loss = torchrl_build.loss
    net = loss.value_network.module[0].module  # QValueActor: the MLP, then the argmax
    for role, params in (("q_network", loss.value_network_params), ("target_q_network", loss.target_value_network_params)):
        with params.to_module(loss.value_network):
            skrl_build.models[role].net.load_state_dict(net.state_dict())
    skrl_batch, torchrl_batch = _batch_in_both_layouts(skrl_build)
    expected = loss(torchrl_batch)
    got = skrl_build.loss(skrl_build.trainer.agent, skrl_batch, "q")
    assert torch.allclose(got["loss_critic"], expected["loss_qvalue"], rtol=1e-5)
    assert torch.allclose(got["loss_cql"], expected["loss_cql"], rtol=1e-5)


# ---- settings -----------------------------------------------------------------------------------


def test_settings_translate_and_validate():
    from types import SimpleNamespace

    recipe = SimpleNamespace(num_envs=1, steps=1000)
    hp = CQL.defaults()
    s = skrl_settings(hp, recipe)
    assert s["target_entropy"] is None and s["learning_rate"] == [1e-4, 3e-4, 3e-4] and s["td_loss"] == "mse"
    assert skrl_settings({**hp, "td_loss": "huber"}, recipe)["td_loss"] == "huber"
    with pytest.raises(ValueError, match="num_random must be at least 1"):
        skrl_settings({**hp, "num_random": 0}, recipe)
    with pytest.raises(ValueError, match="min_q_weight must be >= 0"):
        skrl_settings({**hp, "min_q_weight": -1.0}, recipe)
    assert CQL.kind == "offline" and CQL.backends["skrl"].action_spaces == ("continuous", "discrete")


@pytest.mark.parametrize("recipe, env_id", [("cql-pendulum-medium", "Pendulum-v1"), ("cql-cartpole-medium", "CartPole-v1")])
def test_conforms_to_the_contract(random_dataset, recipe, env_id):
    """The conformance kit on Box and Discrete actions: declarations, construction, short train,
    deterministic evaluation, checkpoint round-trip and bit-for-bit resume equivalence."""
    from rlplug.testing import check_cell

    overrides = [f"dataset={random_dataset(env_id)}", "hidden_sizes=[16, 16]", "batch_size=32", "log_every=50", "eval_every=0"]
    check_cell(recipe, "skrl", overrides, steps=100)
