"""sac/skrl: the loss-delegating agent matches upstream skrl SAC, trains, moves its targets, round-trips its state."""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest
import torch

pytest.importorskip("skrl")

from skrl.agents.torch.sac import SAC as UpstreamSAC  # noqa: E402

from rlplug_sac import SAC  # noqa: E402
from rlplug_sac.settings import skrl_settings  # noqa: E402

SMALL = {"hidden_sizes": [32, 32], "batch_size": 64, "log_every": 200}


def _sac_build(builds, seed=0, **kw):
    return builds("rlplug_sac", "skrl", "Pendulum-v1", num_envs=1, steps=100_000, seed=seed, **{**SMALL, **kw})


def _filled_without_updates(builds, transitions=300, **kw):
    """A build whose replay memory holds ``transitions`` random-action transitions and no update ran."""
    build = _sac_build(builds, learning_starts=1_000_000, log_every=transitions, **kw)
    build.trainer.train(transitions)
    assert build.trainer.gradient_steps == 0 and len(build.memory) == transitions
    return build


# ---- parity with upstream skrl SAC --------------------------------------------------------------


@pytest.mark.parametrize("learn_alpha, grad_norm_clip", [(True, 0.0), (False, 0.5)])
def test_gradient_steps_match_upstream_skrl(builds, learn_alpha, grad_norm_clip):
    from rlplug_sac.skrl_backend import sac_cfg

    # upstream steps torch's default (loop) Adam: compare the loss maths on the same optimiser path
    build = _filled_without_updates(builds, learn_alpha=learn_alpha, grad_norm_clip=grad_norm_clip, tau=0.05, initial_alpha=0.5,
                                    optimizer_impl="loop")
    ours = build.trainer.agent
    upstream = UpstreamSAC(
        models={role: copy.deepcopy(model) for role, model in build.models.items()},
        memory=build.memory,  # sampling does not change the memory; the seed decides the indices
        observation_space=build.observation_space,
        action_space=build.action_space,
        device="cpu",
        cfg=sac_cfg(build),
    )
    upstream.init()
    for _ in range(3):
        for agent in (upstream, ours):
            torch.manual_seed(1234)
            agent.enable_models_training_mode(True)
            agent.update(timestep=0, timesteps=1)
            agent.enable_models_training_mode(False)
    for role in ("policy", "critic_1", "critic_2", "target_critic_1", "target_critic_2"):
        for (name, a), (_, b) in zip(upstream.models[role].named_parameters(), ours.models[role].named_parameters()):
            assert torch.equal(a, b), (role, name, (a - b).abs().max())
    assert not torch.equal(upstream.critic_1.net[0].weight, build.trainer.agent.target_critic_1.net[0].weight)
    if learn_alpha:
        assert torch.equal(upstream.log_entropy_coefficient, ours.log_entropy_coefficient)
        assert float(ours._entropy_coefficient) != pytest.approx(0.5)
    for name in ("policy_optimizer", "critic_optimizer"):
        steps = [int(next(iter(a.checkpoint_modules[name].state.values()))["step"]) for a in (upstream, ours)]
        assert steps == [3, 3]


# ---- training -----------------------------------------------------------------------------------


def test_trains_with_finite_losses_and_moving_critics(builds):
    build = _sac_build(builds, learning_starts=100)
    critic_before = copy.deepcopy(build.models["critic_1"].state_dict())
    rows = []
    build.trainer.train(600, [lambda trainer, metrics: rows.append(metrics)])
    assert build.trainer.env_steps == 600 and build.trainer.gradient_steps == 500
    for row in rows:
        for term in ("loss_critic", "loss_policy", "loss_entropy"):
            assert np.isfinite(row[f"loss/{term}"]), row
        assert 0 < row["train/alpha"] < 1.0  # tuned down from 1.0 towards the target entropy
    moved = [not torch.equal(a, build.models["critic_1"].state_dict()[k]) for k, a in critic_before.items()]
    assert all(moved)


