"""TorchRL building blocks shared by every rlplug TorchRL backend.

Threads and seeds, the training environment, MLPs, policies and value operators, a running
normaliser, learning-rate schedules, the collector, and RNG-state capture for ``weights_only``
checkpoints. This module imports torch, tensordict and torchrl at the top: it is imported only when
a TorchRL backend is built.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import math
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict
from tensordict.nn import AddStateIndependentNormalScale, NormalParamExtractor, TensorDictModule
from torch import nn
from torch.distributions import Categorical
from torchrl.collectors import Collector
from torchrl.envs import DoubleToFloat, EnvBase, ExplorationType, GymWrapper, Transform, TransformedEnv, set_exploration_type
from torchrl.data import Categorical as CategoricalSpec
from torchrl.modules import IndependentNormal, ProbabilisticActor, QValueActor, TanhNormal, ValueOperator

from ..errors import UnknownNameError
from ..nets import ACTIVATIONS, mlp  # noqa: F401 - part of this module's API
from ..rng import seed_all
from .parallel import pooled_moments
from ..suggest import did_you_mean

# ---- threads and seeds --------------------------------------------------------------------------


def configure_threads(threads: int = 1) -> None:
    """One torch thread by default: on small shared CPUs extra OpenMP threads spin on busy cores and
    slow small-network updates down by an order of magnitude (reference §10, §13.1)."""
    torch.set_num_threads(threads)


def seed_everything(seed: int) -> None:
    """Seed python ``random``, numpy's global generator and torch (which TorchRL samples from)."""
    seed_all(seed)


# tensordict 0.14.3 asks ``importlib.util.find_spec("pandas")`` for every module output it writes
# (``TensorDictBase.from_any``); without pandas installed that is a scan of every ``sys.path`` entry
# each time, 3-4 % of a TorchRL SAC or CQL gradient step here (benchmarks/README.md). A ``None`` entry
# in ``sys.modules`` makes the answer "not installed" immediately, which is what it is: ``import
# pandas`` still raises ImportError. Done once, and only when pandas is absent.
if "pandas" not in sys.modules and importlib.util.find_spec("pandas") is None:
    sys.modules["pandas"] = None


# ---- environments -------------------------------------------------------------------------------


class ClampAction(Transform):
    """Clamps Box actions to the space's bounds on their way into the environment.

    An inverse transform works on a shallow copy of the step's tensordict, so the collected batch
    keeps the unclamped sample and its log-probability stays that of the distribution it came from.
    """

    def __init__(self, low: np.ndarray, high: np.ndarray, action_key: str = "action") -> None:
        super().__init__(in_keys_inv=[action_key], out_keys_inv=[action_key])
        self.register_buffer("low", torch.as_tensor(low, dtype=torch.float32))
        self.register_buffer("high", torch.as_tensor(high, dtype=torch.float32))

    def _inv_apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        return torch.clamp(action, self.low, self.high)


@contextlib.contextmanager
def quiet_torchrl_info() -> Iterator[None]:
    """Hide TorchRL's INFO log lines (wrapping a vector env, filling a lazy storage) for a moment."""
    logger = logging.getLogger("torchrl")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def extend_quietly(memory: Any, transitions: TensorDict) -> None:
    """``memory.extend(transitions)``; the first call, which sizes a lazy storage, without TorchRL's INFO line."""
    if len(memory):
        memory.extend(transitions)
    else:
        with quiet_torchrl_info():
            memory.extend(transitions)


def make_env(env_id: str, env_kwargs: Mapping[str, Any], num_envs: int, seed: int, device: str = "cpu") -> EnvBase:
    """``num_envs`` copies of a gymnasium env stepped in this process, batch size ``[num_envs]``, seeded.

    A gymnasium ``SyncVectorEnv`` wrapped once by TorchRL: TorchRL's per-step overhead is then paid
    once per vector step instead of once per sub-env. Measured on the 2-core box (CartPole, 8 envs,
    64x64 policy, ``Collector``, frames/s): this 3.6k-5.3k; ``SerialEnv(8, GymEnv)`` 2.1k-3.1k;
    ``GymEnv(num_envs=8)`` (gymnasium ``AsyncVectorEnv`` subprocesses) 2.7k-3.1k after a 14-38 s start.

    SAME_STEP autoreset is what TorchRL's wrapper accepts: it writes the true last observation of an
    ended episode to ``("next", "observation")`` and the reset observation to the next root, so
    ``("next", "truncated")`` steps can be bootstrapped. Sub-env ``i`` is seeded with ``seed + i``.
    Box actions are clamped to their bounds; float64 observations become float32.
    """
    vector_env = gym.make_vec(
        env_id,
        num_envs=num_envs,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
        **env_kwargs,
    )
    # an explicit CPU device makes every tensordict write check and cast devices: ~15-20 % fewer
    # frames/s when collecting CartPole; without one, tensors are created on the CPU anyway
    placement = {} if torch.device(device).type == "cpu" else {"device": device}
    with quiet_torchrl_info():  # it logs the spec probe (one dummy step) it runs
        env = GymWrapper(vector_env, categorical_action_encoding=True, **placement)
    if not isinstance(env, TransformedEnv):
        env = TransformedEnv(env)
    observation_space = vector_env.single_observation_space
    if getattr(observation_space, "dtype", None) == np.float64:
        env.append_transform(DoubleToFloat())
    action_space = vector_env.single_action_space
    if isinstance(action_space, gym.spaces.Box):
        env.append_transform(ClampAction(action_space.low, action_space.high))
    env.set_seed(seed)
    return env


