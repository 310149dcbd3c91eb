"""gSDE (``rlplug.backends.common.gsde``): the noise keeps each env's exploration matrix for its period and has the
marginal scale the losses read; SAC (and what derives from it) and PPO collect through it on both backends, with
the weights they train. The cells' conformance (training, resume mid-period, evaluation) is in test_conformance.py."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")
pytest.importorskip("torchrl")

from rlplug.backends.common.gsde import VARIANCE_EPSILON, StateDependentNoise, collecting  # noqa: E402


def test_each_env_keeps_its_exploration_matrix_for_the_period():
    torch.manual_seed(0)
    noise = StateDependentNoise(features=3, actions=2, initial_log_std=-1.0, period=4, num_envs=2)
    latent = torch.randn(2, 3)
    draws = [noise.noise(latent) for _ in range(9)]
    assert all(torch.equal(draws[0], d) for d in draws[1:4])  # one matrix per env for 4 steps
    assert not torch.equal(draws[3], draws[4]) and all(torch.equal(draws[4], d) for d in draws[5:8])
    assert not torch.equal(draws[7], draws[8]) and int(noise.steps) == 9
    assert not torch.equal(draws[0][0], draws[0][1])  # the envs' matrices differ
    # the noise is linear in the features: what makes it a smooth function of the state
    assert torch.allclose(noise.noise(2 * latent), 2 * draws[8], atol=1e-6)
    with pytest.raises(ValueError, match="one exploration matrix per env"):
        noise.noise(torch.randn(3, 3))


def test_the_marginal_scale_is_the_spread_of_the_matrix_noise():
    torch.manual_seed(0)
    noise = StateDependentNoise(features=4, actions=2, initial_log_std=-0.5, period=1, num_envs=20_000)
    latent = torch.tensor([[0.5, -1.0, 2.0, 0.0]])
    expected = torch.sqrt(latent.square() @ torch.full((4, 2), np.exp(-0.5)).square() + VARIANCE_EPSILON)
    assert torch.allclose(noise.std(latent), expected)
    samples = noise.noise(latent.expand(20_000, 4))  # 20,000 independent matrices at one state
    assert torch.allclose(samples.std(0), expected[0], rtol=0.03) and samples.mean(0).abs().max() < 0.05


def test_expln_is_exp_below_zero_and_log1p_above():
    noise = StateDependentNoise(features=1, actions=3, initial_log_std=0.0, period=1, num_envs=1, expln=True)
    with torch.no_grad():
        noise.log_std.copy_(torch.tensor([[-2.0, 0.5, 3.0]]))
    expected = torch.tensor([[np.exp(-2.0), np.log1p(0.5) + 1, np.log1p(3.0) + 1]], dtype=torch.float32)
    assert torch.allclose(noise.weight_std(), expected, atol=1e-5)


CELLS = {  # plugin module, env, hyperparameters: gSDE on, a period longer than the run
    "sac": ("rlplug_sac", dict(learning_starts=0, train_every=4, batch_size=16, squash_actions=True)),
    "tqc": ("rlplug_tqc", dict(learning_starts=0, train_every=4, batch_size=16, squash_actions=True, n_critics=2, n_quantiles=5)),
    "ppo": ("rlplug_ppo", dict(rollout_steps=32, epochs=1, minibatches=2)),
}


def _collection_action(build, backend, observations):
    """The action the cell's collection takes at ``observations`` (one per env), gSDE's path."""
    from tensordict import TensorDict

    if backend == "skrl":
        agent = build.trainer.agent
        with torch.no_grad(), collecting(agent.policy):
            return agent.policy.act({"observations": observations}, role="policy")[0]
    trainer = build.trainer
    policy = getattr(trainer, "exploration_policy", None) or trainer.collection.policy
    with torch.no_grad():
        return policy(TensorDict({"observation": observations}, batch_size=[len(observations)]))["action"]


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
@pytest.mark.parametrize("cell", CELLS)
def test_collection_explores_with_the_trained_policys_matrices(builds, cell, backend):
    module, hp = CELLS[cell]
    build = builds(module, backend, "Pendulum-v1", num_envs=2, steps=128, hidden_sizes=[16, 16], use_sde=True,
                   sde_sample_freq=1000, **hp)  # fmt: skip
    policy = build.models["policy"] if backend == "skrl" else build.models["actor"]
    noise = next(m for m in policy.modules() if isinstance(m, StateDependentNoise))
    log_std = noise.log_std.detach().clone()
    build.trainer.train(128)
    # every vector step of the collection drew through gSDE's matrices (TorchRL's collection also probes the
    # policy's outputs once when it is made, as its Collector does)
    assert int(noise.steps) == 64 + (backend == "torchrl")
    assert not torch.equal(log_std, noise.log_std.detach())  # the losses train the noise's scale
    # with the matrices zeroed, the collected action is the trained policy's deterministic one (the same weights)
    observations = torch.tensor([[1.0, 0.0, 0.5], [0.0, 1.0, -2.0]])
    with torch.no_grad():
        noise.matrices.zero_()
    collected = _collection_action(build, backend, observations)
    deterministic = torch.as_tensor(build.trainer.act_deterministic(observations.numpy()), dtype=torch.float32)
    assert torch.allclose(collected, deterministic, atol=1e-5)
    with torch.no_grad():
        noise.matrices.normal_()
    assert not torch.allclose(_collection_action(build, backend, observations), deterministic, atol=1e-3)


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_gsde_refuses_discrete_actions_in_one_line(builds, backend):
    from rlplug import RlplugError

    with pytest.raises(RlplugError, match="use_sde = true is for Box actions"):
        builds("rlplug_ppo", backend, "CartPole-v1", num_envs=2, steps=64, use_sde=True, rollout_steps=16)


@pytest.mark.parametrize("recipe", ["zoo:sac/MountainCarContinuous-v0", "zoo:ppo/MountainCarContinuous-v0"])
def test_torchrl_trainer_config_export_names_gsde_as_dropped(capsys, recipe):
    from rlplug.cli import main

    assert main(["show", recipe, "--backend", "torchrl", "--format", "hydra"]) == 0
    dropped = capsys.readouterr().out.split("# Dropped")[1].split("\ndefaults:\n")[0]
    assert "use_sde = True: TorchRL's trainer configs have no gSDE" in dropped