def test_target_critics_move_as_a_soft_update_with_tau(builds):
    build = _filled_without_updates(builds, tau=0.1)
    agent = build.trainer.agent
    pairs = [(build.models[f"target_critic_{i}"], build.models[f"critic_{i}"]) for i in (1, 2)]
    targets_before = [[p.detach().clone() for p in target.parameters()] for target, _ in pairs]
    agent.gradient_step(timestep=0, timesteps=1)
    for (target, online), before in zip(pairs, targets_before):
        for after, online_after, old in zip(target.parameters(), online.parameters(), before):
            expected = 0.9 * old + 0.1 * online_after  # online parameters after this step's optimiser step
            assert torch.allclose(after, expected, atol=1e-6)
            assert not torch.equal(after, old)


def test_hard_target_update_copies_every_period(builds):
    build = _filled_without_updates(builds, target_update="hard", target_update_period=2)
    agent, target, online = build.trainer.agent, build.models["target_critic_1"], build.models["critic_1"]
    agent.gradient_step(timestep=0, timesteps=1)
    assert not torch.equal(target.net[0].weight, online.net[0].weight)
    agent.gradient_step(timestep=1, timesteps=2)
    assert torch.equal(target.net[0].weight, online.net[0].weight)


# ---- checkpoints --------------------------------------------------------------------------------


def test_state_dict_round_trip_restores_policy_and_alpha(builds):
    trained = _sac_build(builds, learning_starts=100)
    trained.trainer.train(400)
    buffer = io.BytesIO()
    torch.save(trained.trainer.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)

    fresh = _sac_build(builds, seed=7, learning_starts=100)
    observations = np.random.default_rng(0).uniform(-1, 1, size=(16, 3)).astype(np.float32)
    assert not np.array_equal(fresh.trainer.act_deterministic(observations), trained.trainer.act_deterministic(observations))
    fresh.trainer.load_state_dict(state)
    np.testing.assert_array_equal(fresh.trainer.act_deterministic(observations), trained.trainer.act_deterministic(observations))
    a, b = trained.trainer.agent, fresh.trainer.agent
    assert torch.equal(a.log_entropy_coefficient, b.log_entropy_coefficient)
    assert float(b._entropy_coefficient) == pytest.approx(float(a._entropy_coefficient)) != pytest.approx(1.0)
    assert b.target_updater.steps == a.target_updater.steps == 300
    assert fresh.trainer.gradient_steps == 300 and fresh.trainer.env_steps == 400
    for role in ("target_critic_1", "critic_2"):
        assert torch.equal(a.models[role].net[0].weight, b.models[role].net[0].weight)


# ---- settings -----------------------------------------------------------------------------------


def test_settings_translate_and_validate():
    from types import SimpleNamespace

    recipe = SimpleNamespace(num_envs=1, steps=1000)
    hp = SAC.defaults()
    s = skrl_settings(hp, recipe)
    assert s["target_entropy"] is None and s["learning_rate"] == [3e-4, 3e-4, 3e-4]
    assert skrl_settings({**hp, "target_entropy": -0.5}, recipe)["target_entropy"] == -0.5
    with pytest.raises(ValueError, match="value_estimator 'td1' is only available on the torchrl backend"):
        skrl_settings({**hp, "value_estimator": "td1"}, recipe)
    param = SAC.param_map["target_entropy"]
    assert param.validate(-1, "x") == -1.0 and param.validate("auto", "x") == "auto"
    with pytest.raises(TypeError, match="must be 'auto' or a number"):
        param.validate("automatic", "hyperparameter 'target_entropy'")


# ---- exploration noise --------------------------------------------------------------------------


def _lag1_autocorrelation(x: np.ndarray) -> float:
    x = x - x.mean()
    return float((x[1:] * x[:-1]).mean() / (x * x).mean())


