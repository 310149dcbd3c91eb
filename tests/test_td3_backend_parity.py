"""td3 on both backends: the same weights and sampled batches give the same gradient steps.

Both critics' squared TD errors against the smoothed target policy and the clipped double-Q target, the delayed
actor step and the soft target update, on transitions TorchRL's collection stored from LunarLanderContinuous,
whose crashes end episodes (terminations do not bootstrap). The target smoothing noise is drawn from the same
generator state on both sides.
"""

from __future__ import annotations

import pytest
from conftest import share_replay

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")
pytest.importorskip("skrl")
pytest.importorskip("Box2D")

HP = dict(batch_size=32, learning_starts=50_000, train_every=256, utd_ratio=1.0, hidden_sizes=[32, 32], buffer_size=1_000,
          log_every=256)  # fmt: skip


def test_gradient_steps_are_the_same_on_skrl_and_torchrl(builds):
    skrl = builds("rlplug_td3", "skrl", "LunarLanderContinuous-v3", num_envs=1, steps=100_000, seed=0, **HP)
    torchrl = builds("rlplug_td3", "torchrl", "LunarLanderContinuous-v3", num_envs=1, steps=100_000, seed=0, **HP)
    agent, trainer, loss = skrl.trainer.agent, torchrl.trainer, torchrl.loss
    stored = share_replay(torchrl, agent)  # 256 uniformly random transitions, in both replays
    rows = len(stored)
    assert stored["next", "terminated"].any()
    memory = agent.memory

    def tensors(params):
        return list(params.values(True, True))

    actors = ((agent.policy, loss.actor_network_params), (agent.target_policy, loss.target_actor_network_params))
    critics = [((agent.critic_1, agent.critic_2), loss.qvalue_network_params),
               ((agent.target_critic_1, agent.target_critic_2), loss.target_qvalue_network_params)]  # fmt: skip
    with torch.no_grad():  # the same start; TorchRL stacks its two critics along a first dimension
        for model, params in actors:
            for a, b in zip(model.parameters(), tensors(params)[:6], strict=True):  # then the action scaling buffers
                b.copy_(a)
        for models, params in critics:
            for i, model in enumerate(models):
                for a, b in zip(model.parameters(), tensors(params), strict=True):
                    b[i].copy_(a)

    generator = torch.Generator().manual_seed(1)
    current = {}
    trainer.sample_batch = lambda: torchrl.memory._storage[current["index"]]
    memory.sample = lambda names, batch_size, **kwargs: memory.sample_by_index(names=names, indexes=current["index"])
    for step in range(12):  # six actor steps and target updates
        current["index"] = torch.randint(0, rows, (HP["batch_size"],), generator=generator)
        state = torch.get_rng_state()
        skrl_terms = agent.gradient_step(timestep=0, timesteps=1)
        torch.set_rng_state(state)  # the same smoothing noise
        torchrl_terms = trainer.gradient_step()
        assert torchrl_terms["loss_qvalue"].item() == pytest.approx(skrl_terms["loss_critic"].item(), rel=1e-5), step
        if step % 2:
            assert torchrl_terms["loss_actor"].item() == pytest.approx(skrl_terms["loss_policy"].item(), rel=1e-5), step
    for model, params in actors:
        for a, b in zip(model.parameters(), tensors(params)[:6], strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    for models, params in critics:
        for i, model in enumerate(models):
            for a, b in zip(model.parameters(), tensors(params), strict=True):
                torch.testing.assert_close(a, b[i], rtol=1e-5, atol=1e-6)
