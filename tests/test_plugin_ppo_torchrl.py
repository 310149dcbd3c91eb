"""ppo/torchrl: ClipPPOLoss + rlplug's loop learns, optimises the registered loss, and round-trips its state."""

from __future__ import annotations

import functools
import io
import math

import gymnasium as gym
import numpy as np
import pytest

from conftest import make_ppo_build

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from rlplug.contract.losses import LossRegistry  # noqa: E402
from rlplug.backends.common.nets import mlp  # noqa: E402
from rlplug.backends.torchrl import deterministic_actor, q_value_operator  # noqa: E402
from rlplug.backends.torchrl.env import make_env  # noqa: E402
from rlplug.backends.torchrl.modules import RunningNormalizer  # noqa: E402
from rlplug.backends.torchrl.onpolicy import LearningRateSchedule  # noqa: E402
from rlplug_ppo import plugin  # noqa: E402
from rlplug_ppo.torchrl_backend import describe_clip_loss, make_clip_loss  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from torchrl.objectives import ClipPPOLoss  # noqa: E402

CARTPOLE = dict(
    rollout_steps=64, epochs=8, minibatches=4, learning_rate=1e-3, lr_schedule="kl_adaptive", kl_target=0.008,
    normalize_observations=True, normalize_values=True, entropy_coef=0.01, value_coef=1.0, value_clip=0.2,
    max_grad_norm=0.5, gamma=0.99, gae_lambda=0.95, hidden_sizes=[64, 64], activation="tanh",
)  # fmt: skip
TERMS = ("loss_objective", "loss_critic", "loss_entropy")
REPORTED = ("kl_approx", "clip_fraction", "entropy")


def make_build(**kwargs):
    return make_ppo_build("torchrl", **kwargs)


@pytest.fixture
def builds(ppo_builds):
    return functools.partial(ppo_builds, "torchrl")


def _parameters(module):
    return {name: p.detach().clone() for name, p in module.named_parameters()}


# ---- CartPole really learns ---------------------------------------------------------------------


def test_cartpole_learns(builds):
    build = builds(num_envs=8, steps=6144, seed=0, bootstrap_truncated=True, **CARTPOLE)
    assert build.target_updater is None  # PPO has no target networks
    trainer = build.trainer
    history = []
    trainer.train(6144, callbacks=[lambda t, metrics: history.append(metrics)])
    assert trainer.env_steps == 6144 and trainer.iterations == 12
    for metrics in history:
        assert {f"loss/{t}" for t in (*TERMS, *REPORTED)} <= metrics.keys()
        assert {"train/lr", "train/minibatches"} <= metrics.keys()
        assert all(math.isfinite(v) for v in metrics.values())
    returns = [m["train/episode_return"] for m in history if "train/episode_return" in m]
    early, late = np.mean(returns[:3]), np.mean(returns[-3:])
    assert late > 2 * early and late > 50, returns
    critic = [m["loss/loss_critic"] for m in history]
    assert np.mean(critic[-3:]) < np.mean(critic[:3]), critic


# ---- the registered loss is what gets optimised --------------------------------------------------


def _registry_with(name, terms, reported=("kl_approx",), factory=make_clip_loss):
    registry = LossRegistry()
    plugin.rlplug_register_losses(registry)
    registry.register("ppo", "torchrl", name, factory, terms=terms, reported=reported, source="test")
    return registry


@pytest.mark.parametrize(
    ("terms", "moves_actor", "moves_critic"),
    [(("loss_critic",), False, True), (("loss_objective", "loss_entropy"), True, False), (TERMS, True, True)],
)
def test_only_the_entrys_terms_are_optimised(builds, terms, moves_actor, moves_critic):
    registry = _registry_with("partial", terms)
    build = builds(registry=registry, loss="partial", rollout_steps=32, epochs=2, minibatches=2)
    actor_before, critic_before = _parameters(build.models["actor"]), _parameters(build.models["critic"])
    metrics = build.trainer.step()
    assert {f"loss/{t}" for t in terms} | {"loss/kl_approx"} <= metrics.keys()
    assert "loss/clip_fraction" not in metrics  # neither optimised nor reported by this entry
    actor_moved = any(not torch.equal(p, actor_before[n]) for n, p in build.models["actor"].named_parameters())
    critic_moved = any(not torch.equal(p, critic_before[n]) for n, p in build.models["critic"].named_parameters())
    assert (actor_moved, critic_moved) == (moves_actor, moves_critic)


