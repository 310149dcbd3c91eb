"""IQL gradient updates per second: each rlplug cell against a plain PyTorch loop, interleaved.

The floor is a hand-written IQL update on the recipe's sizes (``iql-pendulum-medium``: a 128x128
Gaussian actor, two 128x128 Q networks with targets, a 128x128 V network, batch 256, three Adams at
the recipe's learning rate: expectile value regression, TD(0) critic towards V(s'), advantage-weighted
actor, soft target update; one torch thread), sampling its batches from tensors the size of the
dataset. Each rlplug cell is built from the
``iql-pendulum-medium`` recipe (its dataset loaded into the cell's own memory) and timed calling the
cell's own gradient step (``trainer.gradient_step()``: skrl's agent with its staged loss, TorchRL's
``IQLLoss``). TorchRL's ``IQLLoss`` does more work than the textbook update (it evaluates the target Q
networks twice, through ``vmap`` and tensordicts), so the TorchRL cell is also timed against a plain
TorchRL loop around the same loss. Rounds alternate plain and rlplug so machine load hits both alike;
reported: updates/s of each and the ratio rlplug / plain per round, with mean and spread.

    RLPLUG_DATA_DIR=... python benchmarks/iql_updates.py [--updates 300] [--rounds 3]
        [--backends skrl,torchrl] [--recipes FILE]
"""

from __future__ import annotations

import argparse
import os

import torch
from update_rates import HAND_WRITTEN, interleaved, report
from torch import nn

OBS, ACT, HIGH = 3, 1, 2.0  # Pendulum-v1
os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")  # skrl's INFO lines (read when skrl is imported)


