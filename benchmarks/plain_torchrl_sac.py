"""Plain TorchRL 0.14.1 SAC on Pendulum-v1: the script a user would write by hand, with no rlplug import.

It is the TorchRL baseline for measuring rlplug's overhead on sac-pendulum (rlplug steps/s / plain
steps/s). The configuration is the sac-pendulum recipe: ``GymEnv`` + ``DoubleToFloat``, a
``TanhNormal`` 256-256 ReLU actor and two 256-256 ReLU Q(s, a) networks in ``SACLoss`` (TD(0),
learned alpha from 1.0, target entropy -1), ``SoftUpdate(tau=0.005)``, Adam 1e-3 for actor,
critics and alpha (three optimisers, one backward of the summed loss, as TorchRL's SAC example),
``Collector`` of one frame per batch with 1,000 random frames, a 20,000-transition
``LazyTensorStorage`` replay sampled in batches of 256, one gradient step per frame after the warm-up.

    nice -n 5 /work/venv/bin/python benchmarks/plain_torchrl_sac.py --steps 20000 --seed 42 --json
"""

from __future__ import annotations

import logging
import random
import time

import numpy as np
import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn

from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
from torchrl.envs import DoubleToFloat, GymEnv, TransformedEnv
from torchrl.envs.utils import ExplorationType, set_exploration_type
from torchrl.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
from torchrl.objectives import SACLoss, SoftUpdate

from plain_common import parse_args, report  # the scripts' shared command line and result line

ENV_ID = "Pendulum-v1"
LEARNING_STARTS = 1_000
BATCH_SIZE = 256


def make_env(seed: int) -> TransformedEnv:
    env = TransformedEnv(GymEnv(ENV_ID), DoubleToFloat())
    env.set_seed(seed)
    return env


def make_models(env) -> tuple[ProbabilisticActor, list[ValueOperator]]:
    action_spec = env.action_spec_unbatched
    act_dim = action_spec.shape[-1]
    actor_net = nn.Sequential(
        MLP(out_features=2 * act_dim, num_cells=[256, 256], activation_class=nn.ReLU), NormalParamExtractor()
    )
    actor = ProbabilisticActor(
        TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        spec=action_spec,
        distribution_class=TanhNormal,
        distribution_kwargs={"low": action_spec.space.low, "high": action_spec.space.high},
        return_log_prob=True,
    )
    critics = [
        ValueOperator(MLP(out_features=1, num_cells=[256, 256], activation_class=nn.ReLU), in_keys=["observation", "action"])
        for _ in range(2)
    ]
    with torch.no_grad():  # materialise the lazy layers
        td = env.fake_tensordict()
        actor(td)
        for critic in critics:
            critic(td)
    return actor, critics


def evaluate(actor: ProbabilisticActor, seed: int, episodes: int = 10) -> list[float]:
    """Deterministic episodes (the squashed mean) on a separate env seeded 10000+i."""
    returns = []
    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        for i in range(episodes):
            env = make_env(10_000 + i)
            rollout = env.rollout(1_000, actor)
            returns.append(float(rollout["next", "reward"].sum()))
            env.close()
    return returns


def main() -> None:
    args = parse_args(__doc__, 20_000, "env steps (random warm-up included)")

    torch.set_num_threads(1)
    logging.getLogger("torchrl").setLevel(logging.WARNING)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    env = make_env(args.seed)
    actor, critics = make_models(env)
    loss = SACLoss(actor, critics, num_qvalue_nets=2, loss_function="l2", alpha_init=1.0, target_entropy=-1.0)
    loss.make_value_estimator("td0", gamma=0.99)
    updater = SoftUpdate(loss, tau=0.005)
    optimizers = [
        torch.optim.Adam(loss.actor_network_params.values(True, True), lr=1e-3),
        torch.optim.Adam(loss.qvalue_network_params.values(True, True), lr=1e-3),
        torch.optim.Adam([loss.log_alpha], lr=1e-3),
    ]
    collector = Collector(
        env,
        actor,
        frames_per_batch=1,
        total_frames=args.steps,
        init_random_frames=LEARNING_STARTS,
        auto_register_policy_transforms=False,
    )
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(20_000), batch_size=BATCH_SIZE)

    frames = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    for data in collector:
        frames += data.numel()
        buffer.extend(data.reshape(-1))
        if frames <= LEARNING_STARTS:
            continue
        out = loss(buffer.sample())
        for optimizer in optimizers:
            optimizer.zero_grad()
        (out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]).backward()
        for optimizer in optimizers:
            optimizer.step()
        updater.step()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    collector.shutdown()

    returns = evaluate(actor, args.seed)
    report("torchrl", frames, wall, cpu, returns, quiet=args.json)


if __name__ == "__main__":
    main()