class ScaledCriticLoss(ClipPPOLoss):
    """A user loss: ClipPPOLoss whose critic term is renamed and scaled, with a call counter."""

    calls = 0

    def forward(self, tensordict):
        ScaledCriticLoss.calls += 1
        out = super().forward(tensordict)
        return TensorDict(
            {"policy_term": out["loss_objective"], "scaled_critic": 3.0 * out["loss_critic"], "kl_approx": out["kl_approx"]},
            batch_size=[],
        )


def make_scaled_critic_loss(build):
    s = build.settings
    loss = ScaledCriticLoss(build.models["actor"], build.models["critic"], entropy_bonus=False, critic_coeff=1.0,
                            loss_critic_type="l2", normalize_advantage=True)  # fmt: skip
    loss.make_value_estimator("gae", gamma=s["gamma"], lmbda=s["lmbda"])
    return loss


def test_a_registered_custom_loss_drives_the_update(builds):
    registry = _registry_with("scaled", ("policy_term", "scaled_critic"), factory=make_scaled_critic_loss)
    build = builds(registry=registry, loss="scaled", rollout_steps=32, epochs=2, minibatches=2, lr_schedule="kl_adaptive")
    assert isinstance(build.loss, ScaledCriticLoss)
    ScaledCriticLoss.calls = 0
    metrics = build.trainer.step()
    assert ScaledCriticLoss.calls == 2 * 2 == metrics["train/minibatches"]
    assert {"loss/policy_term", "loss/scaled_critic", "loss/kl_approx"} <= metrics.keys()
    assert "loss/loss_critic" not in metrics


def test_kl_schedules_need_kl_approx():
    registry = _registry_with("silent", TERMS, reported=())
    with pytest.raises(ValueError, match="kl_approx"):
        make_build(registry=registry, loss="silent", lr_schedule="kl_adaptive")


def test_kl_early_stop_cuts_epochs_short(builds):
    trainer = builds(rollout_steps=32, epochs=4, minibatches=4, kl_early_stop=1e-9).trainer
    metrics = trainer.step()
    assert metrics["train/kl_early_stopped"] == 1.0
    assert 1 <= metrics["train/minibatches"] < 4 * 4
    metrics = trainer.step()  # the sampler restarts every epoch on a full permutation
    assert metrics["train/minibatches"] >= 1


def test_describe_clip_loss():
    description = describe_clip_loss()
    assert description["value_estimator"] == "GAE"
    assert description["set_keys"] == sorted(description["set_keys"])
    assert {"advantage", "value_target", "value", "sample_log_prob", "action", "reward", "done", "terminated"} <= set(
        description["set_keys"]
    )


def test_clip_loss_follows_the_settings(builds):
    build = builds(clip_ratio=0.1, value_clip=0.3, entropy_coef=0.02, value_coef=0.7, gamma=0.97, gae_lambda=0.9)
    loss = build.loss
    assert isinstance(loss, ClipPPOLoss)
    assert loss.clip_epsilon.item() == pytest.approx(0.1)
    assert loss.clip_value.item() == pytest.approx(0.3)
    assert loss.entropy_coeff.item() == pytest.approx(0.02)
    assert loss.critic_coeff.item() == pytest.approx(0.7)
    assert loss.loss_critic_type == "l2"
    assert not loss.normalize_advantage and build.trainer.rollout_advantage_norm  # per rollout, in the loop (skrl's)
    assert (loss.value_clip_mode, loss.kl_estimator) == ("clipped", "k3")
    assert type(loss.value_estimator).__name__ == "GAE"
    assert loss.value_estimator.gamma.item() == pytest.approx(0.97)
    assert loss.value_estimator.lmbda.item() == pytest.approx(0.9)


