"""dqn/skrl: the loss-delegating agent matches upstream skrl DQN / DDQN, trains, explores on schedule,
moves its target network as the updater says, and round-trips its state."""

from __future__ import annotations

import copy
import functools
import io
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")

import gymnasium as gym  # noqa: E402
from rlplug.backends.common.nets import DuelingMlp
from rlplug.backends.common.terms import TermMeans
from rlplug.backends.skrl import ModuleTargetUpdate, configure_threads, q_model, seed_skrl
from rlplug.families import LinearSchedule
from rlplug_dqn import DQN as DQN_SPEC  # noqa: E402
from rlplug_dqn.skrl_backend import DQNLoss, LossDelegatingDQN  # noqa: E402
from skrl.agents.torch.ddqn import DDQN, DDQN_CFG  # noqa: E402
from skrl.agents.torch.dqn import DQN, DQN_CFG  # noqa: E402
from skrl.memories.torch import RandomMemory  # noqa: E402

SMALL = dict(batch_size=32, hidden_sizes=[32, 32], learning_starts=200, log_every=400, buffer_size=5_000)


@pytest.fixture
def builds(builds):
    return functools.partial(builds, "rlplug_dqn", "skrl", "CartPole-v1")


def _parameters(module):
    return [p.detach().clone() for p in module.parameters()]


