"""CQL gradient updates per second: each rlplug cell against a plain PyTorch loop, interleaved.

The floor is a hand-written CQL update with the recipe's sizes and hyperparameters (hidden layers,
batch, ``num_random``, ``min_q_weight``, temperature, learning rates, tau; one torch thread) and the
maths of TorchRL's ``CQLLoss`` / ``DiscreteCQLLoss``: Box actions, a tanh-squashed Gaussian actor,
two Q networks and their targets, the TD loss plus the CQL(H) penalty over ``num_random`` uniform,
current-policy and next-policy actions per state, three Adams, a learned temperature and a soft
target update; Discrete actions, Q-learning plus ``logsumexp_a Q(s, a) - Q(s, a_data)``. It samples
its batches from a tensor dataset of the same size. Each rlplug cell is built from the recipe (its
dataset must exist: ``RLPLUG_DATA_DIR``) and timed calling its own gradient step (skrl:
``trainer.agent.gradient_step()``; TorchRL: ``trainer.gradient_step()``). Rounds alternate plain
and rlplug so machine load hits both alike; reported: updates/s of each and the ratio rlplug /
plain per round, with mean and spread. With the TorchRL cell, a third row times the hand-written
TorchRL loop of reference §9.1 (upstream ``CQLLoss`` / ``DiscreteCQLLoss``, ``SoftUpdate``, one Adam)
against the same plain floor, so TorchRL's own cost and rlplug's are told apart. ``--losses cql,cql-lean`` times one TorchRL
cell per loss (``torchrl[<loss>]``, the first standing in for "torchrl") and reports each one's updates/s
against the first's (upstream's class against a lean one, e.g. ``cql,cql-lean`` on the Box recipe);
``--set KEY=VALUE`` overrides the recipe for every cell.

    python benchmarks/cql_updates.py [--recipe cql-pendulum-medium] [--recipes FILE] [--updates 200]
                                     [--rounds 3] [--backends skrl,torchrl] [--losses cql,cql-lean] [--set K=V]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics

import torch
from update_rates import HAND_WRITTEN, interleaved, report
from torch import nn
from torch.nn import functional as F

os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")  # skrl's INFO lines (read when skrl is imported)
SCALE_BIAS = math.log(math.expm1(0.99))  # TorchRL's NormalParamExtractor: softplus(x + bias) + 0.01


def mlp(inputs: int, hidden: list[int], outputs: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for size in hidden:
        layers += [nn.Linear(inputs, size), nn.ReLU()]
        inputs = size
    return nn.Sequential(*layers, nn.Linear(inputs, outputs))


def dataset(size: int, obs: int, act: int, discrete: bool) -> dict[str, torch.Tensor]:
    actions = torch.randint(0, act, (size, 1)) if discrete else torch.rand(size, act) * 4 - 2
    return {
        "obs": torch.randn(size, obs),
        "act": actions,
        "rew": torch.randn(size, 1),
        "next_obs": torch.randn(size, obs),
        "done": torch.zeros(size, 1),
    }


class PlainCQL:
    """The CQL(H) update (SAC actor, twin Q, the penalty TorchRL's CQLLoss computes), written against torch."""

    def __init__(self, obs: int, act: int, hp: dict, size: int = 50_000) -> None:
        torch.manual_seed(0)
        hidden = hp["hidden_sizes"]
        self.actor = mlp(obs, hidden, 2 * act)
        self.critics = nn.ModuleList([mlp(obs + act, hidden, 1), mlp(obs + act, hidden, 1)])
        self.targets = nn.ModuleList([mlp(obs + act, hidden, 1), mlp(obs + act, hidden, 1)])
        self.targets.load_state_dict(self.critics.state_dict())
        self.targets.requires_grad_(False)
        self.log_alpha = torch.zeros((), requires_grad=True)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=hp["actor_learning_rate"])
        self.critic_opt = torch.optim.Adam(self.critics.parameters(), lr=hp["critic_learning_rate"])
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=hp["alpha_learning_rate"])
        self.hp, self.act, self.target_entropy = hp, act, -float(act)
        self.data, self.size = dataset(size, obs, act, False), size

    def policy(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, raw_scale = self.actor(obs).chunk(2, dim=-1)
        std = F.softplus(raw_scale + SCALE_BIAS) + 0.01
        u = mean + std * torch.randn_like(mean)
        log_prob = torch.distributions.Normal(mean, std).log_prob(u) - 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u)) - math.log(2.0)
        return 2.0 * torch.tanh(u), log_prob.sum(-1, keepdim=True)

    def update(self) -> None:
        hp, n = self.hp, self.hp["num_random"]
        idx = torch.randint(0, self.size, (hp["batch_size"],))
        obs, act, rew, next_obs, done = (self.data[k][idx] for k in ("obs", "act", "rew", "next_obs", "done"))
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            next_act, _ = self.policy(next_obs)
            x = torch.cat([next_obs, next_act], -1)
            target = rew + hp["gamma"] * (1 - done) * torch.min(self.targets[0](x), self.targets[1](x))
            rep, next_rep = obs.repeat_interleave(n, 0), next_obs.repeat_interleave(n, 0)
            random_act = torch.empty(len(rep), self.act).uniform_(-1, 1)
            cur_act, cur_lp = self.policy(rep)
            new_act, new_lp = self.policy(next_rep)
        x = torch.cat([torch.cat([obs, act], -1), torch.cat([rep, random_act], -1), torch.cat([rep, cur_act], -1), torch.cat([next_rep, new_act], -1)])
        critic_loss = 0.0
        for critic in self.critics:
            q_data, q_rand, q_cur, q_new = critic(x).split([len(obs), len(rep), len(rep), len(rep)])
            proposals = torch.cat([q_rand - self.act * math.log(0.5), q_new - new_lp, q_cur - cur_lp], -1)
            logsumexp = torch.logsumexp(proposals / hp["temperature"], -1) * hp["temperature"]
            critic_loss = critic_loss + F.mse_loss(q_data, target) + hp["min_q_weight"] * (logsumexp.mean() - q_data.mean())
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()

        new_act, log_prob = self.policy(obs)
        self.critics.requires_grad_(False)
        x = torch.cat([obs, new_act], -1)
        actor_loss = (alpha * log_prob - torch.min(self.critics[0](x), self.critics[1](x))).mean()
        self.critics.requires_grad_(True)
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()

        alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        self.alpha_opt.zero_grad()
        alpha_loss.backward()
        self.alpha_opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(list(self.targets.parameters()), list(self.critics.parameters()), hp["tau"])