# ---- truncation bootstrapping -------------------------------------------------------------------


@pytest.mark.parametrize("bootstrap", [True, False])
def test_truncated_steps_bootstrap_only_when_asked(builds, bootstrap):
    trainer = builds(num_envs=1, rollout_steps=2, gamma=0.5, gae_lambda=1.0, bootstrap_truncated=bootstrap).trainer
    observations = torch.tensor([[[0.1, 0.2, 0.3, 0.4], [0.0, 0.1, 0.0, 0.1]]])
    next_observations = torch.tensor([[[0.5, 0.6, 0.7, 0.8], [0.2, 0.2, 0.2, 0.2]]])
    false, true = torch.zeros(1, 2, 1, dtype=torch.bool), torch.tensor([[[True], [False]]])
    batch = TensorDict(
        {"observation": observations, "next": {"observation": next_observations, "reward": torch.ones(1, 2, 1),
                                               "done": true.clone(), "terminated": false.clone(), "truncated": true.clone()}},
        batch_size=[1, 2],
    )  # fmt: skip
    with torch.no_grad():
        trainer.compute_advantages(batch)
        cut_value = trainer.critic(TensorDict({"observation": next_observations[0, 0]}, []))["state_value"]
    expected = 1.0 + 0.5 * cut_value.item() if bootstrap else 1.0
    assert batch["value_target"][0, 0, 0].item() == pytest.approx(expected, abs=1e-5)


# ---- skrl's PPO semantics (rlplug_ppo.settings.TORCHRL_PARITY_SETTINGS) ---------------------------


def _rollout(trainer):
    """One collected batch with its advantages, flattened as the update's minibatches are."""
    batch = next(trainer._batches)
    with torch.no_grad():
        trainer.compute_advantages(batch)
    return batch.reshape(-1)


def test_kl_approx_is_skrls_k3_estimator(builds):
    trainer = builds(rollout_steps=16).trainer
    minibatch = _rollout(trainer)
    old = minibatch["action_log_prob"]
    minibatch["action_log_prob"] = old + 0.3 * torch.randn_like(old)  # as if an older policy had acted
    with torch.no_grad():
        log_ratio = trainer.actor.get_dist(minibatch).log_prob(minibatch["action"]) - minibatch["action_log_prob"]
        k3 = trainer.loss(minibatch)["kl_approx"].item()
        trainer.loss.kl_estimator = "k1"
        k1 = trainer.loss(minibatch)["kl_approx"].item()
    assert k3 == pytest.approx(((log_ratio.exp() - 1) - log_ratio).mean().item(), rel=1e-5)
    assert k1 == pytest.approx((-log_ratio).mean().item(), rel=1e-4, abs=1e-6)  # upstream ClipPPOLoss's
    assert k3 > 0 and k3 != pytest.approx(k1)


def test_value_clip_fits_only_the_clipped_prediction(builds):
    trainer = builds(rollout_steps=16, value_clip=0.2, value_coef=1.0).trainer
    minibatch = _rollout(trainer)
    with torch.no_grad():
        predicted = trainer.critic(minibatch.clone())["state_value"]
        side = torch.where(torch.arange(len(minibatch)) % 2 == 0, 1.0, -1.0).unsqueeze(-1)
        # the old value 0.5 away, the target 1.0 away on the same side: clipped prediction 0.3 away from V
        minibatch["state_value"], minibatch["value_target"] = predicted + 0.5 * side, predicted + side
        clipped = trainer.loss(minibatch)["loss_critic"].item()
        trainer.loss.value_clip_mode = "pessimistic"
        pessimistic = trainer.loss(minibatch)["loss_critic"].item()
    assert clipped == pytest.approx(0.7**2, rel=1e-4)  # skrl: mse(target, old + clip(V - old))
    assert pessimistic == pytest.approx(1.0, rel=1e-4)  # upstream: max(clipped, unclipped) error


