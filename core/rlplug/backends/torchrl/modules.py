"""TorchRL modules: a running normaliser, the observation keys and the encoded networks of a cell,
policies (categorical, Gaussian, tanh-normal, Q-value, deterministic) and value / Q operators over
them, and the deterministic action of a policy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict
from tensordict.nn import AddStateIndependentNormalScale, NormalParamExtractor, TensorDictModule, TensorDictModuleBase, TensorDictSequential
from torch import nn
from torch.distributions import Categorical
from torchrl.data import Categorical as CategoricalSpec
from torchrl.envs import ExplorationType, set_exploration_type
from torchrl.modules import IndependentNormal, MaskedCategorical, ProbabilisticActor, QValueActor, TanhNormal, ValueOperator

from ...envs.masks import ACTION_MASK_KEY, feature_space, has_action_mask
from ..common.encoders import observation_encoder
from ..common.gsde import StateDependentHead, StateDependentNoise
from ..common.nets import ACTIVATIONS, mlp_head
from ..common.parallel import pooled_moments

# ---- networks -----------------------------------------------------------------------------------


def observation_keys(build_or_space: Any) -> list[str]:
    """Where a step's tensordict holds what the networks read: ``("observation",)`` for a Box; a Dict space's
    keys, sorted, which ``GymWrapper`` puts at the root of the tensordict (``"image"``, ``"vector"``). An
    action mask is no feature (``rlplug.envs.masks``): its key is ``action_mask_key``'s, not one of these."""
    space = feature_space(getattr(build_or_space, "observation_space", build_or_space))
    if isinstance(space, gym.spaces.Dict):
        return sorted(space.spaces)
    return ["observation"]


def action_mask_key(build_or_space: Any) -> str | None:
    """``"action_mask"`` where the observations carry an action mask (a bool ``[n_actions]`` entry at the root
    of a step's tensordict, and under ``"next"``), else ``None``: what ``MaskedCategorical``, ``QValueModule``
    and ``EGreedyModule`` read."""
    return ACTION_MASK_KEY if has_action_mask(getattr(build_or_space, "observation_space", build_or_space)) else None


class EncodedNet(nn.Module):
    """``head(cat(encoder(observation), *extra))``: an encoder, then an MLP head, as a TorchRL module
    reads it: one positional input per observation key (a Dict's keys in sorted order), then any extra
    inputs (Q(s, a)'s action), which are concatenated to the features."""

    def __init__(self, encoder: nn.Module, head: nn.Module, keys: Sequence[str]) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = head
        self.keys = tuple(keys)
        self.dict_input = self.keys != ("observation",)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        n = len(self.keys)
        observation = dict(zip(self.keys, inputs[:n])) if self.dict_input else inputs[0]
        features = self.encoder(observation)
        if len(inputs) > n:
            features = torch.cat([features, *inputs[n:]], dim=-1)
        return self.head(features)


def observation_net(
    build: Any, output_size: int, hidden_sizes: Sequence[int], activation: str, action_size: int = 0, dueling: bool = False,
    atoms: int = 1,
) -> nn.Module:
    """The network one model of a cell computes with: its own copy of the cell's encoder, then an MLP
    head of ``hidden_sizes`` (reading ``action_size`` more inputs for Q(s, a); ``dueling``: value and
    advantage layers, ``DuelingMlp``, with ``atoms`` outputs per action for a distributional head). With the
    ``mlp`` encoder it is the plain MLP over the observation vector it always was."""
    encoder = observation_encoder(build)
    if encoder is None:
        size = int(np.prod(feature_space(build.observation_space).shape))
        return mlp_head(size + action_size, hidden_sizes, output_size, activation, dueling, atoms)
    head = mlp_head(int(encoder.features) + action_size, hidden_sizes, output_size, activation, dueling, atoms)
    return EncodedNet(encoder, head, observation_keys(build))