class PlainDiscreteCQL:
    """Q-learning with a target network plus ``min_q_weight * (logsumexp_a Q(s, a) - Q(s, a_data))``."""

    def __init__(self, obs: int, actions: int, hp: dict, size: int = 50_000) -> None:
        torch.manual_seed(0)
        self.q = mlp(obs, hp["hidden_sizes"], actions)
        self.target = mlp(obs, hp["hidden_sizes"], actions)
        self.target.load_state_dict(self.q.state_dict())
        self.target.requires_grad_(False)
        self.opt = torch.optim.Adam(self.q.parameters(), lr=hp["critic_learning_rate"])
        self.hp, self.data, self.size = hp, dataset(size, obs, actions, True), size

    def update(self) -> None:
        hp = self.hp
        idx = torch.randint(0, self.size, (hp["batch_size"],))
        obs, act, rew, next_obs, done = (self.data[k][idx] for k in ("obs", "act", "rew", "next_obs", "done"))
        with torch.no_grad():
            target = rew + hp["gamma"] * (1 - done) * self.target(next_obs).max(-1, keepdim=True)[0]
        q = self.q(obs)
        q_data = q.gather(1, act)
        loss = 0.5 * F.mse_loss(q_data, target) + hp["min_q_weight"] * (torch.logsumexp(q, -1, keepdim=True) - q_data).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(list(self.target.parameters()), list(self.q.parameters()), hp["tau"])


