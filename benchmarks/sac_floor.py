"""SAC at the CPU's limit: a fused plain PyTorch SAC update (the floor) against rlplug's cells, SB3 and the per-critic
plain loop, in gradient updates per second (issue 48, point 5).

The floor is the textbook update of ``sac_updates.py`` (a 256x256 tanh-squashed Gaussian actor, two 256x256 Q networks,
batch 256, a learned temperature, a soft target update, one torch thread) with everything a framework could fuse,
fused: both critics and both targets as one batched module each (weights stacked ``[2, in, out]``, one ``baddbmm`` per
layer for the pair), the three Adams on the fused CPU kernel, the target update one ``foreach`` lerp. ``fused+compile``
is the same update under ``torch.compile`` (inductor, CPU): its compile time and the updates it takes to pay that back
are reported. The cells, each built from ``sac-pendulum`` at 256x256 with the overrides named, are timed through their
own gradient step (``sac_updates.rlplug_updater``); SB3 is ``SAC.train(gradient_steps=1)`` on a replay of random
transitions (its defaults are 256x256, batch 256). Rounds interleave the floor and each contender, so machine load hits
both alike; ratios are contender / floor.

    python benchmarks/sac_floor.py [--updates 300] [--rounds 3] [--compile] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
from sac_updates import ACT, BATCH, HIDDEN, OBS, PlainSAC, rlplug_updater
from update_rates import interleaved, random_replay
from torch import nn
from torch.nn import functional as F

os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")


class PairedMLP(nn.Module):
    """Two MLPs of the same shape as one module: ``x [2, B, in] -> [2, B, out]``, one ``baddbmm`` per layer."""

    def __init__(self, sizes: list[int]) -> None:
        super().__init__()
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            layers = [nn.Linear(fan_in, fan_out) for _ in range(2)]  # torch's initialisation, per critic
            self.weights.append(nn.Parameter(torch.stack([layer.weight.detach().T for layer in layers])))
            self.biases.append(nn.Parameter(torch.stack([layer.bias.detach()[None] for layer in layers])))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = len(self.weights) - 1
        for i, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            x = torch.baddbmm(bias, x, weight)
            if i < last:
                x = F.relu(x)
        return x


class FusedSAC(PlainSAC):
    """``PlainSAC``'s maths with the critic pair batched, fused Adams and a foreach target update."""

    def __init__(self, replay_size: int = 20_000, lr: float = 1e-3) -> None:
        super().__init__(replay_size=replay_size, lr=lr)
        torch.manual_seed(0)
        self.critics = PairedMLP([OBS + ACT, HIDDEN, HIDDEN, 1])
        self.targets = PairedMLP([OBS + ACT, HIDDEN, HIDDEN, 1])
        self.targets.load_state_dict(self.critics.state_dict())
        self.targets.requires_grad_(False)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=lr, fused=True)
        self.critic_opt = torch.optim.Adam(self.critics.parameters(), lr=lr, fused=True)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=lr, fused=True)

    def pair(self, nets: PairedMLP, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return nets(torch.cat([obs, act], dim=-1).expand(2, -1, -1))  # [2, B, 1]

    def update(self) -> None:
        idx = torch.randint(0, self.size, (BATCH,))
        r = self.replay
        self.step(r["obs"][idx], r["act"][idx], r["rew"][idx], r["next_obs"][idx], r["done"][idx])

    def step(self, obs: torch.Tensor, act: torch.Tensor, rew: torch.Tensor, next_obs: torch.Tensor, done: torch.Tensor) -> None:
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            next_act, next_log_prob = self.policy(next_obs)
            next_q = self.q(self.targets, next_obs, next_act)
            target = rew + self.gamma * (1 - done) * (next_q - alpha * next_log_prob)
        critic_loss = 0.5 * 2 * F.mse_loss(self.pair(self.critics, obs, act), target.expand(2, -1, -1))  # sum of the two means
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()
        self.policy_step(obs, alpha)  # PlainSAC's actor, temperature and target steps, through q below

    def q(self, nets: PairedMLP, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return self.pair(nets, obs, act).min(0).values


def compiled_floor(updates: int) -> tuple[object, dict[str, float]]:
    """``FusedSAC`` with its losses and backward under ``torch.compile`` (the optimisers' steps stay eager: compiling
    ``Optimizer.step`` on CPU is its own graph); returns the updater and the compile's cost."""
    floor = FusedSAC()
    floor.step = torch.compile(floor.step)
    started = time.perf_counter()
    floor.update()  # the first call compiles
    floor.update()
    return floor.update, {"compile_s": time.perf_counter() - started}


def sb3_updater() -> tuple[object, object]:
    """SB3's SAC ``train(gradient_steps=1)`` at its defaults (256x256, batch 256, lr 3e-4) on random Pendulum transitions."""
    import gymnasium as gym
    import numpy as np
    from stable_baselines3 import SAC
    from stable_baselines3.common.logger import Logger

    env = gym.make("Pendulum-v1")
    model = SAC("MlpPolicy", env, batch_size=BATCH, buffer_size=20_000, learning_starts=0, seed=0, device="cpu")
    model.set_logger(Logger(None, []))  # no output (configure(None, ...) would make a directory in /tmp)
    rng = np.random.default_rng(0)
    for _ in range(20_000):
        obs, nxt = rng.normal(size=(1, OBS)).astype(np.float32), rng.normal(size=(1, OBS)).astype(np.float32)
        model.replay_buffer.add(obs, nxt, rng.uniform(-1, 1, (1, ACT)).astype(np.float32), rng.normal(size=1), np.zeros(1), [{}])
    return lambda: model.train(gradient_steps=1, batch_size=BATCH), env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compile", action="store_true", help="also time the floor under torch.compile")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    floor = FusedSAC()
    contenders, closers, extra = {"plain (per-critic)": PlainSAC().update}, [], {}
    for name, backend, overrides in (("rlplug skrl", "skrl", ()), ("rlplug torchrl", "torchrl", ()),
                                     ("rlplug skrl batched", "skrl", ("batched_critics=true",)),
                                     ("rlplug torchrl batched", "torchrl", ("batched_critics=true",))):  # fmt: skip
        step, trainer = rlplug_updater(backend, overrides=overrides)
        contenders[name] = step
        closers.append(trainer.close)
    contenders["SB3"], env = sb3_updater()
    closers.append(env.close)
    if args.compile:
        contenders["fused+compile"], extra["fused+compile"] = compiled_floor(args.updates)
    results = interleaved(floor.update, contenders, args.rounds, args.updates)
    for close in closers:
        close()
    title = f"SAC gradient updates/s against the fused floor, batch {BATCH}, {HIDDEN}x{HIDDEN}, 1 torch thread, {args.rounds} rounds x {args.updates}"
    if args.json:
        print(json.dumps({"title": title, "results": results, "extra": extra}))
        return
    print(title)
    for name, r in results.items():
        print(f"  {name:24s} floor {statistics.mean(r['plain']):6.1f}/s  it {statistics.mean(r['rlplug']):6.1f}/s  "
              f"ratio {statistics.mean(r['ratio']):.3f} ({min(r['ratio']):.3f}-{max(r['ratio']):.3f})  "
              f"CPU ratio {statistics.mean(r['ratio_cpu']):.3f}")
    for name, cost in extra.items():
        gain = 1 / statistics.mean(results[name]["plain"]) - 1 / statistics.mean(results[name]["rlplug"])
        payback = f"{cost['compile_s'] / gain:,.0f} updates" if gain > 0 else "never (not faster)"
        print(f"  {name}: compile {cost['compile_s']:.1f} s, paid back after {payback}")


if __name__ == "__main__":
    main()
