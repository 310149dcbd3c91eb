"""SAC gradient updates per second: each rlplug cell against a plain PyTorch loop, interleaved.

The floor is a hand-written SAC update on the recipe's sizes (a 256x256 Gaussian actor with tanh
squashing, two 256x256 Q networks, batch 256, three Adams, a learned temperature, a soft target update,
one torch thread), sampling its batches from a tensor replay of the same size. Each rlplug cell is
built from the ``sac-pendulum`` recipe, its replay memory filled with random transitions by its own
trainer (``learning_starts`` past the warm-up, so no update runs then), and then timed calling the
cell's own gradient step (skrl: ``agent.gradient_step``; TorchRL: ``trainer.update(memory.sample())``).
Rounds alternate plain and rlplug so machine load hits both alike; reported: updates/s of each and
the ratio rlplug / plain per round, with mean and spread.

    python benchmarks/sac_updates.py [--updates 300] [--rounds 3] [--backends skrl,torchrl]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
from torch import nn
from torch.nn import functional as F

OBS, ACT, HIDDEN, BATCH = 3, 1, 256, 256
os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")  # skrl's INFO lines (read when skrl is imported)


def mlp(inputs: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, outputs))


class PlainSAC:
    """The textbook SAC update, written directly against torch."""

    def __init__(self, replay_size: int = 20_000, gamma: float = 0.99, tau: float = 0.005, lr: float = 1e-3) -> None:
        torch.manual_seed(0)
        self.actor = mlp(OBS, 2 * ACT)
        self.critics = nn.ModuleList([mlp(OBS + ACT, 1), mlp(OBS + ACT, 1)])
        self.targets = nn.ModuleList([mlp(OBS + ACT, 1), mlp(OBS + ACT, 1)])
        self.targets.load_state_dict(self.critics.state_dict())
        self.targets.requires_grad_(False)
        self.log_alpha = torch.zeros((), requires_grad=True)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=lr)
        self.critic_opt = torch.optim.Adam(self.critics.parameters(), lr=lr)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=lr)
        self.gamma, self.tau, self.target_entropy = gamma, tau, -float(ACT)
        self.replay = {
            "obs": torch.randn(replay_size, OBS),
            "act": torch.rand(replay_size, ACT) * 4 - 2,
            "rew": torch.randn(replay_size, 1),
            "next_obs": torch.randn(replay_size, OBS),
            "done": torch.zeros(replay_size, 1),
        }
        self.size = replay_size

    def policy(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.actor(obs).chunk(2, dim=-1)
        std = log_std.clamp(-20, 2).exp()
        u = mean + std * torch.randn_like(mean)
        action = torch.tanh(u)
        log_prob = (torch.distributions.Normal(mean, std).log_prob(u) - torch.log1p(-action.pow(2) + 1e-6)).sum(-1, keepdim=True)
        return 2.0 * action, log_prob

    def q(self, nets: nn.ModuleList, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        x = torch.cat([obs, act], dim=-1)
        return torch.min(nets[0](x), nets[1](x))

    def update(self) -> None:
        idx = torch.randint(0, self.size, (BATCH,))
        obs, act, rew = self.replay["obs"][idx], self.replay["act"][idx], self.replay["rew"][idx]
        next_obs, done = self.replay["next_obs"][idx], self.replay["done"][idx]
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            next_act, next_log_prob = self.policy(next_obs)
            target = rew + self.gamma * (1 - done) * (self.q(self.targets, next_obs, next_act) - alpha * next_log_prob)
        x = torch.cat([obs, act], dim=-1)
        critic_loss = 0.5 * (F.mse_loss(self.critics[0](x), target) + F.mse_loss(self.critics[1](x), target))
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()

        new_act, log_prob = self.policy(obs)
        self.critics.requires_grad_(False)
        actor_loss = (alpha * log_prob - self.q(self.critics, obs, new_act)).mean()
        self.critics.requires_grad_(True)
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()

        alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        self.alpha_opt.zero_grad()
        alpha_loss.backward()
        self.alpha_opt.step()

        with torch.no_grad():
            targets, sources = list(self.targets.parameters()), list(self.critics.parameters())
            torch._foreach_lerp_(targets, sources, self.tau)


def rlplug_updater(backend: str):
    """A zero-argument callable taking one gradient step of the ``sac-pendulum`` cell on ``backend``."""
    import rlplug

    warmup = 2 * BATCH
    build = rlplug.build("sac-pendulum", backend=backend, overrides=[f"learning_starts={warmup}", f"log_every={warmup}"])
    trainer = build.trainer
    trainer.train(warmup)  # random actions only: fills the replay, takes no gradient step
    if backend == "skrl":
        agent = trainer.agent
        agent.enable_models_training_mode(True)
        return lambda: agent.gradient_step(timestep=warmup, timesteps=build.recipe.steps), trainer
    return lambda: trainer.update(trainer.memory.sample()), trainer


def rate(step, updates: int) -> float:
    for _ in range(10):  # warm-up: allocator, autograd graph caches
        step()
    started = time.perf_counter()
    for _ in range(updates):
        step()
    return updates / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="skrl,torchrl")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    plain = PlainSAC()
    cells = {backend: rlplug_updater(backend) for backend in args.backends.split(",")}
    results: dict[str, dict[str, list[float]]] = {b: {"plain": [], "rlplug": [], "ratio": []} for b in cells}
    for _ in range(args.rounds):
        for backend, (step, _) in cells.items():
            plain_rate = rate(plain.update, args.updates)
            cell_rate = rate(step, args.updates)
            results[backend]["plain"].append(plain_rate)
            results[backend]["rlplug"].append(cell_rate)
            results[backend]["ratio"].append(cell_rate / plain_rate)
    for _, trainer in cells.values():
        trainer.close()
    if args.json:
        print(json.dumps(results))
        return
    print(f"SAC gradient updates/s, batch {BATCH}, {HIDDEN}x{HIDDEN} nets, 1 torch thread, {args.rounds} rounds x {args.updates} updates")
    for backend, r in results.items():
        ratios = r["ratio"]
        print(
            f"  {backend:8s} plain {statistics.mean(r['plain']):6.1f}/s  rlplug {statistics.mean(r['rlplug']):6.1f}/s  "
            f"ratio {statistics.mean(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})"
        )


if __name__ == "__main__":
    main()
