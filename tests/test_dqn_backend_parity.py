"""dqn on both backends: the same weights and the same sampled batches give the same gradient steps.

The Huber TD loss against the target network, the gradient-norm clip, Adam, the linear learning-rate decay
per gradient step and the hard target copy every ``target_update_period`` gradient steps, on transitions
TorchRL's collection stored (time-limit cuts included: they bootstrap, terminations do not).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")
pytest.importorskip("skrl")

HP = dict(
    learning_rate=2.3e-3, lr_schedule="linear", batch_size=32, learning_starts=50_000, gamma=0.99, train_every=64,
    utd_ratio=0.5, target_update="hard", target_update_period=16, td_loss="huber", max_grad_norm=10.0,
    hidden_sizes=[32, 32], log_every=256, buffer_size=1_000,
)  # fmt: skip


def test_gradient_steps_are_the_same_on_skrl_and_torchrl(builds):
    skrl = builds("rlplug_dqn", "skrl", "CartPole-v1", num_envs=1, steps=100_000, seed=0, **HP)
    torchrl = builds("rlplug_dqn", "torchrl", "CartPole-v1", num_envs=1, steps=100_000, seed=0, **HP)
    agent, trainer = skrl.trainer.agent, torchrl.trainer
    trainer.step()  # 256 uniformly random transitions into TorchRL's replay
    stored = torchrl.memory._storage[: len(torchrl.memory)]
    rows = len(stored)
    memory = agent.memory
    for name, key in (("observations", "observation"), ("next_observations", ("next", "observation")),
                      ("actions", "action"), ("rewards", ("next", "reward")), ("terminated", ("next", "terminated"))):  # fmt: skip
        memory.tensors[name][:rows, 0] = stored[key].reshape(rows, -1)
    memory.memory_index = rows
    assert stored["next", "done"].any()

    online = (list(agent.q_network.parameters()), list(torchrl.loss.value_network_params.values(True, True)))
    targets = (list(agent.target_q_network.parameters()), list(torchrl.loss.target_value_network_params.values(True, True)))
    with torch.no_grad():  # the same start (the seeds give it already; this keeps the test about the updates)
        torch._foreach_copy_(online[1], online[0])
        torch._foreach_copy_(targets[1], targets[0])

    generator = torch.Generator().manual_seed(1)
    indexes = iter([torch.randint(0, rows, (HP["batch_size"],), generator=generator) for _ in range(40)])
    current = {}
    trainer.sample_batch = lambda: torchrl.memory._storage[current["index"]]
    memory.sample = lambda names, batch_size, **kwargs: memory.sample_by_index(names=names, indexes=current["index"])
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
