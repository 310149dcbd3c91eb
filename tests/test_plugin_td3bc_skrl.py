"""td3bc/skrl: td3's agent trained offline, its policy stage the TD3+BC actor loss, observations
standardised with the dataset's statistics, and the cell conforming to the contract."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("skrl")

SMALL = {"hidden_sizes": [32, 32], "batch_size": 64, "log_every": 100, "eval_every": 0}


@pytest.fixture
def td3bc_build(builds, random_dataset):
    def make(seed=0, **kw):
        return builds("rlplug_td3bc", "skrl", "Pendulum-v1", num_envs=1, steps=10_000, seed=seed,
                      dataset=random_dataset("Pendulum-v1"), **{**SMALL, **kw})  # fmt: skip

    return make


def test_policy_stage_is_the_td3bc_actor_loss_on_a_fixed_batch(td3bc_build):
    """-lambda * Q1(s, pi(s)).mean() + MSE(pi(s), a), lambda = alpha / mean|Q1(s, pi(s))|, written out here."""
    build = td3bc_build(alpha=1.7)
    agent = build.trainer.agent
    batch = agent.sample_batch()
    out = build.loss(agent, batch, "policy")
    obs = batch["observations"]
    actions = agent.policy.compute({"observations": obs}, role="policy")[0]
    q1 = agent.critic_1.compute({"observations": obs, "taken_actions": actions}, role="critic_1")[0]
    lmbda = 1.7 / q1.abs().mean()
    expected = -lmbda * q1.mean() + ((actions - batch["actions"]) ** 2).mean()
    assert torch.allclose(out["loss_policy"], expected, rtol=1e-5, atol=1e-6)
    assert torch.allclose(out["lmbda"], lmbda) and out["bc_loss"].requires_grad is False


def test_sampled_observations_are_standardised_with_the_dataset_statistics(td3bc_build):
    build = td3bc_build()
    raw = build.memory.tensors["observations"].reshape(-1, 3)
    scaler = build.trainer.agent._observation_preprocessor
    assert torch.allclose(scaler.mean, raw.mean(0)) and torch.allclose(scaler.scale, raw.std(0, correction=0) + 1e-3)
    assert torch.allclose(scaler(raw).mean(0), torch.zeros(3), atol=1e-4)
    plain = td3bc_build(normalize_observations=False)
    assert not isinstance(plain.trainer.agent._observation_preprocessor, torch.nn.Module)


def test_trains_with_the_policy_delay_and_logs_the_bc_terms(td3bc_build):
    build = td3bc_build()
    rows = []
    build.trainer.train(300, [lambda trainer, metrics: rows.append(metrics)])
    assert build.trainer.updates == 300 and len(rows) == 3
    for term in ("loss_critic", "loss_policy", "bc_loss", "lmbda"):
        assert np.isfinite(rows[-1][f"loss/{term}"]), rows[-1]
    agent = build.trainer.agent
    assert agent.target_updater.steps == 150  # policy and targets on every 2nd update
    assert int(next(iter(agent.policy_optimizer.state.values()))["step"]) == 150
    assert int(next(iter(agent.critic_optimizer.state.values()))["step"]) == 300
    actions = build.trainer.act_deterministic(np.zeros((5, 3), dtype=np.float32))
    assert actions.shape == (5, 1) and np.all(np.abs(actions) <= 2.0)


def test_conforms_to_the_contract(random_dataset):
    """Declarations, construction, short train, evaluation, export, checkpoint round-trip and resume."""
    from rlplug.testing import check_cell

    overrides = [f"dataset={random_dataset()}", "hidden_sizes=[16, 16]", "batch_size=32", "log_every=50", "eval_every=0"]
    check_cell("td3bc-pendulum-medium", "skrl", overrides, steps=100)
