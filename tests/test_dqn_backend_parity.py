"""dqn on both backends: the same weights and the same sampled batches give the same gradient steps (plain
and dueling Q networks, one-step and n-step returns).

The Huber TD loss against the target network, the gradient-norm clip, Adam, the linear learning-rate decay
per gradient step and the hard target copy every ``target_update_period`` gradient steps, on transitions
TorchRL's collection stored (time-limit cuts included: they bootstrap, terminations do not).
"""

from __future__ import annotations

import pytest
from conftest import share_replay

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")
pytest.importorskip("skrl")

HP = dict(
    learning_rate=2.3e-3, lr_schedule="linear", batch_size=32, learning_starts=50_000, gamma=0.99, train_every=64,
    utd_ratio=0.5, target_update="hard", target_update_period=16, td_loss="huber", max_grad_norm=10.0,
    hidden_sizes=[32, 32], log_every=256, buffer_size=1_000,
)  # fmt: skip


@pytest.mark.parametrize("dueling, n_step", [(False, 1), (True, 1), (False, 3)])
def test_gradient_steps_are_the_same_on_skrl_and_torchrl(builds, dueling, n_step):
    hp = {**HP, "dueling": dueling, "n_step": n_step}
    skrl = builds("rlplug_dqn", "skrl", "CartPole-v1", num_envs=1, steps=100_000, seed=0, **hp)
    torchrl = builds("rlplug_dqn", "torchrl", "CartPole-v1", num_envs=1, steps=100_000, seed=0, **hp)
    agent, trainer = skrl.trainer.agent, torchrl.trainer
    stored = share_replay(torchrl, agent)  # 256 uniformly random transitions, in both replays
    rows = len(stored)
    memory = agent.memory
    assert stored["next", "done"].any()

    online = (list(agent.q_network.parameters()), list(torchrl.loss.value_network_params.values(True, True)))
    targets = (list(agent.target_q_network.parameters()), list(torchrl.loss.target_value_network_params.values(True, True)))
    with torch.no_grad():  # the same start (the seeds give it already; this keeps the test about the updates)
        torch._foreach_copy_(online[1], online[0])
        torch._foreach_copy_(targets[1], targets[0])

    generator = torch.Generator().manual_seed(1)
    indexes = iter([torch.randint(0, rows, (HP["batch_size"],), generator=generator) for _ in range(40)])
    current = {}
    torchrl.memory.sample = lambda *args, **kwargs: torchrl.memory._storage[current["index"]].set("index", current["index"])

    def sample(names, batch_size, **kwargs):
        memory.sampling_indexes = current["index"]  # where n-step returns read ahead from, as skrl's sample sets it
        return memory.sample_by_index(names=names, indexes=current["index"])

    memory.sample = sample
    if n_step > 1:  # the batches both backends learn from are n-step ones, cut at episode ends
        current["index"] = torch.arange(rows - 8)
        assert set(trainer.sample_batch()["steps_to_next_obs"].unique().tolist()) == {1, 2, 3}
        assert agent.sample_batch()["discounts"].unique().tolist() == pytest.approx([0.99**3, 0.99**2, 0.99])
    for step in range(40):  # two and a half target periods
        current["index"] = next(indexes)
        skrl_terms, torchrl_terms = agent.gradient_step(timestep=0, timesteps=1), trainer.gradient_step()
        assert torchrl_terms["loss"].item() == pytest.approx(skrl_terms["loss_q"].item(), rel=1e-5, abs=1e-7), step
    for skrl_tensors, torchrl_tensors in (online, targets):
        for a, b in zip(skrl_tensors, torchrl_tensors, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    lr = agent.optimizer.param_groups[0]["lr"]
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(lr) and 0 < lr < HP["learning_rate"]
    assert not all(torch.equal(t, o) for t, o in zip(targets[0], online[0]))  # the target lags between copies


@pytest.mark.parametrize("n_step", [1, 3])
def test_runs_on_aligned_random_streams_are_the_same(builds, n_step):
    """The whole loop (epsilon-greedy per transition, replay, cadence, updates, target copies) on both backends,
    given the same random numbers: the env reset with one seed, torch's generator seeded once the cells are
    built, no uniformly random warm-up (skrl draws it from numpy, TorchRL from torch), and TorchRL's extra
    reset of a one-env vector env after each episode end left out (it only draws the next start state again)."""
    hp = {**HP, "learning_starts": 0, "epsilon_start": 0.9, "epsilon_decay_steps": 400, "train_every": 32,
          "target_update_period": 8, "log_every": 128, "n_step": n_step}
    runs = {}
    for backend in ("skrl", "torchrl"):
        build = builds("rlplug_dqn", backend, "CartPole-v1", num_envs=1, steps=512, seed=0, **hp)
        trainer, actions = build.trainer, []
        if backend == "skrl":
            observations, _ = trainer.env._env.reset(seed=123)
            trainer._observations = torch.as_tensor(observations)
            act = trainer.agent.act

            def recorded_act(*args, **kwargs):
                chosen = act(*args, **kwargs)
                actions.append(int(chosen[0].reshape(-1)[0]))
                return chosen

            trainer.agent.act = recorded_act
            online = list(trainer.agent.q_network.parameters())
        else:
            vector_env = trainer.collection.vector_env
            observations, _ = vector_env.reset(seed=123)
            trainer.collection._observations[0].copy_(torch.as_tensor(observations))
            step, last = vector_env.step, {}

            def recorded_step(action):
                actions.append(int(action.reshape(-1)[0]))
                last["step"] = step(action)
                return last["step"]

            vector_env.step = recorded_step
            vector_env.reset = lambda **kwargs: (last["step"][0], {})  # on from the autoreset observation, as skrl
            online = list(build.loss.value_network_params.values(True, True))
        torch.manual_seed(7)
        while trainer.env_steps < 512:
            trainer.step()
        runs[backend] = (actions, [p.detach().clone() for p in online], trainer.gradient_steps)
    (skrl_actions, skrl_weights, skrl_steps), (torchrl_actions, torchrl_weights, torchrl_steps) = runs["skrl"], runs["torchrl"]
    assert skrl_steps == torchrl_steps == 256 and len(skrl_actions) == len(torchrl_actions) == 512
    assert skrl_actions == torchrl_actions
    for a, b in zip(skrl_weights, torchrl_weights, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
