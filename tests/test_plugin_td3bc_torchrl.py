"""td3bc/torchrl: TorchRL's TD3BCLoss on td3's networks, trained offline with td3's cadence (actor and
targets every policy_delay updates), on dataset-standardised observations; the cell conforms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torchrl")

SMALL = {"hidden_sizes": [32, 32], "batch_size": 64, "log_every": 100, "eval_every": 0}


@pytest.fixture
def td3bc_build(builds, random_dataset):
    def make(seed=0, **kw):
        return builds("rlplug_td3bc", "torchrl", "Pendulum-v1", num_envs=1, steps=10_000, seed=seed,
                      dataset=random_dataset("Pendulum-v1"), **{**SMALL, **kw})  # fmt: skip

    return make


def test_actor_loss_is_the_td3bc_formula_on_a_fixed_batch(td3bc_build):
    """-lambda * Q1(s, pi(s)).mean() + MSE(pi(s), a), lambda = alpha / mean|Q1(s, pi(s))|, written out here."""
    build = td3bc_build(alpha=1.7)
    loss, actor, qvalue = build.loss, build.models["actor"], build.models["qvalue"]
    sample = build.memory.sample()
    loss_actor, info = loss.actor_loss(sample.clone())
    with loss.actor_network_params.to_module(actor):
        pi = actor(sample.select("observation").clone())["action"]
    with loss.qvalue_network_params[0].to_module(qvalue):
        q1 = qvalue(sample.select("observation").clone().set("action", pi))["state_action_value"].squeeze(-1)
    lmbda = 1.7 / q1.abs().mean()
    expected = -lmbda * q1.mean() + ((pi - sample["action"]) ** 2).mean()
    assert torch.allclose(loss_actor, expected, rtol=1e-5, atol=1e-6)
    assert torch.allclose(info["lmbd"], lmbda)


def test_trains_with_the_policy_delay_on_standardised_observations(td3bc_build):
    build = td3bc_build()
    trainer = build.trainer
    raw = build.memory[:]["observation"]
    assert torch.allclose(trainer.standardizer.mean, raw.mean(0))
    rows = []
    trainer.train(300, [lambda trainer, metrics: rows.append(metrics)])
    assert trainer.updates == 300 and len(rows) == 3
    for term in ("loss_qvalue", "loss_actor", "bc_loss", "lmbda"):
        assert np.isfinite(rows[-1][f"loss/{term}"]), rows[-1]
    assert trainer.target_updater.steps == 150
    actor_state, critic_state = (trainer.optimizer.state[group["params"][0]] for group in trainer.optimizer.param_groups)
    assert (int(actor_state["step"]), int(critic_state["step"])) == (150, 300)
    observations = np.random.default_rng(0).uniform(-1, 1, size=(5, 3)).astype(np.float32)
    actions = trainer.act_deterministic(observations)
    from tensordict import TensorDict

    with torch.no_grad():
        standardised = TensorDict({"observation": trainer.standardizer(torch.as_tensor(observations))}, batch_size=[5])
        direct = build.models["actor"](standardised)["action"]
    np.testing.assert_allclose(actions, direct.numpy(), rtol=1e-6)
    assert trainer.export_policy()(torch.as_tensor(observations)).shape == (5, 1)


def test_conforms_to_the_contract(random_dataset):
    """Declarations, construction, short train, evaluation, export, checkpoint round-trip and resume."""
    from rlplug.testing import check_cell

    overrides = [f"dataset={random_dataset()}", "hidden_sizes=[16, 16]", "batch_size=32", "log_every=50", "eval_every=0"]
    check_cell("td3bc-pendulum-medium", "torchrl", overrides, steps=100)