class _Then(nn.Module):
    """``last(net(*inputs))``: ``nn.Sequential`` for a first module that takes several inputs."""

    def __init__(self, net: nn.Module, last: nn.Module) -> None:
        super().__init__()
        self.net, self.last = net, last

    def forward(self, *inputs: torch.Tensor) -> Any:
        return self.last(self.net(*inputs))


def then(net: nn.Module, last: nn.Module) -> nn.Module:
    """``last`` applied to ``net``'s output (an encoder's network keeps its several observation inputs)."""
    return _Then(net, last) if isinstance(net, EncodedNet) else nn.Sequential(net, last)


_then = then


def _keys(observation_key: str | Sequence[str]) -> list[Any]:
    return [observation_key] if isinstance(observation_key, (str, tuple)) else list(observation_key)



NORMALIZER_CONVENTIONS = ("baselines", "skrl")
"""How ``RunningNormalizer`` starts and standardises (see its docstring); the first is the default."""


class RunningNormalizer(nn.Module):
    """Standardises inputs with a running mean and variance, clipped to ``±clip`` standard deviations.

    The statistics are buffers (so they are in ``state_dict`` and follow ``.to()``) updated in place
    by ``update``; in-place matters because TorchRL losses hold references to module buffers.
    Put it first in a network (``nn.Sequential(normalizer, mlp)``) so policy, critic and
    deterministic evaluation all see the same standardised inputs.

    ``convention`` (``NORMALIZER_CONVENTIONS``): ``"baselines"`` is OpenAI baselines' ``RunningMeanStd``
    (Stable-Baselines3's ``VecNormalize``): a prior count of 1e-4, each batch's population variance,
    ``(x - mean) / sqrt(var + eps)``. ``"skrl"`` is skrl's ``RunningStandardScaler``, which skrl's PPO
    standardises observations and values with: the statistics start as one virtual sample of mean 0 and
    variance 1 (count 1, which weighs noticeably while few samples are in: a feature of variance 0.005
    reads 0.007 after the first 512), each batch's Bessel-corrected variance, ``(x - mean) / (sqrt(var) +
    eps)`` and ``x * sqrt(var) + mean`` back.
    """

    def __init__(
        self, shape: int | Sequence[int], epsilon: float = 1e-8, clip: float = 5.0, convention: str = "baselines"
    ) -> None:
        super().__init__()
        if convention not in NORMALIZER_CONVENTIONS:
            raise ValueError(f"unknown normalizer convention '{convention}': expected one of {', '.join(NORMALIZER_CONVENTIONS)}")
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.epsilon = epsilon
        self.clip = clip
        self.convention = convention
        self._skrl = convention == "skrl"
        self.register_buffer("mean", torch.zeros(shape))
        self.register_buffer("var", torch.ones(shape))
        self.register_buffer("count", torch.tensor(1.0 if self._skrl else 1e-4, dtype=torch.float64))

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
        if self._skrl and batch_count > 1:  # skrl merges torch.var's unbiased estimate
            batch_var = batch_var * (batch_count / (batch_count - 1))
        count = self.count.item()
        total = count + batch_count
        delta = batch_mean - self.mean
        mean = self.mean + delta * (batch_count / total)
        m2 = self.var * count + batch_var * batch_count + delta.pow(2) * (count * batch_count / total)
        self.mean.copy_(mean)
        self.var.copy_(m2 / total)
        self.count.fill_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._skrl:
            return ((x - self.mean) / (torch.sqrt(self.var) + self.epsilon)).clamp(-self.clip, self.clip)
        return ((x - self.mean) / torch.sqrt(self.var + self.epsilon)).clamp(-self.clip, self.clip)

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        if self._skrl:
            return x * torch.sqrt(self.var) + self.mean
        return x * torch.sqrt(self.var + self.epsilon) + self.mean


def find_module(root: nn.Module, module_type: type[nn.Module]) -> nn.Module | None:
    """The first submodule of ``root`` (``root`` included) of ``module_type``, or ``None``."""
    return next((m for m in root.modules() if isinstance(m, module_type)), None)