class PlainTorchRLCQL:
    """The hand-written TorchRL loop of reference §9.1: upstream ``CQLLoss`` / ``DiscreteCQLLoss`` on
    the same sizes, a ``TensorDictReplayBuffer`` of the same size, one Adam, ``SoftUpdate``."""

    def __init__(self, obs: int, space, hp: dict, size: int = 50_000) -> None:
        from tensordict import TensorDict
        from tensordict.nn import NormalParamExtractor, TensorDictModule
        from torchrl.data import Categorical, LazyTensorStorage, RandomSampler, TensorDictReplayBuffer
        from torchrl.modules import ProbabilisticActor, QValueActor, TanhNormal, ValueOperator
        from torchrl.objectives import CQLLoss, DiscreteCQLLoss, SoftUpdate

        torch.manual_seed(0)
        hidden, discrete = hp["hidden_sizes"], hasattr(space, "n")
        act = int(space.n) if discrete else space.shape[0]
        data = dataset(size, obs, act, discrete)
        action = data["act"].squeeze(-1) if discrete else data["act"]
        nxt = {"observation": data["next_obs"], "reward": data["rew"], "done": data["done"].bool(), "terminated": data["done"].bool()}
        self.buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(size), sampler=RandomSampler(), batch_size=hp["batch_size"])
        self.buffer.extend(TensorDict({"observation": data["obs"], "action": action, "next": nxt}, [size]))
        if discrete:
            qnet = QValueActor(mlp(obs, hidden, act), in_keys=["observation"], spec=Categorical(act), action_space="categorical")
            self.loss = DiscreteCQLLoss(qnet, loss_function="l2", delay_value=True)
            self.terms = ("loss_qvalue", "loss_cql")
        else:
            module = TensorDictModule(nn.Sequential(mlp(obs, hidden, 2 * act), NormalParamExtractor()), ["observation"], ["loc", "scale"])
            actor = ProbabilisticActor(module, in_keys=["loc", "scale"], out_keys=["action"], distribution_class=TanhNormal,
                                       distribution_kwargs={"low": torch.as_tensor(space.low), "high": torch.as_tensor(space.high)},
                                       return_log_prob=True)

            class Q(nn.Module):
                def __init__(self) -> None:
                    super().__init__()
                    self.net = mlp(obs + act, hidden, 1)

                def forward(self, o: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
                    return self.net(torch.cat([o, a], -1))

            critics = [ValueOperator(Q(), in_keys=["observation", "action"]) for _ in range(2)]
            self.loss = CQLLoss(actor, critics, loss_function="l2", target_entropy=-float(act), num_random=hp["num_random"],
                                min_q_weight=hp["min_q_weight"], temperature=hp["temperature"])
            self.terms = ("loss_actor", "loss_qvalue", "loss_cql", "loss_alpha")
        self.loss.make_value_estimator("td0", gamma=hp["gamma"])
        self.updater = SoftUpdate(self.loss, tau=hp["tau"])
        self.optimizer = torch.optim.Adam(self.loss.parameters(), lr=hp["critic_learning_rate"])

    def update(self) -> None:
        out = self.loss(self.buffer.sample())
        loss = sum(out[name] for name in self.terms)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.updater.step()


def rlplug_cell(recipe: str, recipe_files: list[str], backend: str, overrides: list[str] = ()):
    """The cell's build and a zero-argument callable taking one of its gradient steps."""
    from rlplug.pipeline.session import Session

    build = Session(recipe_files=recipe_files).build(recipe, backend, overrides)
    trainer = build.trainer
    if backend == "skrl":
        return build, trainer.agent.gradient_step
    return build, trainer.gradient_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="cql-pendulum-medium")
    parser.add_argument("--recipes", action="append", default=[], help="extra recipe TOML files")
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="skrl,torchrl")
    parser.add_argument("--losses", default="", help="TorchRL cells, one per loss (e.g. cql,cql-lean); default: the recipe's")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override for every cell")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    losses = [loss for loss in args.losses.split(",") if loss]
    cells = {}
    for backend in args.backends.split(","):
        if backend == "torchrl" and losses:
            for loss in losses:
                cells[f"torchrl[{loss}]"] = rlplug_cell(args.recipe, args.recipes, backend, [*args.set, f"loss={loss}"])
        else:
            cells[backend] = rlplug_cell(args.recipe, args.recipes, backend, args.set)
    build = next(iter(cells.values()))[0]
    hp = build.hp
    obs = build.observation_space.shape[0]
    if hasattr(build.action_space, "n"):
        plain = PlainDiscreteCQL(obs, int(build.action_space.n), hp)
    else:
        plain = PlainCQL(obs, build.action_space.shape[0], hp)
    steps = {name: step for name, (_, step) in cells.items()}
    if "torchrl" in cells or losses:  # upstream TorchRL without rlplug: what the TorchRL cell is measured against in turn
        steps[HAND_WRITTEN] = PlainTorchRLCQL(obs, build.action_space, hp).update
    results = interleaved(plain.update, steps, args.rounds, args.updates)
    for cell_build, _ in cells.values():
        cell_build.trainer.close()
    sizes = "x".join(map(str, hp["hidden_sizes"]))
    extra = "" if hasattr(build.action_space, "n") else f", num_random {hp['num_random']}"
    if losses and "torchrl" in args.backends.split(","):  # the first loss's cell is the one report() compares
        results = {("torchrl" if name == f"torchrl[{losses[0]}]" else name): r for name, r in results.items()}
    report(f"CQL gradient updates/s ({args.recipe}): batch {hp['batch_size']}, {sizes} nets{extra}, 1 torch thread, "
           f"{args.rounds} rounds x {args.updates} updates" + (f"; 'torchrl' is loss {losses[0]}" if losses else ""),
           results, args.json)
    if losses and len(losses) > 1 and not args.json:
        first = results["torchrl"]
        for loss in losses[1:]:
            r = results[f"torchrl[{loss}]"]
            # per round, each cell against its interleaved plain floor; their quotient cancels machine load
            print(f"  {loss} / {losses[0]}: updates/s {statistics.mean(r['rlplug']) / statistics.mean(first['rlplug']):.3f}, "
                  f"floor ratio {statistics.mean(r['ratio']) / statistics.mean(first['ratio']):.3f}, "
                  f"CPU-time floor ratio {statistics.mean(r['ratio_cpu']) / statistics.mean(first['ratio_cpu']):.3f}")


if __name__ == "__main__":
    main()