def test_ou_exploration_noise_correlates_actions_in_bounds_and_round_trips(builds):
    """``exploration_noise = "ou"`` adds skrl's OU process to the sampled actions (clamped into the
    bounds): consecutive collected actions are correlated, unlike the policy's own i.i.d. samples."""
    stored = {}
    for noise in ("none", "ou"):
        build = _sac_build(builds, learning_starts=0, utd_ratio=0.01, log_every=400, exploration_noise=noise,
                           exploration_std=1.0, ou_theta=0.05)
        build.trainer.train(400)
        stored[noise] = build.memory.get_tensor_by_name("actions")[:400, 0, 0].numpy()
    assert build.trainer.agent.exploration_noise is not None
    assert np.all(np.abs(stored["ou"]) <= 2.0) and np.abs(stored["none"]).max() < 5.0
    assert _lag1_autocorrelation(stored["ou"]) > 0.5 > 0.2 > abs(_lag1_autocorrelation(stored["none"]))

    state = build.trainer.state_dict()
    assert torch.is_tensor(state["agent"]["attributes"]["exploration_noise.state"])
    fresh = _sac_build(builds, seed=3, exploration_noise="ou")
    fresh.trainer.load_state_dict(state)
    assert torch.equal(fresh.trainer.agent.exploration_noise.state, build.trainer.agent.exploration_noise.state)


def test_exploration_settings_default_to_no_noise():
    from types import SimpleNamespace

    recipe = SimpleNamespace(num_envs=1, steps=1000)
    assert skrl_settings(SAC.defaults(), recipe)["exploration_noise"] is None
    assert skrl_settings(SAC.defaults(), recipe)["squash_actions"] is False
    s = skrl_settings({**SAC.defaults(), "exploration_noise": "ou", "exploration_std": 0.3, "ou_theta": 0.1}, recipe)
    assert (s["exploration_noise"], s["exploration_std"], s["ou_theta"]) == ("ou", 0.3, 0.1)
    with pytest.raises(ValueError, match="ou_theta must be in"):
        skrl_settings({**SAC.defaults(), "ou_theta": 1.5}, recipe)


def test_squashed_policy_matches_a_tanh_transformed_gaussian(builds):
    """``squash_actions``: samples inside the bounds, SAC's change-of-variables log-prob (checked
    against torch's TransformedDistribution), and the squashed mean as the deterministic action."""
    from torch.distributions import AffineTransform, Normal, TanhTransform, TransformedDistribution

    build = _sac_build(builds, squash_actions=True, learning_starts=100)
    policy = build.models["policy"]
    observations = torch.randn(64, 3)
    actions, outputs = policy.act({"observations": observations, "states": None}, role="policy")
    assert actions.abs().max() <= 2.0 and outputs["log_prob"].shape == (64, 1)
    mean, extra = policy.compute({"observations": observations}, role="policy")
    reference = TransformedDistribution(Normal(mean, extra["log_std"].exp()), [TanhTransform(), AffineTransform(0.0, 2.0)])
    inside = actions.abs().squeeze(-1) < 1.999  # the reference's inverse tanh is inexact at the edges
    expected = reference.log_prob(actions).sum(-1, keepdim=True)
    assert torch.allclose(outputs["log_prob"][inside], expected[inside], atol=1e-4)
    np.testing.assert_allclose(build.trainer.act_deterministic(observations.numpy()), (2 * torch.tanh(mean)).detach().numpy(), rtol=1e-6)
    rows = []
    build.trainer.train(400, [lambda trainer, metrics: rows.append(metrics)])
    assert build.trainer.gradient_steps == 300
    assert all(np.isfinite(row[f"loss/{term}"]) for row in rows[1:] for term in ("loss_critic", "loss_policy", "loss_entropy"))


def test_conforms_to_the_contract():
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence."""
    from rlplug.testing import check_cell

    check_cell("sac-pendulum", "skrl", ["learning_starts=64", "hidden_sizes=[16, 16]", "batch_size=16", "log_every=64"], steps=128)