def test_advantages_are_standardised_once_per_rollout(builds):
    trainer = builds(rollout_steps=16, normalize_values=False).trainer
    assert trainer.rollout_advantage_norm and not trainer.loss.normalize_advantage  # not again per minibatch
    batch = next(trainer._batches)
    raw = batch.clone()
    with torch.no_grad():
        trainer.compute_advantages(batch)
        trainer.rollout_advantage_norm = False
        trainer.compute_advantages(raw)
    gae = raw["advantage"]
    torch.testing.assert_close(batch["advantage"], (gae - gae.mean()) / (gae.std() + 1e-8))


def test_value_statistics_follow_skrls_scaler(builds):
    trainer = builds(rollout_steps=16, normalize_values=True).trainer
    batch = next(trainer._batches)
    with torch.no_grad():
        trainer.compute_advantages(batch)
    # skrl's value preprocessor is trained on the rollout's values, then on its returns (its count starts at 1)
    assert trainer.value_normalizer.count.item() == pytest.approx(1 + 2 * batch.numel())


def test_observation_statistics_update_during_the_first_epoch(builds):
    trainer = builds(rollout_steps=16, epochs=2, minibatches=2, normalize_observations=True).trainer
    normalizer, half = trainer.observation_normalizer, 16 * 4 // 2
    seen = []
    trainer.loss.register_forward_pre_hook(lambda module, args: seen.append(normalizer.count.item()))
    trainer.step()
    # skrl: each first-epoch minibatch enters the statistics just before it is read; none after the update
    assert seen == pytest.approx([1 + half, 1 + 2 * half, 1 + 2 * half, 1 + 2 * half])  # skrl's count starts at 1
    assert normalizer.count.item() == pytest.approx(1 + 2 * half)


# ---- state_dict round trip ----------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_state_dict_round_trip(builds, env_id):
    hp = dict(CARTPOLE, rollout_steps=32, epochs=2)
    trained = builds(env_id=env_id, seed=3, **hp).trainer
    trained.step()
    trained.step()
    buffer = io.BytesIO()
    torch.save(trained.state_dict(), buffer)
    expected_draws = torch.rand(4)

    fresh = builds(env_id=env_id, seed=3, **hp).trainer
    buffer.seek(0)
    fresh.load_state_dict(torch.load(buffer, weights_only=True))
    assert torch.equal(torch.rand(4), expected_draws)  # the RNG state came back too

    assert fresh.counters() == trained.counters() and fresh.env_steps == 2 * 32 * 4 and fresh.iterations == 2
    for name in ("actor", "critic"):
        for key, value in getattr(trained, name).state_dict().items():
            assert torch.equal(value, getattr(fresh, name).state_dict()[key]), (name, key)
    # observation statistics (inside the actor) and value statistics were trained, then restored
    assert trained.observation_normalizer.count.item() > 100
    assert torch.equal(trained.observation_normalizer.mean, fresh.observation_normalizer.mean)
    assert trained.value_normalizer.count.item() > 100
    assert torch.equal(trained.value_normalizer.var, fresh.value_normalizer.var)
    assert fresh.lr_schedule.lr == trained.lr_schedule.lr and fresh.lr_schedule.steps == trained.lr_schedule.steps == 4
    for a, b in zip(trained.optimizer.state.values(), fresh.optimizer.state.values()):
        assert all(torch.equal(a[k], b[k]) for k in ("exp_avg", "exp_avg_sq"))

    observations = np.random.default_rng(0).normal(size=(16, *trained.build.observation_space.shape)).astype(np.float32)
    np.testing.assert_array_equal(trained.act_deterministic(observations), fresh.act_deterministic(observations))
    fresh.step()  # training continues from the loaded state
    assert fresh.env_steps == 3 * 32 * 4