def _equal(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


PROBE = torch.as_tensor(np.random.default_rng(0).normal(size=(64, 4)) * 0.5, dtype=torch.float32)


# ---- parity with upstream skrl DQN / DDQN -------------------------------------------------------


def _filled_memory(space_obs, transitions=200):
    """A replay memory holding the same random CartPole-shaped transitions every time it is built."""
    generator = torch.Generator().manual_seed(1)
    memory = RandomMemory(memory_size=transitions, num_envs=1, device="cpu", replacement=True)
    data = {
        "observations": torch.randn(transitions, 4, generator=generator),
        "next_observations": torch.randn(transitions, 4, generator=generator),
        "actions": torch.randint(2, (transitions, 1), generator=generator),
        "rewards": torch.rand(transitions, 1, generator=generator),
        "terminated": torch.rand(transitions, 1, generator=generator) < 0.1,
    }
    return memory, data


def _fill(agent, data):
    agent.init()
    for i in range(len(data["rewards"])):
        row = {name: value[i : i + 1] for name, value in data.items()}
        agent.memory.add_samples(**row, states=None, next_states=None)


@pytest.mark.parametrize(
    "double_dqn, kind, tau, period",
    [(False, "hard", 1.0, 2), (True, "hard", 1.0, 3), (False, "soft", 0.1, 1), (True, "soft", 0.05, 2)],
)
def test_gradient_steps_match_upstream_skrl(double_dqn, kind, tau, period):
    env = gym.make("CartPole-v1")
    configure_threads()
    seed_skrl(0)
    online = q_model(env.observation_space, env.action_space, "cpu", [32, 32], "relu")
    target = q_model(env.observation_space, env.action_space, "cpu", [32, 32], "relu")
    models = {"q_network": online, "target_q_network": target}
    twins = copy.deepcopy(models)
    steps, common = 6, dict(observation_space=env.observation_space, action_space=env.action_space, device="cpu")
    cfg = dict(
        gradient_steps=steps, batch_size=16, discount_factor=0.97, learning_rate=3e-3, polyak=tau,
        target_update_interval=period, experiment={"write_interval": 0, "checkpoint_interval": 0},
        learning_rate_scheduler=torch.optim.lr_scheduler.LinearLR,
        learning_rate_scheduler_kwargs={"start_factor": 1.0, "end_factor": 0.1, "total_iters": 4},
    )  # fmt: skip

    upstream_class, upstream_cfg = (DDQN, DDQN_CFG) if double_dqn else (DQN, DQN_CFG)
    memory, data = _filled_memory(env.observation_space)
    upstream = upstream_class(models=models, memory=memory, cfg=upstream_cfg(**cfg), **common)
    _fill(upstream, data)

    memory, data = _filled_memory(env.observation_space)
    updater = ModuleTargetUpdate([(twins["target_q_network"], twins["q_network"])], kind, tau, period)
    ours = LossDelegatingDQN(
        models=twins, memory=memory, cfg=DQN_CFG(**cfg), **common, loss=DQNLoss(0.97, double_dqn),
        terms=("loss_q",), reported=("q_taken", "q_target"), target_updater=updater, grad_norm_clip=0.0,
    )  # fmt: skip
    _fill(ours, data)

    torch.manual_seed(123)
    upstream.update(timestep=0, timesteps=1)
    torch.manual_seed(123)
    terms = TermMeans()
    for _ in range(steps):  # what ours.update(...) runs, with the terms each gradient step returns
        terms.add(ours.gradient_step(timestep=0, timesteps=1))

    for name in ("q_network", "target_q_network"):
        assert _equal(_parameters(models[name]), _parameters(twins[name])), name
    assert updater.steps == steps
    losses = upstream.tracking_data["Loss / Q-network loss"]
    assert math.isclose(terms.pop()["loss_q"], sum(losses) / len(losses), rel_tol=1e-6)


def test_huber_td_loss_is_smooth_l1():
    env = gym.make("CartPole-v1")
    configure_threads()
    seed_skrl(0)
    online = q_model(env.observation_space, env.action_space, "cpu", [8], "relu")
    agent = type("Agent", (), {"q_network": online, "target_q_network": copy.deepcopy(online)})()
    batch = {
        "observations": torch.randn(10, 4), "next_observations": torch.randn(10, 4),
        "states": None, "next_states": None, "actions": torch.randint(2, (10, 1)),
        "rewards": torch.randn(10, 1) * 5, "terminated": torch.zeros(10, 1, dtype=torch.bool),
    }  # fmt: skip
    mse, huber = DQNLoss(0.9, td_loss="mse")(agent, batch, "q"), DQNLoss(0.9, td_loss="huber")(agent, batch, "q")
    q = online.compute({"observations": batch["observations"]})[0].gather(1, batch["actions"])
    next_q = online.compute({"observations": batch["next_observations"]})[0]
    target = batch["rewards"] + 0.9 * next_q.max(1, keepdim=True)[0]
    assert torch.allclose(mse["loss_q"], torch.nn.functional.mse_loss(q, target))
    assert torch.allclose(huber["loss_q"], torch.nn.functional.smooth_l1_loss(q, target))


# ---- training -----------------------------------------------------------------------------------


def test_trains_a_few_hundred_steps(builds):
    build = builds(num_envs=4, steps=1_000, seed=0, **SMALL)
    trainer, agent = build.trainer, build.trainer.agent
    with torch.no_grad():
        q_before = agent.q_network.compute({"observations": PROBE})[0].clone()
    history = []
    trainer.train(1_000, callbacks=[lambda t, m: history.append(m)])
    assert trainer.env_steps == 1_000 and trainer.gradient_steps == 800  # utd 1 after 200 warm-up transitions
    trained = [m for m in history if "loss/loss_q" in m]
    assert trained and all(math.isfinite(m["loss/loss_q"]) and math.isfinite(m["loss/q_taken"]) for m in trained)
    assert trained[-1]["loss/q_taken"] > trained[0]["loss/q_taken"]  # CartPole's +1 rewards pile up in Q
    with torch.no_grad():
        q_after = agent.q_network.compute({"observations": PROBE})[0]
    assert not torch.allclose(q_before, q_after)
    assert all(math.isfinite(r) for r in trainer.evaluate(2))


def test_dueling_q_is_the_value_plus_the_centred_advantage(builds):
    build = builds(num_envs=1, steps=1_000, seed=0, dueling=True, **SMALL)
    q_network = build.trainer.agent.q_network
    assert isinstance(q_network.net, DuelingMlp) and isinstance(build.trainer.agent.target_q_network.net, DuelingMlp)
    with torch.no_grad():
        q = q_network.compute({"observations": PROBE})[0]
        value = q_network.net.value(q_network.net.trunk(PROBE))
    torch.testing.assert_close(q.mean(-1, keepdim=True), value)  # the advantages average to zero
    assert not torch.allclose(q[:, :1], q[:, 1:])


def test_dueling_needs_a_hidden_layer():
    from types import SimpleNamespace

    hp = {**DQN_SPEC.defaults(), "dueling": True, "hidden_sizes": []}
    with pytest.raises(ValueError, match="dueling = true needs at least one hidden layer"):
        DQN_SPEC.backends["skrl"].settings(hp, SimpleNamespace(num_envs=1, steps=1000))


def test_n_step_returns_refuse_a_multi_step_estimator(capsys):
    from rlplug.cli import main

    assert main(["show", "dqn-cartpole", "--backend", "torchrl", "--set", "n_step=3", "--set", "value_estimator=td1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "break the rule value_estimator == 'td0' with n_step > 1" in err


def test_n_step_sums_stop_at_time_limit_cuts():
    """MountainCar's random walk never terminates and is cut at 200 steps: the memory keeps those cuts, and a
    window that reaches one stops there (it bootstraps from the cut state, one discount per step summed)."""
    from conftest import make_build
    from rlplug.backends.skrl import nstep_transitions

    build = make_build("rlplug_dqn", "skrl", "MountainCar-v0", num_envs=2, steps=1_000, seed=0, n_step=3,
                       **{**SMALL, "learning_starts": 1_000})  # fmt: skip
    try:
        build.trainer.step(), build.trainer.step()  # 400 steps of each env: cut after steps 200 and 400
        memory = build.trainer.agent.memory
        truncated = memory.tensors["truncated"][: memory.memory_index, :, 0]
        assert not memory.tensors["terminated"][: memory.memory_index].any()
        assert truncated.nonzero().tolist() == [[199, 0], [199, 1], [399, 0], [399, 1]]
        memory.sampling_indexes = torch.tensor([197 * 2, 198 * 2 + 1, 199 * 2, 100 * 2])  # rows 197-199 and 100
        batch = {name: memory.tensors_view[name][memory.sampling_indexes] for name in ("rewards", "next_observations", "terminated")}
        out = nstep_transitions(memory, batch, 3, 0.99)
        torch.testing.assert_close(out["discounts"][:, 0], torch.tensor([0.99**3, 0.99**2, 0.99, 0.99**3]))
        torch.testing.assert_close(out["rewards"][:, 0], torch.tensor([-1 - 0.99 - 0.99**2, -1 - 0.99, -1.0, -1 - 0.99 - 0.99**2]))
        cut_state = memory.tensors["next_observations"][199]  # the true final observations, per env
        torch.testing.assert_close(out["next_observations"][:3], torch.stack([cut_state[0], cut_state[1], cut_state[0]]))
    finally:
        build.trainer.close()


@pytest.mark.parametrize("period", [1, 3])
def test_hard_target_copies_every_period_and_stays_put_in_between(builds, period):
    build = builds(num_envs=2, steps=10_000, seed=0, target_update="hard", target_update_period=period,
                   **{**SMALL, "learning_starts": 10_000})  # fmt: skip
    trainer, agent = build.trainer, build.trainer.agent
    trainer.step()  # fills the memory, no gradient step yet
    assert trainer.gradient_steps == 0
    assert _equal(_parameters(agent.target_q_network), _parameters(agent.q_network))
    for step in range(1, 3 * period + 2):
        target_before = _parameters(agent.target_q_network)
        agent.gradient_step(timestep=0, timesteps=1)
        online, target = _parameters(agent.q_network), _parameters(agent.target_q_network)
        if step % period == 0:
            assert _equal(target, online), step
        else:
            assert _equal(target, target_before) and not _equal(target, online), step
    assert build.target_updater.steps == 3 * period + 1


def test_soft_target_moves_by_tau(builds):
    build = builds(num_envs=2, steps=10_000, seed=0, target_update="soft", tau=0.25, target_update_period=1,
                   **{**SMALL, "learning_starts": 10_000})  # fmt: skip
    trainer, agent = build.trainer, build.trainer.agent
    trainer.step()
    for _ in range(3):
        target_before = _parameters(agent.target_q_network)
        agent.gradient_step(timestep=0, timesteps=1)
        expected = [0.75 * t + 0.25 * o for t, o in zip(target_before, _parameters(agent.q_network))]
        assert all(torch.allclose(t, e, atol=1e-7) for t, e in zip(_parameters(agent.target_q_network), expected))


def test_epsilon_follows_the_linear_schedule(builds):
    build = builds(num_envs=4, steps=2_000, seed=0, epsilon_start=1.0, epsilon_end=0.1, epsilon_decay_steps=1_000,
                   **{**SMALL, "utd_ratio": 0.05})  # fmt: skip
    trainer, agent = build.trainer, build.trainer.agent
    schedule = agent.cfg.exploration_scheduler
    assert schedule == LinearSchedule(1.0, 0.1, 250)  # 1000 transitions = 250 steps of 4 envs
    metrics = trainer.step()  # 400 transitions: the last action was chosen at vector step 99
    assert metrics["train/epsilon"] == pytest.approx(schedule(99))
    trainer.train(2_000)
    assert trainer.step()["train/epsilon"] == pytest.approx(0.1)

    # the share of non-greedy actions is epsilon * (n - 1) / n, drawn independently per env
    observations = PROBE.repeat(100, 1)
    greedy = agent.q_network.compute({"observations": observations})[0].argmax(1, keepdim=True)
    with torch.no_grad():
        for timestep, expected in ((0, 0.5), (125, 0.275), (10_000, 0.05)):
            actions, _ = agent.act(observations, None, timestep=timestep, timesteps=1)
            assert actions.dtype == torch.int64 and actions.shape == (6400, 1)
            assert (actions != greedy).float().mean().item() == pytest.approx(expected, abs=0.03)
    assert np.array_equal(trainer.act_deterministic(observations.numpy()), greedy.squeeze(1).numpy())


def test_linear_learning_rate_schedule_reaches_zero_at_the_budget(builds):
    build = builds(num_envs=4, steps=1_000, seed=0, lr_schedule="linear", learning_rate=1e-3,
                   **{**SMALL, "utd_ratio": 0.25})  # fmt: skip
    trainer = build.trainer
    assert trainer.step()["train/lr"] == pytest.approx(1e-3 * (1 - 50 / 200))  # 200 gradient steps in the budget
    trainer.train(1_000)
    assert trainer.gradient_steps == 200
    assert trainer.agent.optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


def test_skrl_refuses_multi_step_estimators():
    from types import SimpleNamespace

    hp = {**DQN_SPEC.defaults(), "value_estimator": "td_lambda"}
    with pytest.raises(ValueError, match="only available on the torchrl backend"):
        DQN_SPEC.backends["skrl"].settings(hp, SimpleNamespace(num_envs=1, steps=1000))


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
    old, new = build.trainer.agent, fresh.trainer.agent
    assert _equal(_parameters(old.target_q_network), _parameters(new.target_q_network))
    assert fresh.target_updater.steps == build.target_updater.steps == 250
    assert new.optimizer.state_dict()["state"][0]["step"] == old.optimizer.state_dict()["state"][0]["step"]
    assert fresh.trainer.env_steps == 1_200 and fresh.trainer.gradient_steps == 250
    assert new.epsilon == old.epsilon
    assert new.scheduler.state_dict() == old.scheduler.state_dict()


def test_conforms_to_the_contract():
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence."""
    from rlplug.testing import check_cell

    check_cell("dqn-cartpole", "skrl", ["learning_starts=64", "hidden_sizes=[16, 16]", "batch_size=16", "log_every=64"], steps=256)
