"""skrl building blocks shared by every rlplug skrl backend.

Seeding, the training environment, MLP policies and value/Q models, the table that turns setting
strings into skrl classes, and RNG-state capture for ``weights_only`` checkpoints. This module imports
torch and skrl at the top: it is imported only when a skrl backend is built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import logging
import math

import gymnasium as gym
import numpy as np
import skrl
import torch
from skrl.envs.wrappers.torch import Wrapper, wrap_env
from skrl.models.torch import CategoricalMixin, DeterministicMixin, GaussianMixin, Model
from skrl.resources.noises.torch import GaussianNoise, OrnsteinUhlenbeckNoise
from skrl.resources.preprocessors.torch import RunningStandardScaler
from skrl.resources.schedulers.torch import KLAdaptiveLR
from skrl.utils import set_seed
from torch import nn

from ..errors import UnknownNameError
from .parallel import active, pooled_moments
from ..nets import ACTIVATIONS, mlp  # noqa: F401 - part of this module's API
from ..suggest import did_you_mean

# ---- seeding ------------------------------------------------------------------------------------


def seed_everything(seed: int) -> None:
    """One torch thread, then seed python ``random``, numpy, torch and skrl's env key with ``seed``.

    One thread: on small shared CPUs torch's OpenMP threads spin on busy cores and collapse PPO
    throughput by orders of magnitude (reference §13). ``set_seed`` also sets ``skrl.config.torch.key``,
    which skrl's gymnasium wrapper reads when it is constructed (reference §8).
    """
    torch.set_num_threads(1)
    level = skrl.logger.level
    skrl.logger.setLevel(max(level, logging.WARNING))  # skrl logs "Seed: N" at INFO on every call
    try:
        set_seed(seed)
    finally:
        skrl.logger.setLevel(level)


# skrl's memory tensor names for the dataset's keys, as its own off-policy agents name them
SKRL_NAMES = {
    "observation": "observations",
    "action": "actions",
    "reward": "rewards",
    "next_observation": "next_observations",
    "terminated": "terminated",
    "truncated": "truncated",
}


# ---- environments -------------------------------------------------------------------------------


def make_vector_env(env_id: str, env_kwargs: Mapping[str, Any], num_envs: int, seed: int, device: str) -> Wrapper:
    """A sync gymnasium vector env wrapped by skrl, seeded with ``seed`` (sub-env ``i`` gets ``seed + i``).

    Autoreset: gymnasium's default NEXT_STEP mode makes the step after an episode's end a no-op
    reset that skrl stores as a real transition (an ignored action, reward 0, not done): one junk
    sample per episode that PPO would train its policy and value on. SAME_STEP resets inside the
    ending step, so every stored transition is real; it hands the reset observation back as the next
    observation and the true last observation in ``infos["final_obs"]``, which
    ``true_next_observations`` puts back wherever truncation bootstrapping needs it.

    Box actions are clipped to the space's bounds before they reach the env; the agent still stores the
    unclipped sample, so log-probabilities stay those of the Gaussian it drew from.
    """
    vector_env = gym.make_vec(
        env_id,
        num_envs=num_envs,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
        **env_kwargs,
    )
    space = vector_env.single_action_space
    if isinstance(space, gym.spaces.Box):
        # one np.clip over the whole batch per step
        vector_env = gym.wrappers.vector.TransformAction(vector_env, func=partial(np.clip, a_min=space.low, a_max=space.high))
    # the wrapper seeds the first reset with skrl's key, captured when it is constructed
    skrl.config.torch.key = seed
    env = wrap_env(vector_env, wrapper="gymnasium", verbose=False)
    # skrl picks cuda whenever it is available; keep env tensors on the device the models live on
    env._device = torch.device(device)
    return env


def env_state(env: Wrapper) -> dict[str, Any]:
    """The vector env's state (sub-envs mid-episode, their RNGs) and skrl's wrapper's, for checkpoints."""
    from ..envstate import snapshot, vector_env_state

    return {"vector": vector_env_state(env._env), "wrapper": snapshot(env)}


def load_env_state(env: Wrapper, state: dict[str, Any]) -> None:
    from ..envstate import load_vector_env_state, restore

    load_vector_env_state(env._env, state["vector"])
    restore(env, state["wrapper"])


