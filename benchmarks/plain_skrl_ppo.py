"""Plain skrl 2.1.1 PPO on CartPole-v1: the script a user would write by hand, with no rlplug import.

It is the skrl baseline for measuring rlplug's overhead (rlplug steps/s / plain steps/s).
The configuration is the ppo-cartpole recipe: 8 sync envs, rollouts 64, 8 epochs x 4 minibatches,
Adam 1e-3 with KLAdaptiveLR(0.008), running observation and value standardisation, 64-64 tanh nets.

    nice -n 5 /work/venv/bin/python benchmarks/plain_skrl_ppo.py --steps 100000 --seed 42 --json
"""

from __future__ import annotations

import time

import gymnasium as gym
import torch
from torch import nn

from skrl.agents.torch.ppo import PPO, PPO_CFG
from skrl.envs.wrappers.torch import wrap_env
from skrl.memories.torch import RandomMemory
from skrl.models.torch import CategoricalMixin, DeterministicMixin, Model
from skrl.resources.preprocessors.torch import RunningStandardScaler
from skrl.resources.schedulers.torch import KLAdaptiveLR
from skrl.trainers.torch import SequentialTrainer, SequentialTrainerCfg
from skrl.utils import set_seed

from plain_common import parse_args, report  # the scripts' shared command line and result line

ENV_ID = "CartPole-v1"
NUM_ENVS = 8
ROLLOUTS = 64
DEVICE = "cpu"


def mlp(inputs: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, outputs))


class Policy(CategoricalMixin, Model):
    def __init__(self, observation_space, action_space, device):
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        CategoricalMixin.__init__(self, unnormalized_log_prob=True)
        self.net = mlp(self.num_observations, self.num_actions)

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {}


class Value(DeterministicMixin, Model):
    def __init__(self, observation_space, action_space, device):
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        DeterministicMixin.__init__(self)
        self.net = mlp(self.num_observations, 1)

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {}


def build_agent(env) -> PPO:
    models = {
        "policy": Policy(env.observation_space, env.action_space, DEVICE),
        "value": Value(env.observation_space, env.action_space, DEVICE),
    }
    cfg = PPO_CFG(
        rollouts=ROLLOUTS,
        learning_epochs=8,
        mini_batches=4,
        discount_factor=0.99,
        gae_lambda=0.95,
        learning_rate=1e-3,
        learning_rate_scheduler=KLAdaptiveLR,
        learning_rate_scheduler_kwargs={"kl_threshold": 0.008},
        observation_preprocessor=RunningStandardScaler,
        observation_preprocessor_kwargs={"size": env.observation_space, "device": DEVICE},
        value_preprocessor=RunningStandardScaler,
        value_preprocessor_kwargs={"size": 1, "device": DEVICE},
        grad_norm_clip=0.5,
        ratio_clip=0.2,
        value_clip=0.2,
        entropy_loss_scale=0.01,
        value_loss_scale=1.0,
        kl_threshold=0,
        time_limit_bootstrap=True,  # the recipe's bootstrap_truncated = true
        experiment={"write_interval": 0, "checkpoint_interval": 0},
    )
    memory = RandomMemory(memory_size=ROLLOUTS, num_envs=env.num_envs, device=DEVICE)  # must equal rollouts
    return PPO(
        models=models,
        memory=memory,
        cfg=cfg,
        observation_space=env.observation_space,
        action_space=env.action_space,
        device=DEVICE,
    )


def evaluate(agent: PPO, episodes: int = 10) -> list[float]:
    """Greedy (argmax) episodes on a separate env seeded 10000+i, through the trained observation scaler."""
    env = gym.make(ENV_ID)
    policy = agent.models["policy"]
    returns = []
    with torch.no_grad():
        for i in range(episodes):
            obs, _ = env.reset(seed=10_000 + i)
            total, done = 0.0, False
            while not done:
                x = agent._observation_preprocessor(torch.as_tensor(obs, dtype=torch.float32).unsqueeze(0))
                logits, _ = policy.compute({"observations": x}, role="policy")
                obs, reward, terminated, truncated, _ = env.step(int(logits.argmax(-1).item()))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    env.close()
    return returns


def main() -> None:
    args = parse_args(__doc__, 100_000, "total env steps (transitions over all envs)")

    torch.set_num_threads(1)
    set_seed(args.seed)  # before wrap_env: the wrapper captures skrl's PRNG key for its reset seed
    env = wrap_env(gym.make_vec(ENV_ID, num_envs=NUM_ENVS, vectorization_mode="sync"), wrapper="gymnasium")
    agent = build_agent(env)
    trainer_cfg = SequentialTrainerCfg(
        timesteps=args.steps // NUM_ENVS,  # skrl counts vectorized env.step() calls
        headless=True,
        disable_progressbar=True,
        close_environment_at_exit=False,
    )
    trainer = SequentialTrainer(env=env, agents=agent, cfg=trainer_cfg)

    start, cpu_start = time.perf_counter(), time.process_time()
    trainer.train()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    env.close()

    steps = trainer_cfg.timesteps * NUM_ENVS
    returns = evaluate(agent)
    report("skrl", steps, wall, cpu, returns, quiet=args.json)


if __name__ == "__main__":
    main()