def make_collector(env: EnvBase, policy: nn.Module, frames_per_batch: int, total_frames: int = -1) -> Collector:
    """An in-process ``Collector`` yielding ``[num_envs, frames_per_batch // num_envs]`` batches.

    ``auto_register_policy_transforms=False`` pins today's behaviour: TorchRL 0.15 will append an
    ``InitTracker`` to the env by default, and 0.14 warns on every construction (reference §5, §13).
    The policy is used as is (no copy), so optimiser steps on it are seen by the next batch.
    """
    return Collector(
        env,
        policy,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
        auto_register_policy_transforms=False,
    )


def collector_state(collector: Collector, raw_envs: Sequence[Any] | None = None) -> dict[str, Any]:
    """Where a collector stands: the gymnasium vector env under it (sub-envs mid-episode, RNGs), the
    carrier tensordict it steps from next, and its frame and batch counters.

    ``raw_envs``: the library envs under a multi-agent TorchRL env (PettingZoo, VMAS), saved with
    ``deep_snapshot`` instead of the gymnasium vector env.
    """
    from ..envstate import deep_snapshot, vector_env_state

    state = {
        "vector": vector_env_state(collector.env.base_env._env) if raw_envs is None else None,
        "raw": None if raw_envs is None else [deep_snapshot(env) for env in raw_envs],
        "carrier": collector._carrier.to_dict(),
        "frames": int(collector._frames),
        "iter": int(collector._iter),
    }
    if getattr(collector, "_traj_pool_val", None) is not None:
        state["traj_pool"] = collector._traj_pool.state_dict()
    return state


def load_collector_state(collector: Collector, state: dict[str, Any], raw_envs: Sequence[Any] | None = None) -> None:
    from ..envstate import deep_restore, load_vector_env_state

    if raw_envs is None:
        load_vector_env_state(collector.env.base_env._env, state["vector"])
    else:
        if len(raw_envs) != len(state["raw"]):
            raise ValueError(f"the checkpoint holds {len(state['raw'])} environments, this run has {len(raw_envs)}")
        for env, saved in zip(raw_envs, state["raw"]):
            deep_restore(env, saved)
    carrier = TensorDict.from_dict(state["carrier"], batch_size=collector._carrier.batch_size)
    collector._carrier.update(carrier)
    collector._frames = state["frames"]
    collector._iter = state["iter"]
    if "traj_pool" in state:
        collector._traj_pool.load_state_dict(state["traj_pool"])


# ---- networks -----------------------------------------------------------------------------------



