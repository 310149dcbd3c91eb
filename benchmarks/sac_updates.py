"""SAC gradient updates per second: each rlplug cell against a plain PyTorch loop, interleaved.

The floor is a hand-written SAC update on sac-pendulum@1's sizes (a 256x256 Gaussian actor with tanh
squashing, two 256x256 Q networks, batch 256, three Adams, a learned temperature, a soft target update,
one torch thread), sampling its batches from a tensor replay of the same size. Each rlplug cell is
built from the ``sac-pendulum`` recipe at those sizes (version 2 trains 64x64 networks), its replay memory filled with random transitions by its own
trainer (``learning_starts`` past the warm-up, so no update runs then), and then timed calling the
cell's own gradient step (skrl: ``agent.gradient_step``; TorchRL: ``trainer.gradient_step``).
Rounds alternate plain and rlplug so machine load hits both alike; reported: updates/s of each and
the ratio rlplug / plain per round, with mean and spread.

    python benchmarks/sac_updates.py [--updates 300] [--rounds 3] [--backends skrl,torchrl]
"""

from __future__ import annotations

import argparse
import os

import torch
from update_rates import interleaved, random_replay, report
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
        self.replay = random_replay(replay_size, OBS, ACT)
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
        self.policy_step(obs, alpha)

    def policy_step(self, obs: torch.Tensor, alpha: torch.Tensor) -> None:
        """The actor's and the temperature's steps, then the soft target update (sac_floor.py's fused update shares it)."""
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


def rlplug_updater(backend: str, recipe: str = "sac-pendulum", hidden: int | None = HIDDEN, overrides: tuple[str, ...] = ()):
    """A zero-argument callable taking one gradient step of ``recipe``'s cell on ``backend`` (an
    off-policy recipe: td3_updates.py reuses this with ``td3-pendulum``), its networks ``hidden`` wide
    (the floor's sizes; ``None``: the recipe's), with more recipe ``overrides`` (sac_floor.py's)."""
    import rlplug

    warmup = 2 * BATCH
    build = rlplug.build(recipe, backend=backend, overrides=[f"learning_starts={warmup}", f"log_every={warmup}",
                                                               *([f"hidden_sizes=[{hidden},{hidden}]"] if hidden else []), *overrides])
    trainer = build.trainer
    trainer.train(warmup)  # random actions only: fills the replay, takes no gradient step
    if backend == "skrl":
        agent = trainer.agent
        agent.enable_models_training_mode(True)
        return lambda: agent.gradient_step(timestep=warmup, timesteps=build.recipe.steps), trainer
    return trainer.gradient_step, trainer


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
    results = interleaved(plain.update, {backend: step for backend, (step, _) in cells.items()}, args.rounds, args.updates)
    for _, trainer in cells.values():
        trainer.close()
    report(f"SAC gradient updates/s, batch {BATCH}, {HIDDEN}x{HIDDEN} nets, 1 torch thread, {args.rounds} rounds x {args.updates} updates",
           results, args.json)


if __name__ == "__main__":
    main()