def test_a_checkpoint_of_the_functional_loss_still_loads(builds):
    """Before 2026-12 the loss was functional (``actor_network_params.*`` keys); such a run still resumes."""
    hp = dict(CARTPOLE, rollout_steps=32, epochs=2)
    trained = builds(seed=3, **hp).trainer
    trained.step()
    assert not trained.loss.functional
    old = ClipPPOLoss(trained.actor, trained.critic, clip_value=0.2)  # functional, as rlplug built it then
    old.make_value_estimator("GAE", gamma=0.99, lmbda=0.95)
    state = trained.state_dict()
    state["loss"] = old.state_dict()
    assert any(key.startswith("actor_network_params.") for key in state["loss"])
    fresh = builds(seed=3, **hp).trainer
    fresh.load_state_dict(state)
    for key, value in trained.loss.state_dict().items():
        assert torch.equal(value, fresh.loss.state_dict()[key]), key


# ---- continuous actions -------------------------------------------------------------------------


def test_pendulum_trains_a_few_iterations(builds):
    build = builds(env_id="Pendulum-v1", num_envs=4, rollout_steps=64, epochs=4, minibatches=4, gamma=0.9,
                   initial_log_std=-0.5, normalize_observations=True, normalize_values=True, value_clip=0.2,
                   bootstrap_truncated=True)  # fmt: skip
    trainer = build.trainer
    scale = [p for n, p in build.models["actor"].named_parameters() if "state_independent_scale" in n]
    assert len(scale) == 1 and torch.allclose(scale[0], torch.full((1,), -0.5))
    history = [trainer.step() for _ in range(4)]  # 4 x 256 steps: episodes of 200 end (truncate) on the way
    assert trainer.env_steps == 4 * 64 * 4
    assert all(math.isfinite(v) for m in history for v in m.values())
    assert "train/episode_return" in history[-1]
    assert not torch.allclose(scale[0], torch.full((1,), -0.5))  # the log std is learned
    actions = trainer.act_deterministic(np.random.default_rng(0).normal(size=(32, 3)).astype(np.float32) * 10)
    assert actions.shape == (32, 1) and actions.dtype == np.float32
    assert np.all(np.abs(actions) <= 2.0)
    assert len(trainer.evaluate(1)) == 1


def test_discrete_actions_are_indices(builds):
    trainer = builds(rollout_steps=8, epochs=1, minibatches=1).trainer
    actions = trainer.act_deterministic(np.zeros((5, 4), dtype=np.float32))
    assert actions.shape == (5,) and actions.dtype == np.int64 and set(actions.tolist()) <= {0, 1}
    assert trainer.evaluate(1)[0] > 0


# ---- building blocks ----------------------------------------------------------------------------


def test_env_clamps_box_actions_but_keeps_the_sample():
    env = make_env("Pendulum-v1", {}, 2, 0)
    try:
        seen = []
        for sub_env in env.base_env._env.envs:  # each sub-env clips (rlplug.envs.factory): its base env sees the bounds
            base = sub_env.unwrapped
            base.step = lambda action, step=base.step: (seen.append(np.array(action, copy=True)), step(action))[1]
        td = env.reset()
        td["action"] = torch.tensor([[5.0], [-0.5]])
        out = env.step(td)
        np.testing.assert_allclose(np.stack(seen), [[2.0], [-0.5]])
        assert torch.equal(out["action"], torch.tensor([[5.0], [-0.5]]))
    finally:
        env.close()


def test_env_hands_back_the_true_last_observation():
    env = make_env("CartPole-v1", {}, 2, 0)
    try:
        rollout = env.rollout(200, break_when_any_done=False)  # random actions: episodes end early
        done = rollout["next", "done"].squeeze(-1)
        env_index, t = (int(i) for i in done.nonzero()[0])
        last, following = rollout["next", "observation"][env_index, t], rollout["observation"][env_index, t + 1]
        assert abs(last[2].item()) > 0.2 or abs(last[0].item()) > 2.4  # pole fell or cart left: a terminal state
        assert not torch.equal(last, following)  # the next root is the reset observation
        assert following.abs().max().item() <= 0.05
    finally:
        env.close()