class RunningNormalizer(nn.Module):
    """Standardises inputs with a running mean and variance, clipped to ``±clip`` standard deviations.

    The statistics are buffers (so they are in ``state_dict`` and follow ``.to()``) updated in place
    by ``update``; in-place matters because TorchRL losses hold references to module buffers.
    Put it first in a network (``nn.Sequential(normalizer, mlp)``) so policy, critic and
    deterministic evaluation all see the same standardised inputs.
    """

    def __init__(self, shape: int | Sequence[int], epsilon: float = 1e-8, clip: float = 5.0) -> None:
        super().__init__()
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.epsilon = epsilon
        self.clip = clip
        self.register_buffer("mean", torch.zeros(shape))
        self.register_buffer("var", torch.ones(shape))
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Merge the statistics of a batch (all leading dimensions) into the running ones (Chan et al.)."""
        x = x.reshape(-1, *self.mean.shape).to(torch.float64)
        batch_count = x.shape[0]
        if batch_count == 0:
            return
        batch_mean, batch_var = x.mean(0), x.var(0, correction=0)
        # distributed runs: the moments of every rank's batch together, the same on every rank
        batch_mean, batch_var, batch_count = pooled_moments(batch_mean, batch_var, batch_count)
        count = self.count.item()
        total = count + batch_count
        delta = batch_mean - self.mean
        mean = self.mean + delta * (batch_count / total)
        m2 = self.var * count + batch_var * batch_count + delta.pow(2) * (count * batch_count / total)
        self.mean.copy_(mean)
        self.var.copy_(m2 / total)
        self.count.fill_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / torch.sqrt(self.var + self.epsilon)).clamp(-self.clip, self.clip)

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sqrt(self.var + self.epsilon) + self.mean


def find_module(root: nn.Module, module_type: type[nn.Module]) -> nn.Module | None:
    """The first submodule of ``root`` (``root`` included) of ``module_type``, or ``None``."""
    return next((m for m in root.modules() if isinstance(m, module_type)), None)


# ---- policies and value operators ---------------------------------------------------------------
# Every operator reads "observation" and writes TorchRL's standard keys, so they plug into TorchRL
# losses as they are: stochastic actors write "action" and "action_log_prob", critics "state_value"
# or "state_action_value".


def categorical_actor(net: nn.Module, observation_key: str = "observation") -> ProbabilisticActor:
    """A policy over Discrete actions from the logits ``net`` computes; "action" is an index (int64).

    Index actions match ``GymWrapper(categorical_action_encoding=True)`` and what the evaluation loop
    passes to gymnasium. Deterministic mode takes the argmax.
    """
    return ProbabilisticActor(
        TensorDictModule(net, in_keys=[observation_key], out_keys=["logits"]),
        in_keys=["logits"],
        out_keys=["action"],
        distribution_class=Categorical,
        return_log_prob=True,
    )


def gaussian_actor(
    net: nn.Module, action_size: int, initial_log_std: float = 0.0, observation_key: str = "observation"
) -> ProbabilisticActor:
    """A diagonal Gaussian over Box actions: ``net`` computes the mean, the log std is one learned
    state-independent parameter per action dimension, initialised to ``initial_log_std``.

    Samples are unbounded; ``make_env`` clamps them to the action space on the way into the env.
    Deterministic mode returns the mean.
    """
    head = nn.Sequential(net, AddStateIndependentNormalScale(action_size, scale_mapping="exp", init_value=initial_log_std))
    return ProbabilisticActor(
        TensorDictModule(head, in_keys=[observation_key], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        out_keys=["action"],
        distribution_class=IndependentNormal,
        return_log_prob=True,
    )


def stochastic_actor(net_factory: Any, action_space: gym.Space, initial_log_std: float = 0.0) -> ProbabilisticActor:
    """Categorical actor for Discrete, Gaussian actor for Box; ``net_factory(output_size)`` builds the net."""
    if isinstance(action_space, gym.spaces.Discrete):
        return categorical_actor(net_factory(int(action_space.n)))
    if isinstance(action_space, gym.spaces.Box):
        size = int(np.prod(action_space.shape))
        return gaussian_actor(net_factory(size), size, initial_log_std)
    raise TypeError(f"no default stochastic actor for action space {action_space}")


def tanh_normal_actor(net: nn.Module, action_space: gym.spaces.Box, observation_key: str = "observation") -> ProbabilisticActor:
    """A squashed Gaussian over Box actions (SAC): ``net`` outputs ``2 * action_size`` numbers, split
    into the mean and a softplus-positive scale of a ``TanhNormal`` bounded by the space.

    Deterministic mode returns the squashed mean; samples never leave the bounds.
    """
    head = nn.Sequential(net, NormalParamExtractor())
    return ProbabilisticActor(
        TensorDictModule(head, in_keys=[observation_key], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        out_keys=["action"],
        distribution_class=TanhNormal,
        distribution_kwargs={
            "low": torch.as_tensor(action_space.low, dtype=torch.float32),
            "high": torch.as_tensor(action_space.high, dtype=torch.float32),
        },
        return_log_prob=True,
    )


def q_value_actor(net: nn.Module, action_space: gym.spaces.Discrete, observation_key: str = "observation") -> QValueActor:
    """Q(s, .) over Discrete actions (DQN): ``net`` outputs one value per action; "action" is the argmax
    index (int64), as ``GymWrapper(categorical_action_encoding=True)`` and the evaluation loop expect."""
    spec = CategoricalSpec(int(action_space.n))
    return QValueActor(net, in_keys=[observation_key], spec=spec, action_space="categorical")


class _ScaleToBounds(nn.Module):
    def __init__(self, low: np.ndarray, high: np.ndarray) -> None:
        super().__init__()
        low_t, high_t = torch.as_tensor(low, dtype=torch.float32), torch.as_tensor(high, dtype=torch.float32)
        self.register_buffer("center", (high_t + low_t) / 2)
        self.register_buffer("half_range", (high_t - low_t) / 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.center + self.half_range * torch.tanh(x)


def deterministic_actor(
    net: nn.Module, action_space: gym.spaces.Box, observation_key: str = "observation"
) -> TensorDictModule:
    """A deterministic policy for Box actions (TD3, DDPG): ``tanh(net(obs))`` scaled into the bounds."""
    scaled = nn.Sequential(net, _ScaleToBounds(action_space.low, action_space.high))
    return TensorDictModule(scaled, in_keys=[observation_key], out_keys=["action"])


def value_operator(net: nn.Module, observation_key: str = "observation") -> ValueOperator:
    """V(s): ``net`` maps observations to one value, written to "state_value"."""
    return ValueOperator(net, in_keys=[observation_key])


class _Concat(nn.Module):
    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat(inputs, dim=-1))


def q_value_operator(net: nn.Module, observation_key: str = "observation") -> ValueOperator:
    """Q(s, a) for Box actions: ``net`` reads observation and action concatenated ("state_action_value")."""
    return ValueOperator(_Concat(net), in_keys=[observation_key, "action"])


# ---- learning-rate schedules --------------------------------------------------------------------

LR_SCHEDULES = ("constant", "linear", "kl_adaptive")


class LearningRateSchedule:
    """``constant``, ``linear`` (to zero over ``total_steps``) or ``kl_adaptive``; ``step(kl)`` once per epoch.

    ``kl_adaptive`` is skrl's ``KLAdaptiveLR`` rule: KL above ``kl_target * kl_factor`` divides the
    learning rate by ``lr_factor``, KL below ``kl_target / kl_factor`` multiplies it, and the result
    stays within ``[min_lr, max_lr]``. The learning rate itself lives in the optimiser's param groups
    (saved with the optimiser); this object only keeps its step count.
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        kind: str,
        *,
        total_steps: int = 1,
        kl_target: float = 0.008,
        min_lr: float = 1e-6,
        max_lr: float = 1e-2,
        kl_factor: float = 2.0,
        lr_factor: float = 1.5,
    ) -> None:
        if kind not in LR_SCHEDULES:
            raise UnknownNameError(f"unknown lr_schedule '{kind}'" + did_you_mean(kind, LR_SCHEDULES))
        self.optimizer = optimizer
        self.kind = kind
        self.total_steps = max(1, int(total_steps))
        self.kl_target = kl_target
        self.min_lr, self.max_lr = min_lr, max_lr
        self.kl_factor, self.lr_factor = kl_factor, lr_factor
        self.base_lrs = [group["lr"] for group in optimizer.param_groups]
        self.steps = 0

    @property
    def needs_kl(self) -> bool:
        return self.kind == "kl_adaptive"

    @property
    def lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def step(self, kl: float | None = None) -> None:
        self.steps += 1
        for group, base_lr in zip(self.optimizer.param_groups, self.base_lrs, strict=True):
            if self.kind == "linear":
                group["lr"] = base_lr * max(0.0, 1.0 - self.steps / self.total_steps)
            elif self.kind == "kl_adaptive" and kl is not None and math.isfinite(kl):
                if kl > self.kl_target * self.kl_factor:
                    group["lr"] = max(group["lr"] / self.lr_factor, self.min_lr)
                elif kl < self.kl_target / self.kl_factor:
                    group["lr"] = min(group["lr"] * self.lr_factor, self.max_lr)

    def state_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "steps": self.steps, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state["kind"] != self.kind:
            raise ValueError(f"checkpoint has lr_schedule '{state['kind']}', this run uses '{self.kind}'")
        self.steps = int(state["steps"])
        self.base_lrs = [float(lr) for lr in state["base_lrs"]]


