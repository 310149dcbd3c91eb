"""A plain batched PyTorch PPO loop (no RL library, no rlplug), CleanRL-style: the floor a wide-vector rlplug
run is measured against (``wide_envs.py``).

The same environments as rlplug's sync vector mode (a gymnasium ``SyncVectorEnv`` of ``--num-envs`` copies
with SAME_STEP autoreset), the same update as the ``ppo-cartpole`` recipe with its normalisers and its
learning-rate schedule off: separate 64-64 tanh actor and critic, GAE (gamma 0.99, lambda 0.95), truncated
episodes bootstrapped from their final observation, ``--epochs`` x ``--minibatches`` Adam steps of the clipped
objective with a clipped value loss (0.2), entropy bonus 0.01, gradient-norm clip 0.5.

    python benchmarks/plain_batched_ppo.py --num-envs 256 --rollout-steps 16 --epochs 4 --minibatches 4 --steps 196608 --json
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np
import torch
from torch import nn

GAMMA, LAMBDA, CLIP, VALUE_CLIP, ENTROPY, GRAD_CLIP, LR = 0.99, 0.95, 0.2, 0.2, 0.01, 0.5, 1e-3


def mlp(inputs: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, outputs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--rollout-steps", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--minibatches", type=int, default=4)
    parser.add_argument("--steps", type=int, default=196_608)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    n, horizon = args.num_envs, args.rollout_steps
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(args.env)] * n, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    obs_dim, actions = envs.single_observation_space.shape[0], int(envs.single_action_space.n)
    actor, critic = mlp(obs_dim, actions), mlp(obs_dim, 1)
    params = [*actor.parameters(), *critic.parameters()]
    optimizer = torch.optim.Adam(params, lr=LR)
    obs_buf = torch.zeros(horizon, n, obs_dim)
    act_buf, logp_buf, rew_buf, done_buf, val_buf = (torch.zeros(horizon, n) for _ in range(5))
    obs = torch.as_tensor(envs.reset(seed=args.seed)[0], dtype=torch.float32)
    iterations = max(1, args.steps // (n * horizon))
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(iterations):
        for t in range(horizon):
            with torch.no_grad():
                dist = torch.distributions.Categorical(logits=actor(obs))
                action = dist.sample()
                obs_buf[t], act_buf[t], logp_buf[t], val_buf[t] = obs, action, dist.log_prob(action), critic(obs).squeeze(-1)
            next_obs, reward, terminated, truncated, info = envs.step(action.numpy())
            reward = torch.as_tensor(reward, dtype=torch.float32)
            if truncated.any():  # bootstrap a time-limit end from the observation it ended on
                ended = np.flatnonzero(truncated & ~terminated)
                if len(ended):
                    final = torch.as_tensor(np.stack(info["final_obs"][ended]), dtype=torch.float32)
                    with torch.no_grad():
                        reward[ended] += GAMMA * critic(final).squeeze(-1)
            rew_buf[t], done_buf[t] = reward, torch.as_tensor(terminated | truncated, dtype=torch.float32)
            obs = torch.as_tensor(next_obs, dtype=torch.float32)
        with torch.no_grad():
            advantages, last, next_value = torch.zeros(horizon, n), torch.zeros(n), critic(obs).squeeze(-1)
            for t in reversed(range(horizon)):
                nonterminal = 1.0 - done_buf[t]
                delta = rew_buf[t] + GAMMA * next_value * nonterminal - val_buf[t]
                last = delta + GAMMA * LAMBDA * nonterminal * last
                advantages[t], next_value = last, val_buf[t]
            returns = advantages + val_buf
        b_obs, b_act, b_logp = obs_buf.reshape(-1, obs_dim), act_buf.reshape(-1), logp_buf.reshape(-1)
        b_adv, b_ret, b_val = advantages.reshape(-1), returns.reshape(-1), val_buf.reshape(-1)
        size = n * horizon // args.minibatches
        for _ in range(args.epochs):
            order = torch.randperm(n * horizon)
            for start in range(0, n * horizon, size):
                idx = order[start:start + size]
                dist = torch.distributions.Categorical(logits=actor(b_obs[idx]))
                ratio = (dist.log_prob(b_act[idx]) - b_logp[idx]).exp()
                adv = (b_adv[idx] - b_adv[idx].mean()) / (b_adv[idx].std() + 1e-8)
                policy_loss = -torch.min(ratio * adv, ratio.clamp(1 - CLIP, 1 + CLIP) * adv).mean()
                value = critic(b_obs[idx]).squeeze(-1)
                clipped = b_val[idx] + (value - b_val[idx]).clamp(-VALUE_CLIP, VALUE_CLIP)
                value_loss = torch.max((value - b_ret[idx]) ** 2, (clipped - b_ret[idx]) ** 2).mean()
                loss = policy_loss + value_loss - ENTROPY * dist.entropy().mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(params, GRAD_CLIP)
                optimizer.step()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    steps = iterations * n * horizon
    result = {"steps": steps, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "steps_per_s": round(steps / wall, 1)}
    print(json.dumps(result) if args.json else result)


if __name__ == "__main__":
    main()