def test_running_normalizer_matches_batch_statistics():
    normalizer = RunningNormalizer(3)
    chunks = [torch.randn(50, 3) * 4 + 2, torch.randn(70, 3) * 4 + 2, torch.randn(10, 3) * 4 + 2]
    for chunk in chunks:
        normalizer.update(chunk)
    data = torch.cat(chunks).double()
    assert torch.allclose(normalizer.mean.double(), data.mean(0), atol=1e-4)
    assert torch.allclose(normalizer.var.double(), data.var(0, correction=0), rtol=1e-3)
    x = torch.randn(5, 3)
    assert torch.allclose(normalizer.denormalize(normalizer(x)), x, atol=1e-5)
    assert normalizer(torch.full((1, 3), 1e6)).max().item() == normalizer.clip


def test_skrl_convention_is_skrls_running_standard_scaler():
    from skrl.resources.preprocessors.torch import RunningStandardScaler

    scaler, normalizer = RunningStandardScaler(4, device="cpu"), RunningNormalizer(4, convention="skrl")
    for chunk in (torch.randn(128, 4) * 0.07, torch.randn(128, 4) * 0.07 + 0.01, torch.randn(256, 4) * 0.5):
        scaler(chunk, train=True)
        normalizer.update(chunk)
        torch.testing.assert_close(normalizer.var.double(), scaler.running_variance, rtol=1e-5, atol=1e-7)
    x = torch.randn(64, 4) * 0.3
    torch.testing.assert_close(normalizer(x), scaler(x), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(normalizer.denormalize(x), scaler(x, inverse=True), rtol=1e-5, atol=1e-5)
    # skrl's statistics start from one sample of variance 1 (it still shows after 128 samples of variance ~0.005)
    assert RunningNormalizer(4, convention="skrl").count.item() == 1.0
    assert RunningNormalizer(4).count.item() == pytest.approx(1e-4)


def test_ppo_standardises_with_skrls_scaler(builds):
    trainer = builds(normalize_observations=True, normalize_values=True).trainer
    assert trainer.observation_normalizer.convention == "skrl" and trainer.value_normalizer.convention == "skrl"


def test_learning_rate_schedules():
    def optimizer():
        return torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=1e-3)

    linear = LearningRateSchedule(optimizer(), "linear", total_steps=4)
    lrs = []
    for _ in range(5):
        linear.step()
        lrs.append(linear.lr)
    assert lrs == pytest.approx([7.5e-4, 5e-4, 2.5e-4, 0.0, 0.0])

    adaptive = LearningRateSchedule(optimizer(), "kl_adaptive", kl_target=0.01)
    adaptive.step(0.03)  # > 2 x target: divide by 1.5
    assert adaptive.lr == pytest.approx(1e-3 / 1.5)
    adaptive.step(0.01)  # within [target / 2, 2 x target]: unchanged
    assert adaptive.lr == pytest.approx(1e-3 / 1.5)
    adaptive.step(0.001)  # < target / 2: multiply by 1.5
    assert adaptive.lr == pytest.approx(1e-3)
    for _ in range(50):
        adaptive.step(0.0)
    assert adaptive.lr == pytest.approx(1e-2)  # clamped to max_lr

    constant = LearningRateSchedule(optimizer(), "constant")
    constant.step(1.0)
    assert constant.lr == 1e-3


def test_deterministic_actor_and_q_value_operator():
    space = gym.spaces.Box(low=np.array([-2.0, 0.0], dtype=np.float32), high=np.array([2.0, 1.0], dtype=np.float32))
    actor = deterministic_actor(mlp(3, [16], 2), space)
    td = TensorDict({"observation": torch.randn(64, 3) * 100}, batch_size=[64])
    action = actor(td)["action"]
    assert action.shape == (64, 2)
    assert (action[:, 0].abs() <= 2.0).all() and (action[:, 1] >= 0.0).all() and (action[:, 1] <= 1.0).all()
    q_value = q_value_operator(mlp(3 + 2, [16], 1))(td)["state_action_value"]
    assert q_value.shape == (64, 1)


def test_conforms_to_the_contract():
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence."""
    from rlplug.testing import check_cell

    check_cell("ppo-cartpole", "torchrl", ["num_envs=2", "rollout_steps=32", "hidden_sizes=[16, 16]"], steps=128)
