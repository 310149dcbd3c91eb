"""dqn/torchrl: DQNLoss + rlplug's off-policy loop trains, explores on schedule, moves the target
parameters as the updater says, computes (double) DQN's target, and round-trips its state."""

from __future__ import annotations

import functools
import io
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from rlplug.families import LinearSchedule
from rlplug_dqn.torchrl_backend import describe_dqn_loss  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from torchrl.envs import ExplorationType, set_exploration_type  # noqa: E402
from torchrl.objectives import DQNLoss  # noqa: E402

SMALL = dict(batch_size=32, hidden_sizes=[32, 32], learning_starts=200, log_every=400, buffer_size=5_000)
PROBE = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32) * 0.5


@pytest.fixture
def builds(builds):
    return functools.partial(builds, "rlplug_dqn", "torchrl", "CartPole-v1")


def _online(loss):
    return [p.detach().clone() for p in loss.value_network_params.values(True, True)]


def _target(loss):
    return [p.detach().clone() for p in loss.target_value_network_params.values(True, True)]


def _equal(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def _q_values(build, observations=PROBE):
    with torch.no_grad():
        td = TensorDict({"observation": torch.as_tensor(observations)}, batch_size=[len(observations)])
        return build.models["q_network"](td)["action_value"].clone()


# ---- training -----------------------------------------------------------------------------------


def test_trains_a_few_hundred_steps(builds):
    build = builds(num_envs=4, steps=1_000, seed=0, **SMALL)
    assert isinstance(build.loss, DQNLoss)
    trainer = build.trainer
    q_before = _q_values(build)
    history = []
    trainer.train(1_000, callbacks=[lambda t, m: history.append(m)])
    assert trainer.env_steps == 1_000 and trainer.gradient_steps == 800  # utd 1 after 200 warm-up transitions
    trained = [m for m in history if "loss/loss" in m]
    assert trained and all(math.isfinite(m["loss/loss"]) for m in trained)
    assert not torch.allclose(q_before, _q_values(build))
    assert _q_values(build).mean() > q_before.mean() + 1.0  # CartPole's +1 rewards pile up in Q
    assert all(math.isfinite(r) for r in trainer.evaluate(2))


def _filled(builds, **kwargs):
    """A build whose buffer holds 400 transitions and that has taken no gradient step yet."""
    build = builds(num_envs=2, steps=10_000, seed=0, **{**SMALL, "learning_starts": 10_000, **kwargs})
    build.trainer.step()
    assert build.trainer.gradient_steps == 0 and len(build.memory) == 400
    return build


@pytest.mark.parametrize("period", [1, 3])
def test_hard_target_copies_every_period_and_stays_put_in_between(builds, period):
    build = _filled(builds, target_update="hard", target_update_period=period)
    trainer, loss = build.trainer, build.loss
    assert _equal(_target(loss), _online(loss))
    for step in range(1, 3 * period + 2):
        target_before = _target(loss)
        trainer.gradient_step()
        if step % period == 0:
            assert _equal(_target(loss), _online(loss)), step
        else:
            assert _equal(_target(loss), target_before) and not _equal(_target(loss), _online(loss)), step
    assert build.target_updater.steps == 3 * period + 1


def test_soft_target_moves_by_tau(builds):
    build = _filled(builds, target_update="soft", tau=0.25, target_update_period=1)
    for _ in range(3):
        target_before = _target(build.loss)
        build.trainer.gradient_step()
        expected = [0.75 * t + 0.25 * o for t, o in zip(target_before, _online(build.loss))]
        assert all(torch.allclose(t, e, atol=1e-6) for t, e in zip(_target(build.loss), expected))


@pytest.mark.parametrize("double_dqn", [False, True])
def test_loss_is_dqns_td_error_against_the_target_network(builds, double_dqn):
    build = _filled(builds, double_dqn=double_dqn, gamma=0.9, td_loss="huber", target_update_period=1000)
    for _ in range(3):  # online and target parameters now differ
        build.trainer.gradient_step()
    sample = build.memory.sample()
    loss, q_network = build.loss, build.models["q_network"]
    with torch.no_grad():
        q = q_network(sample.select("observation").clone())["action_value"]
        next_observations = TensorDict({"observation": sample["next", "observation"]}, sample.batch_size)
        next_online = q_network(next_observations.clone())["action_value"]
        with loss.target_value_network_params.to_module(loss.value_network):
            next_target = loss.value_network(next_observations.clone())["action_value"]
        next_action = (next_online if double_dqn else next_target).argmax(-1, keepdim=True)
        bootstrap = next_target.gather(-1, next_action).squeeze(-1)
        target = sample["next", "reward"].squeeze(-1) + 0.9 * (~sample["next", "terminated"].squeeze(-1)) * bootstrap
        expected = torch.nn.functional.smooth_l1_loss(q.gather(-1, sample["action"].unsqueeze(-1)).squeeze(-1), target)
        assert torch.allclose(loss(sample)["loss"], expected, atol=1e-6)


def test_epsilon_follows_the_linear_schedule(builds):
    build = builds(num_envs=4, steps=2_000, seed=0, epsilon_start=1.0, epsilon_end=0.1, epsilon_decay_steps=1_000,
                   **{**SMALL, "utd_ratio": 0.05})  # fmt: skip
    trainer = build.trainer
    schedule = LinearSchedule(1.0, 0.1, 1_000)
    assert trainer.step()["train/epsilon"] == pytest.approx(schedule(400))
    trainer.train(2_000)
    assert float(trainer.egreedy.eps) == pytest.approx(0.1)

    # exploration draws a uniformly random action with probability epsilon; evaluation is greedy
    observations = TensorDict({"observation": torch.as_tensor(PROBE).repeat(100, 1)}, batch_size=[6400])
    with torch.no_grad():
        greedy = build.models["q_network"](observations.clone())["action"]
        for frames, expected in ((0, 0.5), (500, 0.275), (1_000, 0.05)):  # epsilon 1.0, 0.55, 0.1
            trainer.egreedy.frames = frames  # epsilon is the schedule's at the transitions counted so far
            with set_exploration_type(ExplorationType.RANDOM):
                actions = trainer.exploration_policy(observations.clone())["action"]
            assert actions.dtype == torch.int64 and actions.shape == (6400,)
            assert (actions != greedy).float().mean().item() == pytest.approx(expected, abs=0.03)
    assert np.array_equal(trainer.act_deterministic(observations["observation"].numpy()), greedy.numpy())


def test_epsilon_moves_at_every_step_as_on_skrl(builds):
    build = builds(num_envs=2, steps=64, seed=0, epsilon_start=1.0, epsilon_end=0.0, epsilon_decay_steps=64,
                   **{**SMALL, "learning_starts": 0, "train_every": 8, "log_every": 32})  # fmt: skip
    trainer, seen = build.trainer, []
    trainer.egreedy.register_forward_hook(lambda module, args, out: seen.append(float(module.eps)))
    trainer.train(32)
    # skrl's DQN: epsilon(t) at the t-th transition (2 per vector step); not held for a batch of 8 steps
    assert seen == pytest.approx([1.0 - 2 * t / 64 for t in range(16)])


def test_linear_learning_rate_schedule_reaches_zero_at_the_budget(builds):
    build = builds(num_envs=4, steps=1_000, seed=0, lr_schedule="linear", learning_rate=1e-3,
                   **{**SMALL, "utd_ratio": 0.25})  # fmt: skip
    trainer = build.trainer
    assert trainer.step()["train/lr"] == pytest.approx(1e-3 * (1 - 50 / 200))  # 200 gradient steps in the budget
    trainer.train(1_000)
    assert trainer.gradient_steps == 200 and trainer.optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


def test_td_lambda_samples_trajectory_slices(builds):
    build = builds(num_envs=1, steps=600, seed=0, value_estimator="td_lambda", td_lambda=0.9, trajectory_slice=8,
                   **{**SMALL, "learning_starts": 300, "log_every": 300})  # fmt: skip
    build.trainer.train(600)
    assert build.trainer.gradient_steps == 300
    sample = build.memory.sample()
    index, done = sample["index"], sample["next", "done"].squeeze(-1)
    assert torch.all(index[1:][~done[:-1]] == index[:-1][~done[:-1]] + 1)  # runs of consecutive steps...
    assert done[-1] and (index.numel() - done.sum()) / done.sum() > 3  # ... cut at slice ends (8 at most)
    assert math.isfinite(build.loss(sample)["loss"].item())


def test_multi_step_estimators_need_one_env():
    from types import SimpleNamespace

    from rlplug_dqn import DQN

    hp = {**DQN.defaults(), "value_estimator": "td1"}
    with pytest.raises(ValueError, match="needs num_envs = 1"):
        DQN.backends["torchrl"].settings(hp, SimpleNamespace(num_envs=4, steps=1000))


def test_describe_dqn_loss():
    facts = describe_dqn_loss()
    assert {"action_value", "priority", "terminated"} <= set(facts["set_keys"])


# ---- checkpoints --------------------------------------------------------------------------------


def test_state_dict_round_trip(builds):
    kwargs = dict(num_envs=4, steps=1_200, seed=0, target_update="hard", target_update_period=7, double_dqn=True,
                  lr_schedule="linear", **{**SMALL, "utd_ratio": 0.25})  # fmt: skip
    build = builds(**kwargs)
    build.trainer.train(1_200)
    buffer = io.BytesIO()
    torch.save(build.trainer.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)

    fresh = builds(**{**kwargs, "seed": 1})
    fresh.trainer.load_state_dict(state)
    observations = np.random.default_rng(3).normal(size=(256, 4)).astype(np.float32)
    assert np.array_equal(fresh.trainer.act_deterministic(observations), build.trainer.act_deterministic(observations))
    assert _equal(_target(fresh.loss), _target(build.loss)) and _equal(_online(fresh.loss), _online(build.loss))
    assert fresh.target_updater.steps == build.target_updater.steps == 250
    assert fresh.target_updater.updater.counter == build.target_updater.updater.counter
    assert float(fresh.trainer.egreedy.eps) == float(build.trainer.egreedy.eps)
    steps_taken = [b.trainer.optimizer.state_dict()["state"][0]["step"] for b in (build, fresh)]
    assert steps_taken[0] == steps_taken[1]
    assert fresh.trainer.env_steps == 1_200 and fresh.trainer.gradient_steps == 250
    # the collection's frame count is restored, so it is past the random warm-up as the original is
    assert fresh.trainer.collection.frames == build.trainer.collection.frames == 1_200
    assert fresh.trainer.collection.init_random_frames == build.trainer.collection.init_random_frames
    assert fresh.trainer.lr_scheduler.state_dict() == build.trainer.lr_scheduler.state_dict()


def test_conforms_to_the_contract():
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence."""
    from rlplug.testing import check_cell

    check_cell("dqn-cartpole", "torchrl", ["learning_starts=64", "hidden_sizes=[16, 16]", "batch_size=16", "log_every=64"], steps=256)