# ---- policies and value operators ---------------------------------------------------------------
# Every operator reads "observation" and writes TorchRL's standard keys, so they plug into TorchRL
# losses as they are: stochastic actors write "action" and "action_log_prob", critics "state_value"
# or "state_action_value".


def _after(before: Sequence[TensorDictModuleBase], params: TensorDictModule) -> TensorDictModuleBase:
    """``params`` alone, or run after the modules ``before`` it (a recurrent actor's encoder and core)."""
    return TensorDictSequential(*before, params) if before else params


def categorical_actor(
    net: nn.Module, observation_key: Any = "observation", before: Sequence[TensorDictModuleBase] = (),
    mask_key: str | None = None,
) -> ProbabilisticActor:
    """A policy over Discrete actions from the logits ``net`` computes; "action" is an index (int64).

    Index actions match ``GymWrapper(categorical_action_encoding=True)`` and what the evaluation loop
    passes to gymnasium. Deterministic mode takes the argmax. ``before``: tensordict modules that compute
    ``observation_key`` first (a recurrent actor's features and core, ``recurrent.py``). With ``mask_key``
    (``action_mask_key``) it is TorchRL's ``MaskedCategorical`` over the step's mask: masked actions have
    probability zero (log-probability -inf, never sampled), and its entropy counts the valid ones only.
    """
    if mask_key is None:
        in_keys, distribution = ["logits"], Categorical
    else:
        in_keys, distribution = {"logits": "logits", "mask": mask_key}, MaskedCategorical
    return ProbabilisticActor(
        _after(before, TensorDictModule(net, in_keys=_keys(observation_key), out_keys=["logits"])),
        in_keys=in_keys,
        out_keys=["action"],
        distribution_class=distribution,
        return_log_prob=True,
    )


def gaussian_actor(
    net: nn.Module, action_size: int, initial_log_std: float = 0.0, observation_key: Any = "observation",
    before: Sequence[TensorDictModuleBase] = (),
) -> ProbabilisticActor:
    """A diagonal Gaussian over Box actions: ``net`` computes the mean, the log std is one learned
    state-independent parameter per action dimension, initialised to ``initial_log_std``; or ``net`` is a
    ``StateDependentHead`` (gSDE), whose outputs are the mean and the scale (collect with
    ``state_dependent_rollout_policy``).

    Samples are unbounded; ``make_env`` clamps them to the action space on the way into the env.
    Deterministic mode returns the mean. ``before``: as ``categorical_actor``'s.
    """
    if isinstance(net, StateDependentHead):
        head = net
    else:
        head = _then(net, AddStateIndependentNormalScale(action_size, scale_mapping="exp", init_value=initial_log_std))
    return ProbabilisticActor(
        _after(before, TensorDictModule(head, in_keys=_keys(observation_key), out_keys=["loc", "scale"])),
        in_keys=["loc", "scale"],
        out_keys=["action"],
        distribution_class=IndependentNormal,
        return_log_prob=True,
    )


def stochastic_actor(
    net_factory: Any, action_space: gym.Space, initial_log_std: float = 0.0, observation_key: Any = "observation",
    before: Sequence[TensorDictModuleBase] = (), mask_key: str | None = None,
) -> ProbabilisticActor:
    """Categorical actor for Discrete (masked with ``mask_key``), Gaussian actor for Box; ``net_factory(output_size)``
    builds the net."""
    if isinstance(action_space, gym.spaces.Discrete):
        return categorical_actor(net_factory(int(action_space.n)), observation_key, before, mask_key=mask_key)
    if isinstance(action_space, gym.spaces.Box):
        size = int(np.prod(action_space.shape))
        return gaussian_actor(net_factory(size), size, initial_log_std, observation_key, before)
    raise TypeError(f"no default stochastic actor for action space {action_space}")


