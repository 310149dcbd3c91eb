"""Plain TorchRL 0.14.1 PPO on CartPole-v1: the script a user would write by hand, with no rlplug import.

It is the TorchRL baseline for measuring rlplug's overhead (rlplug steps/s / plain steps/s).
The configuration is the ppo-cartpole recipe: a gymnasium SyncVectorEnv of 8 envs wrapped once by
GymWrapper (TorchRL's fastest in-process setup on a small CPU, the same rlplug uses), 512 frames per batch
(64 steps x 8 envs), 8 epochs x 4 minibatches of 128, ClipPPOLoss + GAE, Adam 1e-3 with a
KL-adaptive learning rate (the same rule as skrl's KLAdaptiveLR), running observation
standardisation, 64-64 tanh nets.

    nice -n 5 /work/venv/bin/python benchmarks/plain_torchrl_ppo.py --steps 100000 --seed 42 --json
"""

from __future__ import annotations

import logging
import random
import time

import gymnasium as gym
import numpy as np
import torch
from tensordict.nn import TensorDictModule
from torch import nn

from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, ReplayBuffer
from torchrl.data.replay_buffers import SamplerWithoutReplacement
from torchrl.envs import GymWrapper
from torchrl.modules import MLP, OneHotCategorical, ProbabilisticActor, ValueOperator
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value import GAE

from plain_common import parse_args, report  # the scripts' shared command line and result line

ENV_ID = "CartPole-v1"
NUM_ENVS = 8
FRAMES_PER_BATCH = 512  # 64 steps per env
MINIBATCH = 128  # 4 minibatches per epoch
EPOCHS = 8
KL_THRESHOLD, KL_FACTOR, LR_FACTOR, MIN_LR, MAX_LR = 0.008, 2.0, 1.5, 1e-6, 1e-2


class RunningNorm(nn.Module):
    """Running mean/variance standardisation (skrl's RunningStandardScaler maths, clipped to +-5).

    Statistics change in place, so the loss module's functional copies of the buffers see each update.
    """

    def __init__(self, size: int, clip: float = 5.0, eps: float = 1e-8):
        super().__init__()
        self.clip, self.eps = clip, eps
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("var", torch.ones(size))
        self.register_buffer("count", torch.ones(()))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        x = x.reshape(-1, x.shape[-1])
        batch_mean, batch_var, n = x.mean(0), x.var(0), x.shape[0]
        delta, total = batch_mean - self.mean, self.count + n
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.mean.add_(delta * n / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / (self.var.sqrt() + self.eps)).clamp(-self.clip, self.clip)


def make_env(seed: int) -> GymWrapper:
    # SAME_STEP autoreset: ("next", "observation") holds the true last observation of an ended episode
    vector_env = gym.make_vec(ENV_ID, num_envs=NUM_ENVS, vectorization_mode="sync",
                              vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
    env = GymWrapper(vector_env, categorical_action_encoding=False)  # one-hot, for OneHotCategorical
    env.set_seed(seed)
    return env


def kl_adaptive_lr(optimizer: torch.optim.Optimizer, kl: float) -> None:
    """skrl's KLAdaptiveLR.step(kl): shrink the lr when KL overshoots, grow it when KL undershoots."""
    for group in optimizer.param_groups:
        if kl > KL_THRESHOLD * KL_FACTOR:
            group["lr"] = max(group["lr"] / LR_FACTOR, MIN_LR)
        elif kl < KL_THRESHOLD / KL_FACTOR:
            group["lr"] = min(group["lr"] * LR_FACTOR, MAX_LR)


def evaluate(policy_net: nn.Module, episodes: int = 10) -> list[float]:
    """Greedy (argmax) episodes on a separate gymnasium env seeded 10000+i, through the trained normaliser."""
    env = gym.make(ENV_ID)
    returns = []
    with torch.no_grad():
        for i in range(episodes):
            obs, _ = env.reset(seed=10_000 + i)
            total, done = 0.0, False
            while not done:
                logits = policy_net(torch.as_tensor(obs, dtype=torch.float32).unsqueeze(0))
                obs, reward, terminated, truncated, _ = env.step(int(logits.argmax(-1).item()))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    env.close()
    return returns


def main() -> None:
    args = parse_args(__doc__, 100_000, "total env steps (rounded up to whole batches)")

    torch.set_num_threads(1)
    logging.getLogger("torchrl").setLevel(logging.WARNING)  # keep stdout for the result line
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    env = make_env(args.seed)
    obs_dim = env.observation_spec["observation"].shape[-1]
    n_actions = env.full_action_spec["action"].shape[-1]

    norm = RunningNorm(obs_dim)  # shared by policy and value
    hidden = {"num_cells": [64, 64], "activation_class": nn.Tanh}
    policy_net = nn.Sequential(norm, MLP(in_features=obs_dim, out_features=n_actions, **hidden))
    value_net = nn.Sequential(norm, MLP(in_features=obs_dim, out_features=1, **hidden))
    actor = ProbabilisticActor(
        TensorDictModule(policy_net, in_keys=["observation"], out_keys=["logits"]),
        in_keys=["logits"],
        spec=env.full_action_spec["action"],
        distribution_class=OneHotCategorical,
        return_log_prob=True,
    )
    critic = ValueOperator(value_net, in_keys=["observation"])

    loss = ClipPPOLoss(
        actor,
        critic,
        clip_epsilon=0.2,
        entropy_coeff=0.01,
        critic_coeff=1.0,
        loss_critic_type="l2",
        clip_value=0.2,
        normalize_advantage=True,
    )
    gae = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=False)
    optimizer = torch.optim.Adam(loss.parameters(), lr=1e-3)
    total_frames = -(-args.steps // FRAMES_PER_BATCH) * FRAMES_PER_BATCH  # whole batches, no rounding warning
    collector = Collector(
        env,
        actor,
        frames_per_batch=FRAMES_PER_BATCH,
        total_frames=total_frames,
        auto_register_policy_transforms=False,
    )
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(FRAMES_PER_BATCH), sampler=SamplerWithoutReplacement(), batch_size=MINIBATCH
    )

    frames = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    for data in collector:  # [NUM_ENVS, 64]
        frames += data.numel()
        norm.update(data["observation"])
        with torch.no_grad():
            gae(data)  # once per rollout, with the updated normaliser
        buffer.extend(data.reshape(-1))
        for _ in range(EPOCHS):
            kls = []
            for batch in buffer:
                out = loss(batch)
                optimizer.zero_grad()
                (out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]).backward()
                nn.utils.clip_grad_norm_(loss.parameters(), 0.5)
                optimizer.step()
                kls.append(out["kl_approx"])
            kl_adaptive_lr(optimizer, torch.stack(kls).mean().item())
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    collector.shutdown()  # also closes the env

    returns = evaluate(policy_net)
    report("torchrl", frames, wall, cpu, returns, quiet=args.json)


if __name__ == "__main__":
    main()
