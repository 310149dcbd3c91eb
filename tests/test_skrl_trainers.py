"""skrl users keep skrl's trainers: the agent and the wrapped environment of an rlplug skrl build train under
skrl's own ``SequentialTrainer`` and ``StepTrainer``, unchanged (issue 28, point 6)."""

from __future__ import annotations

import pytest

pytest.importorskip("skrl")

pytestmark = pytest.mark.slow


# rlplug's ``trainer.close()`` closes the env; skrl's own atexit close would log after pytest closed the stream
CFG = {"headless": True, "disable_progressbar": True, "close_environment_at_exit": False}


def parameters(agent) -> list:
    return [p.detach().clone() for p in agent.policy.parameters()]


def changed(before: list, agent) -> bool:
    return any(not b.equal(a) for b, a in zip(before, agent.policy.parameters()))


@pytest.fixture
def built():
    import torch

    import rlplug

    torch.set_num_threads(1)
    made = []

    def make(name, *overrides):
        made.append(rlplug.build(name, backend="skrl", overrides=list(overrides)))
        return made[-1]

    yield make
    for build in made:
        build.trainer.close()


def test_sequential_trainer_trains_an_rlplug_ppo_agent(built):
    from skrl.trainers.torch import SequentialTrainer

    build = built("ppo-cartpole", "num_envs=2", "rollout_steps=32", "epochs=2")
    agent, env = build.trainer.agent, build.trainer.env
    before = parameters(agent)
    SequentialTrainer(env=env, agents=agent, cfg={"timesteps": 70, **CFG}).train()
    assert changed(before, agent)  # two rollouts of 32 steps: two updates through rlplug's registered loss
    assert len(build.trainer.evaluate(1)) == 1  # rlplug's deterministic evaluation still works on it


def test_step_trainer_trains_an_rlplug_sac_agent_one_call_at_a_time(built):
    from skrl.trainers.torch import StepTrainer

    build = built("sac-pendulum", "learning_starts=20", "batch_size=16")
    agent, env = build.trainer.agent, build.trainer.env
    before = parameters(agent)
    trainer = StepTrainer(env=env, agents=agent, cfg={"timesteps": 60, **CFG})
    for timestep in range(60):
        trainer.train(timestep=timestep)
    assert changed(before, agent)  # gradient steps after learning_starts, driven by skrl's post_interaction
