"""TD3 gradient updates per second: each rlplug cell against a plain PyTorch loop, interleaved.

The floor is a hand-written TD3 update on the ``td3-pendulum`` sizes (a 64x64 ReLU deterministic actor
with tanh into the bounds, two 64x64 Q networks, targets for all three, batch 256, two Adams with
torch's default CPU path, target-policy smoothing noise 0.2 clipped at 0.5, the actor and the soft
target update (tau 0.005) every second step, one torch thread), sampling from a tensor replay. Each
rlplug cell is built from the recipe, its replay filled by its own trainer during the random warm-up,
and timed calling its own gradient step (skrl: ``agent.gradient_step``; TorchRL:
``trainer.gradient_step()``). A round times an even number of updates, so both sides take the
same share of delayed actor steps. Reported as ``sac_updates.py`` does (``update_rates.py``).

    python benchmarks/td3_updates.py [--updates 400] [--rounds 3] [--backends skrl,torchrl] [--json]
"""

from __future__ import annotations

import argparse
import copy
import os

import torch
from sac_updates import rlplug_updater
from torch import nn
from torch.nn import functional as F
from update_rates import interleaved, random_replay, report

OBS, ACT, HIDDEN, BATCH, MAX_ACTION = 3, 1, 64, 256, 2.0
os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")  # skrl's INFO lines (read when skrl is imported)


def mlp(inputs: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, outputs))


class PlainTD3:
    """The textbook TD3 update (Fujimoto et al. 2018), written directly against torch."""

    def __init__(self, replay_size: int = 20_000, gamma: float = 0.98, tau: float = 0.005, lr: float = 1e-3) -> None:
        torch.manual_seed(0)
        self.actor = mlp(OBS, ACT)
        self.critics = nn.ModuleList([mlp(OBS + ACT, 1), mlp(OBS + ACT, 1)])
        self.target_actor, self.target_critics = copy.deepcopy(self.actor), copy.deepcopy(self.critics)
        self.target_actor.requires_grad_(False)
        self.target_critics.requires_grad_(False)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=lr)
        self.critic_opt = torch.optim.Adam(self.critics.parameters(), lr=lr)
        self.gamma, self.tau, self.steps = gamma, tau, 0
        self.replay = random_replay(replay_size, OBS, ACT)
        self.size = replay_size

    def act(self, net: nn.Module, obs: torch.Tensor) -> torch.Tensor:
        return MAX_ACTION * torch.tanh(net(obs))

    def update(self) -> None:
        idx = torch.randint(0, self.size, (BATCH,))
        obs, act, rew = self.replay["obs"][idx], self.replay["act"][idx], self.replay["rew"][idx]
        next_obs, done = self.replay["next_obs"][idx], self.replay["done"][idx]
        with torch.no_grad():
            noise = (torch.randn_like(act) * 0.2).clamp(-0.5, 0.5)
            next_act = (self.act(self.target_actor, next_obs) + noise).clamp(-MAX_ACTION, MAX_ACTION)
            x = torch.cat([next_obs, next_act], dim=-1)
            target = rew + self.gamma * (1 - done) * torch.min(self.target_critics[0](x), self.target_critics[1](x))
        x = torch.cat([obs, act], dim=-1)
        critic_loss = F.mse_loss(self.critics[0](x), target) + F.mse_loss(self.critics[1](x), target)
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()
        self.steps += 1
        if self.steps % 2:
            return
        self.critics.requires_grad_(False)
        actor_loss = -self.critics[0](torch.cat([obs, self.act(self.actor, obs)], dim=-1)).mean()
        self.critics.requires_grad_(True)
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()
        with torch.no_grad():
            for target, online in ((self.target_actor, self.actor), (self.target_critics, self.critics)):
                torch._foreach_lerp_(list(target.parameters()), list(online.parameters()), self.tau)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=400, help="per timed round (made even)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="skrl,torchrl")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    updates = args.updates + args.updates % 2
    plain = PlainTD3()
    cells = {backend: rlplug_updater(backend, "td3-pendulum", HIDDEN) for backend in args.backends.split(",")}
    results = interleaved(plain.update, {backend: step for backend, (step, _) in cells.items()}, args.rounds, updates)
    for _, trainer in cells.values():
        trainer.close()
    report(f"TD3 gradient updates/s, batch {BATCH}, {HIDDEN}x{HIDDEN} nets, 1 torch thread, {args.rounds} rounds x {updates} updates",
           results, args.json)


if __name__ == "__main__":
    main()