def mlp(inputs: int, hidden: list[int], outputs: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for size in hidden:
        layers += [nn.Linear(inputs, size), nn.ReLU()]
        inputs = size
    return nn.Sequential(*layers, nn.Linear(inputs, outputs))


class PlainIQL:
    """The textbook IQL update (Kostrikov et al. 2021), written directly against torch."""

    def __init__(self, hidden: list[int], batch_size: int, lr: float, gamma: float = 0.99, tau: float = 0.005,
                 expectile: float = 0.7, temperature: float = 3.0, dataset_size: int = 50_000) -> None:  # fmt: skip
        torch.manual_seed(0)
        self.actor = mlp(OBS, hidden, ACT)
        self.log_std = nn.Parameter(torch.zeros(ACT))
        self.value = mlp(OBS, hidden, 1)
        self.critics = nn.ModuleList([mlp(OBS + ACT, hidden, 1), mlp(OBS + ACT, hidden, 1)])
        self.targets = nn.ModuleList([mlp(OBS + ACT, hidden, 1), mlp(OBS + ACT, hidden, 1)])
        self.targets.load_state_dict(self.critics.state_dict())
        self.targets.requires_grad_(False)
        self.actor_opt = torch.optim.Adam([*self.actor.parameters(), self.log_std], lr=lr)
        self.critic_opt = torch.optim.Adam(self.critics.parameters(), lr=lr)
        self.value_opt = torch.optim.Adam(self.value.parameters(), lr=lr)
        self.gamma, self.tau, self.expectile, self.temperature = gamma, tau, expectile, temperature
        self.batch_size = batch_size
        self.data = {
            "obs": torch.randn(dataset_size, OBS),
            "act": torch.rand(dataset_size, ACT) * 2 * HIGH - HIGH,
            "rew": torch.randn(dataset_size, 1),
            "next_obs": torch.randn(dataset_size, OBS),
            "terminated": torch.zeros(dataset_size, 1, dtype=torch.bool),
        }
        self.size = dataset_size

    def update(self) -> None:
        idx = torch.randint(0, self.size, (self.batch_size,))
        obs, act, rew = self.data["obs"][idx], self.data["act"][idx], self.data["rew"][idx]
        next_obs, terminated = self.data["next_obs"][idx], self.data["terminated"][idx]
        x = torch.cat([obs, act], dim=-1)

        with torch.no_grad():
            target_q = torch.min(self.targets[0](x), self.targets[1](x))
        diff = target_q - self.value(obs)
        value_loss = (torch.where(diff > 0, self.expectile, 1 - self.expectile) * diff.pow(2)).mean()
        self.value_opt.zero_grad()
        value_loss.backward()
        self.value_opt.step()

        with torch.no_grad():
            target = rew + self.gamma * terminated.logical_not() * self.value(next_obs)
        critic_loss = ((self.critics[0](x) - target).pow(2) + (self.critics[1](x) - target).pow(2)).mean()
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()

        with torch.no_grad():
            weight = torch.exp(self.temperature * (target_q - self.value(obs))).clamp_max(100.0)
        mean = HIGH * torch.tanh(self.actor(obs))
        log_prob = torch.distributions.Normal(mean, self.log_std.clamp(-20, 2).exp()).log_prob(act).sum(-1, keepdim=True)
        actor_loss = -(weight * log_prob).mean()
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()

        with torch.no_grad():
            torch._foreach_lerp_(list(self.targets.parameters()), list(self.critics.parameters()), self.tau)


def plain_torchrl_updater(build):
    """TorchRL's offline loop (reference §9.1) with its own ``IQLLoss``, ``SoftUpdate`` and one Adam over
    fresh networks of the cell's sizes, sampling the cell's dataset buffer: what the TorchRL cell adds
    on top of TorchRL itself, apart from IQLLoss's own cost."""
    from rlplug_iql import torchrl_backend
    from torchrl.objectives import SoftUpdate

    models = torchrl_backend.build_models(build)
    s = build.settings
    loss = torchrl_backend.IQLLoss(models["actor"], models["critics"], models["value"], loss_function="l2",
                                   expectile=s["expectile"], temperature=s["temperature"])  # fmt: skip
    loss.make_value_estimator("td0", gamma=s["gamma"])
    updater = SoftUpdate(loss, tau=s["tau"])
    optimizer = torch.optim.Adam(loss.parameters(), lr=s["actor_lr"])
    buffer = build.memory

    def update() -> None:
        out = loss(buffer.sample())
        (out["loss_actor"] + out["loss_qvalue"] + out["loss_value"]).backward()
        optimizer.step()
        optimizer.zero_grad()
        updater.step()

    return update


def rlplug_updater(backend: str, recipe_files: list[str]):
    """A zero-argument callable taking one gradient step of the ``iql-pendulum-medium`` cell on ``backend``."""
    from rlplug.pipeline.session import Session

    build = Session(recipe_files=recipe_files).build("iql-pendulum-medium", backend=backend)
    return build.trainer.gradient_step, build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="skrl,torchrl")
    parser.add_argument("--recipes", action="append", default=[], help="extra recipe file(s) holding iql-pendulum-medium")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cells = {backend: rlplug_updater(backend, args.recipes) for backend in args.backends.split(",")}
    hp = next(iter(cells.values()))[1].hp
    plain = PlainIQL(hp["hidden_sizes"], hp["batch_size"], hp["critic_learning_rate"], hp["gamma"], hp["tau"],
                     hp["expectile"], hp["temperature"])  # fmt: skip
    steps = {backend: step for backend, (step, _) in cells.items()}
    if "torchrl" in cells:  # upstream TorchRL without rlplug: what the TorchRL cell is measured against in turn
        steps[HAND_WRITTEN] = plain_torchrl_updater(cells["torchrl"][1])
    results = interleaved(plain.update, steps, args.rounds, args.updates)
    for _, build in cells.values():
        build.trainer.close()
    sizes = "x".join(map(str, hp["hidden_sizes"]))
    report(f"IQL gradient updates/s, batch {hp['batch_size']}, {sizes} nets, 1 torch thread, {args.rounds} rounds x {args.updates} updates",
           results, args.json)


if __name__ == "__main__":
    main()