# ---- small helpers ------------------------------------------------------------------------------


def describe_loss(*loss_classes: type, value_estimator: str) -> dict[str, Any]:
    """What ``rlplug losses`` shows for a TorchRL loss: the keys its ``set_keys`` accepts, and the value
    estimators it can use."""
    import dataclasses

    keys = {field.name for loss in loss_classes for field in dataclasses.fields(loss._AcceptedKeys)}
    return {"set_keys": sorted(keys), "value_estimator": value_estimator}


def deterministic_actions(policy: nn.Module, observations: np.ndarray, device: str = "cpu") -> np.ndarray:
    """``policy``'s ``"action"`` for a batch of observations in DETERMINISTIC exploration mode (a
    distribution's mode or mean, a Q-actor's argmax): what evaluation and dataset collection use."""
    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        return policy(observation_batch(observations, device))["action"].cpu().numpy()


def observation_batch(observations: np.ndarray, device: str = "cpu") -> TensorDict:
    """A ``[B]`` tensordict holding ``observations`` (``[B, obs_dim]``) as float32 under "observation"."""
    obs = torch.as_tensor(np.asarray(observations), dtype=torch.float32, device=device)
    obs = obs.reshape(obs.shape[0], -1)
    return TensorDict({"observation": obs}, batch_size=[obs.shape[0]], device=device)