def true_next_observations(next_observations: torch.Tensor, infos: Mapping[str, Any]) -> torch.Tensor:
    """``next_observations`` with the last observation of every episode that ended in this step.

    Under SAME_STEP autoreset the rows of ended episodes already hold the next episode's first
    observation; bootstrapping a truncated episode must use the state it was cut in instead.
    """
    if "_final_obs" not in infos:
        return next_observations
    mask = np.asarray(infos["_final_obs"], dtype=bool)
    finals = np.stack([np.asarray(o, dtype=np.float32).reshape(-1) for o in infos["final_obs"][mask]])
    patched = next_observations.clone()
    patched[torch.as_tensor(mask, device=patched.device)] = torch.as_tensor(finals, device=patched.device)
    return patched


# ---- networks and models ------------------------------------------------------------------------



class GaussianPolicy(GaussianMixin, Model):
    """Diagonal Gaussian over Box actions: an MLP mean and a state-independent learned ``log_std``."""

    def __init__(
        self,
        observation_space: gym.Space,
        action_space: gym.Space,
        device: str,
        hidden_sizes: Sequence[int],
        activation: str = "tanh",
        initial_log_std: float = 0.0,
        clip_actions: bool = False,
        min_log_std: float = -20.0,
        max_log_std: float = 2.0,
    ) -> None:
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        GaussianMixin.__init__(self, clip_actions=clip_actions, min_log_std=min_log_std, max_log_std=max_log_std)
        self.net = mlp(self.num_observations, hidden_sizes, self.num_actions, activation)
        self.log_std_parameter = nn.Parameter(torch.full((self.num_actions,), float(initial_log_std)))

    def compute(self, inputs: Mapping[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        return self.net(inputs["observations"]), {"log_std": self.log_std_parameter}


class CategoricalPolicy(CategoricalMixin, Model):
    """Categorical over Discrete actions from MLP logits."""

    def __init__(
        self,
        observation_space: gym.Space,
        action_space: gym.Space,
        device: str,
        hidden_sizes: Sequence[int],
        activation: str = "tanh",
    ) -> None:
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        CategoricalMixin.__init__(self, unnormalized_log_prob=True)
        self.net = mlp(self.num_observations, hidden_sizes, self.num_actions, activation)

    def compute(self, inputs: Mapping[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        return self.net(inputs["observations"]), {}


class DeterministicModel(DeterministicMixin, Model):
    """An MLP with a deterministic output: a state value V(s) or, with ``with_actions``, Q(s, a).

    ``input_key`` picks what it reads: ``"observations"``, or ``"states"`` for a centralised critic
    (MAPPO). ``output_size`` defaults to 1; a DQN Q-network passes the number of actions.
    """

    def __init__(
        self,
        observation_space: gym.Space,
        action_space: gym.Space,
        device: str,
        hidden_sizes: Sequence[int],
        activation: str = "tanh",
        output_size: int = 1,
        with_actions: bool = False,
        input_key: str = "observations",
        state_space: gym.Space | None = None,
    ) -> None:
        Model.__init__(
            self, observation_space=observation_space, state_space=state_space, action_space=action_space, device=device
        )
        DeterministicMixin.__init__(self, clip_actions=False)
        self.input_key = input_key
        self.with_actions = with_actions
        input_size = self.num_states if input_key == "states" else self.num_observations
        if with_actions:
            input_size += self.num_actions
        self.net = mlp(input_size, hidden_sizes, output_size, activation)

    def compute(self, inputs: Mapping[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        x = inputs[self.input_key]
        if self.with_actions:
            x = torch.cat([x, inputs["taken_actions"]], dim=-1)
        return self.net(x), {}


class DeterministicPolicy(DeterministicMixin, Model):
    """A deterministic policy for Box actions (TD3, DDPG): ``tanh(mlp(obs))`` scaled into the bounds."""

    def __init__(
        self,
        observation_space: gym.Space,
        action_space: gym.spaces.Box,
        device: str,
        hidden_sizes: Sequence[int],
        activation: str = "relu",
    ) -> None:
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        DeterministicMixin.__init__(self, clip_actions=False)
        self.net = mlp(self.num_observations, hidden_sizes, self.num_actions, activation)
        low = torch.as_tensor(action_space.low, dtype=torch.float32)
        high = torch.as_tensor(action_space.high, dtype=torch.float32)
        self.register_buffer("center", (high + low) / 2)
        self.register_buffer("half_range", (high - low) / 2)

    def compute(self, inputs: Mapping[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        return self.center + self.half_range * torch.tanh(self.net(inputs["observations"])), {}


def stochastic_policy(
    observation_space: gym.Space,
    action_space: gym.Space,
    device: str,
    hidden_sizes: Sequence[int],
    activation: str = "tanh",
    initial_log_std: float = 0.0,
) -> Model:
    """A Categorical policy for Discrete actions, a Gaussian one for Box actions."""
    if isinstance(action_space, gym.spaces.Discrete):
        return CategoricalPolicy(observation_space, action_space, device, hidden_sizes, activation)
    if isinstance(action_space, gym.spaces.Box):
        return GaussianPolicy(observation_space, action_space, device, hidden_sizes, activation, initial_log_std)
    raise TypeError(f"no default stochastic policy for action space {action_space}")


def value_model(
    observation_space: gym.Space, action_space: gym.Space, device: str, hidden_sizes: Sequence[int], activation: str = "tanh"
) -> DeterministicModel:
    """V(s): one output from the observations."""
    return DeterministicModel(observation_space, action_space, device, hidden_sizes, activation)


def q_model(
    observation_space: gym.Space, action_space: gym.Space, device: str, hidden_sizes: Sequence[int], activation: str = "relu"
) -> DeterministicModel:
    """Q(s, a) for Box actions (observations and actions concatenated), or Q(s, ·) for Discrete actions."""
    if isinstance(action_space, gym.spaces.Discrete):
        return DeterministicModel(
            observation_space, action_space, device, hidden_sizes, activation, output_size=int(action_space.n)
        )
    return DeterministicModel(observation_space, action_space, device, hidden_sizes, activation, with_actions=True)


def register_action_bounds(model: nn.Module, space: gym.spaces.Box, device: Any = None) -> None:
    """Buffers ``action_center`` and ``action_half_range`` of a Box space, for policies that map
    ``tanh`` into the bounds (they follow ``.to()`` and are saved with the model)."""
    low = torch.as_tensor(space.low, dtype=torch.float32, device=device)
    high = torch.as_tensor(space.high, dtype=torch.float32, device=device)
    model.register_buffer("action_center", (high + low) / 2)
    model.register_buffer("action_half_range", (high - low) / 2)


def tanh_log_det(u: torch.Tensor, half_range: torch.Tensor) -> torch.Tensor:
    """``log |d(center + half_range * tanh(u)) / du|``, with ``log(1 - tanh(u)^2)`` computed stably as
    ``2 * (log 2 - u - softplus(-2u))``: the change-of-variables term of a squashed Gaussian."""
    return 2.0 * (math.log(2.0) - u - torch.nn.functional.softplus(-2.0 * u)) + torch.log(half_range)


def policy_mean_or_argmax(policy: Model, observations: torch.Tensor) -> torch.Tensor:
    """The deterministic action of a stochastic policy: argmax of the logits, or the Gaussian mean
    clipped to the action bounds as training clips what it sends to the env (``make_vector_env``).

    Calls ``compute`` rather than ``act``, so evaluating draws nothing from torch's RNG and a run's
    random stream is the same with or without evaluations in between.
    """
    output, _ = policy.compute({"observations": observations, "states": None}, role="policy")
    if isinstance(policy, CategoricalMixin):
        return output.argmax(dim=-1)
    space = policy.action_space
    low = torch.as_tensor(space.low, dtype=output.dtype, device=output.device)
    high = torch.as_tensor(space.high, dtype=output.dtype, device=output.device)
    return torch.clamp(output, min=low, max=high)


# ---- the PPO family's loss -----------------------------------------------------------------------


def clipped_ppo_terms(
    policy: Model,
    value: Model,
    batch: Mapping[str, torch.Tensor],
    ratio_clip: float,
    value_clip: float,
    entropy_loss_scale: float,
    value_loss_scale: float,
) -> dict[str, torch.Tensor]:
    """skrl's PPO / MAPPO minibatch loss, once for both: clipped surrogate, (optionally clipped) scaled
    MSE value loss, entropy bonus, and the approximate KL.

    ``batch`` holds preprocessed ``observations`` and ``states`` and the rollout's ``actions``,
    ``log_prob``, ``advantages``, ``values`` and ``returns``. Upstream's order of operations, so a
    Gaussian policy's ``rsample`` draws the same random numbers as skrl's own update.
    """
    inputs = {"observations": batch["observations"], "states": batch["states"]}
    _, outputs = policy.act({**inputs, "taken_actions": batch["actions"]}, role="policy")
    log_ratio = outputs["log_prob"] - batch["log_prob"]
    with torch.no_grad():
        approx_kl = ((torch.exp(log_ratio) - 1) - log_ratio).mean()

    if entropy_loss_scale:
        loss_entropy = -entropy_loss_scale * policy.get_entropy(role="policy").mean()
    else:
        loss_entropy = torch.zeros((), device=log_ratio.device)

    ratio = torch.exp(log_ratio)
    surrogate = batch["advantages"] * ratio
    surrogate_clipped = batch["advantages"] * torch.clip(ratio, 1.0 - ratio_clip, 1.0 + ratio_clip)
    loss_policy = -torch.min(surrogate, surrogate_clipped).mean()

    predicted_values, _ = value.act(inputs, role="value")
    if value_clip > 0:
        predicted_values = batch["values"] + torch.clip(predicted_values - batch["values"], min=-value_clip, max=value_clip)
    loss_value = value_loss_scale * torch.nn.functional.mse_loss(batch["returns"], predicted_values)
    return {"loss_policy": loss_policy, "loss_value": loss_value, "loss_entropy": loss_entropy, "approx_kl": approx_kl}


# ---- names in settings -> skrl classes ---------------------------------------------------------
# Settings hold class names as strings; only the classes listed here can be named (never eval).

SCHEDULERS: dict[str, type] = {
    "KLAdaptiveLR": KLAdaptiveLR,
    "LinearLR": torch.optim.lr_scheduler.LinearLR,
    "CosineAnnealingLR": torch.optim.lr_scheduler.CosineAnnealingLR,
    "StepLR": torch.optim.lr_scheduler.StepLR,
}
class PooledRunningStandardScaler(RunningStandardScaler):
    """skrl's ``RunningStandardScaler`` whose statistics pool every rank's batch in distributed runs.

    skrl updates each rank's scaler from that rank's data only, so ranks drift apart (reference
    §10); here each update merges the moments of all ranks' batches, so every rank holds the same
    statistics. One process: skrl's class exactly.
    """

    def _parallel_variance(self, input_mean: torch.Tensor, input_var: torch.Tensor, input_count: int) -> None:
        if active():
            # skrl passes torch.var's unbiased estimate; pool population moments, hand back unbiased
            population = input_var * ((input_count - 1) / input_count)
            input_mean, population, total = pooled_moments(input_mean, population, input_count)
            input_var, input_count = population * (total / max(total - 1, 1)), total
        super()._parallel_variance(input_mean, input_var, input_count)


PREPROCESSORS: dict[str, type] = {"RunningStandardScaler": PooledRunningStandardScaler}
NOISES: dict[str, type] = {"GaussianNoise": GaussianNoise, "OrnsteinUhlenbeckNoise": OrnsteinUhlenbeckNoise}
_TABLES = {"scheduler": SCHEDULERS, "preprocessor": PREPROCESSORS, "noise": NOISES}


def resolve_class(kind: str, name: str | None) -> type | None:
    """The class ``name`` stands for in the ``kind`` table (scheduler, preprocessor, noise); ``None`` stays ``None``."""
    if name is None:
        return None
    table = _TABLES[kind]
    if name not in table:
        raise UnknownNameError(f"unknown skrl {kind} '{name}'" + did_you_mean(name, table))
    return table[name]


def preprocessor(name: str | None, size: Any, device: str) -> tuple[type | None, dict[str, Any]]:
    """``(class, kwargs)`` for an agent config's ``*_preprocessor`` / ``*_preprocessor_kwargs`` pair."""
    cls = resolve_class("preprocessor", name)
    return cls, ({"size": size, "device": device} if cls is not None else {})
