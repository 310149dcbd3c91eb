"""Plain skrl 2.1.1 SAC on Pendulum-v1: the script a user would write by hand, with no rlplug import.

It is the skrl baseline for measuring rlplug's overhead on sac-pendulum (rlplug steps/s / plain
steps/s). The configuration is the sac-pendulum recipe: one env, 256-256 ReLU Gaussian policy
(state-independent log std, unsquashed, as skrl's SAC examples) and two Q(s, a) critics with their
targets, Adam 1e-3 for policy, critics and the learned entropy coefficient (initial alpha 1.0,
target entropy -1), gamma 0.99, polyak 0.005, batch 256, replay 20,000, 1,000 random steps before
the first update, then one gradient step per env step.

    nice -n 5 /work/venv/bin/python benchmarks/plain_skrl_sac.py --steps 20000 --seed 42 --json
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from skrl.agents.torch.sac import SAC, SAC_CFG
from skrl.envs.wrappers.torch import wrap_env
from skrl.memories.torch import RandomMemory
from skrl.models.torch import DeterministicMixin, GaussianMixin, Model
from skrl.trainers.torch import SequentialTrainer, SequentialTrainerCfg
from skrl.utils import set_seed

from plain_common import parse_args, report  # the scripts' shared command line and result line

ENV_ID = "Pendulum-v1"
DEVICE = "cpu"
LEARNING_STARTS = 1_000


def mlp(inputs: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, outputs))


class Policy(GaussianMixin, Model):
    def __init__(self, observation_space, action_space, device):
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        GaussianMixin.__init__(self, clip_actions=False, min_log_std=-20.0, max_log_std=2.0)
        self.net = mlp(self.num_observations, self.num_actions)
        self.log_std_parameter = nn.Parameter(torch.zeros(self.num_actions))

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {"log_std": self.log_std_parameter}


class Critic(DeterministicMixin, Model):
    def __init__(self, observation_space, action_space, device):
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        DeterministicMixin.__init__(self)
        self.net = mlp(self.num_observations + self.num_actions, 1)

    def compute(self, inputs, role=""):
        return self.net(torch.cat([inputs["observations"], inputs["taken_actions"]], dim=-1)), {}


def build_agent(env) -> SAC:
    spaces = (env.observation_space, env.action_space, DEVICE)
    models = {
        "policy": Policy(*spaces),
        "critic_1": Critic(*spaces),
        "critic_2": Critic(*spaces),
        "target_critic_1": Critic(*spaces),
        "target_critic_2": Critic(*spaces),
    }
    cfg = SAC_CFG(
        gradient_steps=1,
        batch_size=256,
        discount_factor=0.99,
        polyak=0.005,
        learning_rate=(1e-3, 1e-3, 1e-3),  # policy, critic, entropy
        random_timesteps=LEARNING_STARTS,
        learning_starts=LEARNING_STARTS,
        learn_entropy=True,
        initial_entropy_value=1.0,
        experiment={"write_interval": 0, "checkpoint_interval": 0},
    )
    memory = RandomMemory(memory_size=20_000, num_envs=env.num_envs, device=DEVICE)
    return SAC(
        models=models,
        memory=memory,
        cfg=cfg,
        observation_space=env.observation_space,
        action_space=env.action_space,
        device=DEVICE,
    )


def evaluate(agent: SAC, episodes: int = 10) -> list[float]:
    """Deterministic episodes (the Gaussian mean, clipped to the bounds) on a separate env seeded 10000+i."""
    env = gym.make(ENV_ID)
    low, high = env.action_space.low, env.action_space.high
    policy = agent.models["policy"]
    returns = []
    with torch.no_grad():
        for i in range(episodes):
            obs, _ = env.reset(seed=10_000 + i)
            total, done = 0.0, False
            while not done:
                mean, _ = policy.compute({"observations": torch.as_tensor(obs, dtype=torch.float32).unsqueeze(0)}, role="policy")
                obs, reward, terminated, truncated, _ = env.step(np.clip(mean[0].numpy(), low, high))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    env.close()
    return returns


def main() -> None:
    args = parse_args(__doc__, 20_000, "env steps (random warm-up included)")

    torch.set_num_threads(1)
    set_seed(args.seed)
    env = wrap_env(gym.make(ENV_ID), wrapper="gymnasium")
    agent = build_agent(env)
    trainer_cfg = SequentialTrainerCfg(timesteps=args.steps, headless=True, disable_progressbar=True, close_environment_at_exit=False)
    trainer = SequentialTrainer(env=env, agents=agent, cfg=trainer_cfg)

    start, cpu_start = time.perf_counter(), time.process_time()
    trainer.train()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    env.close()

    returns = evaluate(agent)
    report("skrl", args.steps, wall, cpu, returns, quiet=args.json)


if __name__ == "__main__":
    main()