def tanh_normal_actor(net: nn.Module, action_space: gym.spaces.Box, observation_key: Any = "observation") -> ProbabilisticActor:
    """A squashed Gaussian over Box actions (SAC): ``net`` outputs ``2 * action_size`` numbers, split
    into the mean and a softplus-positive scale of a ``TanhNormal`` bounded by the space; or ``net`` is a
    ``StateDependentHead`` (gSDE), whose outputs are the mean and the scale.

    Deterministic mode returns the squashed mean; samples never leave the bounds.
    """
    head = net if isinstance(net, StateDependentHead) else _then(net, NormalParamExtractor())
    return ProbabilisticActor(
        TensorDictModule(head, in_keys=_keys(observation_key), out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        out_keys=["action"],
        distribution_class=TanhNormal,
        distribution_kwargs={
            "low": torch.as_tensor(action_space.low, dtype=torch.float32),
            "high": torch.as_tensor(action_space.high, dtype=torch.float32),
        },
        return_log_prob=True,
    )


def state_dependent_head(build: Any, noise: StateDependentNoise, clip_mean: float = 0.0, before: nn.Module | None = None) -> StateDependentHead:
    """A Gaussian policy's network under gSDE: the cell's ``observation_net`` up to its last hidden features (and
    their activation), then the mean layer; ``noise`` (``state_dependent_noise(build, ...)``) gives the scale.
    ``before``: a module the observations go through first (an on-policy cell's ``RunningNormalizer``)."""
    s = build.settings
    *hidden, features = s["hidden_sizes"]
    trunk = then(observation_net(build, features, hidden, s["activation"]), ACTIVATIONS[s["activation"]]())
    if before is not None:
        trunk = nn.Sequential(before, trunk)
    return StateDependentHead(trunk, features, int(np.prod(build.action_space.shape)), noise, clip_mean)


def _state_dependent_head(actor: nn.Module) -> StateDependentHead | None:
    """The actor's gSDE head, or ``None``."""
    return next((m for m in actor.modules() if isinstance(m, StateDependentHead)), None)


class StateDependentRollout(nn.Module):
    """An on-policy rollout step under gSDE: ``loc``, ``scale``, the action ``loc + z @ M`` and its log-probability
    under ``IndependentNormal(loc, scale)``: what the actor writes when it samples, with gSDE's draw."""

    def __init__(self, head: StateDependentHead) -> None:
        super().__init__()
        self.head = head

    def forward(self, *observations: torch.Tensor) -> tuple[torch.Tensor, ...]:
        latent, loc = self.head.latent_and_mean(*observations)
        scale = self.head.noise.std(latent)
        action = loc + self.head.noise.noise(latent)
        return loc, scale, action, IndependentNormal(loc, scale).log_prob(action)


def state_dependent_rollout_policy(actor: ProbabilisticActor) -> TensorDictModule | None:
    """What an on-policy collector runs for a ``gaussian_actor`` on a ``StateDependentHead`` (its keys, gSDE's action),
    or ``None`` for an actor without gSDE."""
    head = _state_dependent_head(actor)
    if head is None:
        return None
    return TensorDictModule(StateDependentRollout(head), in_keys=actor.in_keys, out_keys=["loc", "scale", "action", "action_log_prob"])


class StateDependentExploration(nn.Module):
    """gSDE's collection action from an actor's ``StateDependentHead``: ``mean + z @ M``, squashed into the bounds
    as ``TanhNormal`` squashes its samples (``squash``), or left for the env to clip (a plain Gaussian's)."""

    def __init__(self, head: StateDependentHead, action_space: gym.spaces.Box, squash: bool) -> None:
        super().__init__()
        self.head, self.squash = head, squash
        low, high = (torch.as_tensor(b, dtype=torch.float32) for b in (action_space.low, action_space.high))
        self.register_buffer("center", (high + low) / 2)
        self.register_buffer("half_range", (high - low) / 2)

    def forward(self, *observations: torch.Tensor) -> torch.Tensor:
        u = self.head.explore(*observations)
        return self.center + self.half_range * torch.tanh(u) if self.squash else u


def state_dependent_exploration(actor: nn.Module, action_space: gym.spaces.Box, squash: bool = True) -> TensorDictModule | None:
    """What a collector runs for an actor with gSDE's head (``"action"`` from its observation keys), or ``None``
    when the actor has none."""
    head = _state_dependent_head(actor)
    if head is None:
        return None
    return TensorDictModule(StateDependentExploration(head, action_space, squash), in_keys=actor.in_keys, out_keys=["action"])


def q_value_actor(
    net: nn.Module, action_space: gym.spaces.Discrete, observation_key: Any = "observation", mask_key: str | None = None
) -> QValueActor:
    """Q(s, .) over Discrete actions (DQN): ``net`` outputs one value per action; "action" is the argmax
    index (int64), as ``GymWrapper(categorical_action_encoding=True)`` and the evaluation loop expect. With
    ``mask_key`` the argmax and the chosen value (what ``DQNLoss``'s TD(0) target reads of the next step) are
    over the step's valid actions only (``QValueModule(action_mask_key=...)``)."""
    spec = CategoricalSpec(int(action_space.n))
    return QValueActor(net, in_keys=_keys(observation_key), spec=spec, action_space="categorical", action_mask_key=mask_key)


class _ScaleToBounds(nn.Module):
    def __init__(self, low: np.ndarray, high: np.ndarray) -> None:
        super().__init__()
        low_t, high_t = torch.as_tensor(low, dtype=torch.float32), torch.as_tensor(high, dtype=torch.float32)
        self.register_buffer("center", (high_t + low_t) / 2)
        self.register_buffer("half_range", (high_t - low_t) / 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.center + self.half_range * torch.tanh(x)


def deterministic_actor(
    net: nn.Module, action_space: gym.spaces.Box, observation_key: Any = "observation"
) -> TensorDictModule:
    """A deterministic policy for Box actions (TD3, DDPG): ``tanh(net(obs))`` scaled into the bounds."""
    scaled = _then(net, _ScaleToBounds(action_space.low, action_space.high))
    return TensorDictModule(scaled, in_keys=_keys(observation_key), out_keys=["action"])


def value_operator(net: nn.Module, observation_key: Any = "observation") -> ValueOperator:
    """V(s): ``net`` maps observations to one value, written to "state_value"."""
    return ValueOperator(net, in_keys=_keys(observation_key))


class _Concat(nn.Module):
    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat(inputs, dim=-1))


def q_value_operator(net: nn.Module, observation_key: Any = "observation") -> ValueOperator:
    """Q(s, a) for Box actions: ``net`` reads observation and action concatenated ("state_action_value");
    an ``EncodedNet`` concatenates the action to its encoded features itself."""
    module = net if isinstance(net, EncodedNet) else _Concat(net)
    return ValueOperator(module, in_keys=[*_keys(observation_key), "action"])


def deterministic_actions(policy: nn.Module, observations: Any, device: str = "cpu") -> np.ndarray:
    """``policy``'s ``"action"`` for a batch of observations in DETERMINISTIC exploration mode (a
    distribution's mode or mean, a Q-actor's argmax): what evaluation and dataset collection use."""
    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        return policy(observation_batch(observations, device))["action"].cpu().numpy()


def observation_batch(observations: Any, device: str = "cpu") -> TensorDict:
    """A ``[B]`` tensordict of raw observations as float32: ``[B, *shape]`` under "observation", or a
    Dict space's observations (a dict of ``[B, *shape]`` arrays) under their own keys; an action mask as bools."""
    if isinstance(observations, Mapping):
        parts = {
            k: torch.as_tensor(np.asarray(v) > 0.5 if k == ACTION_MASK_KEY else np.asarray(v),
                               dtype=torch.bool if k == ACTION_MASK_KEY else torch.float32, device=device)
            for k, v in observations.items()
        }  # fmt: skip
        size = len(next(iter(parts.values())))
        return TensorDict(parts, batch_size=[size], device=device)
    obs = torch.as_tensor(np.asarray(observations), dtype=torch.float32, device=device)
    if obs.ndim < 2:
        obs = obs.reshape(obs.shape[0], -1)
    return TensorDict({"observation": obs}, batch_size=[obs.shape[0]], device=device)
