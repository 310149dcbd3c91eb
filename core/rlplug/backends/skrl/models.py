"""skrl models: MLP policies (Gaussian, categorical, deterministic), value and Q models, each reading
its observations through the cell's encoder (``observation_encoder(build)``; ``None``: the flat vector
as it is) and, for recurrent policies and values, an LSTM or GRU core after it (``rlplug.backends.skrl.recurrent``),
action bounds, and the deterministic action of a stochastic policy."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from skrl.models.torch import CategoricalMixin, DeterministicMixin, GaussianMixin, Model
from torch import nn
from torch.distributions import Normal

from ...envs.masks import feature_space
from ..common.encoders import flat_mask_columns, masked_values, split_flat_mask, unflatten_observations
from ..common.gsde import StateDependentHead, StateDependentNoise
from ..common.nets import ACTIVATIONS, ensemble_forward, mlp, mlp_head, plain_layers
from .recurrent import RecurrentCore, RecurrentSpec, episode_ends

# ---- networks and models ------------------------------------------------------------------------


class EncodedModel(Model):
    """A skrl ``Model`` whose observations go through an encoder, then an optional recurrent core, before its
    MLP head.

    skrl hands models flat ``[B, size]`` observations (a Dict's keys concatenated in sorted order);
    ``encode`` puts them back in the space's shape for the encoder. Without an encoder (``None``, the
    ``mlp`` encoder) the head reads the observation vector itself, exactly as before encoders existed.
    With a ``RecurrentSpec`` an LSTM or GRU reads the encoder's features and the head reads its output;
    the model then declares skrl's RNN specification and takes and returns its states as ``"rnn"``
    (``rlplug.backends.skrl.recurrent``). An action mask in the observations (``rlplug.envs.masks``) is no
    feature: ``encode`` leaves its columns out, and ``action_mask`` reads them for the policy or Q head to apply.
    """

    def attach_encoder(self, encoder: nn.Module | None, observation_space: gym.Space, recurrent: RecurrentSpec | None = None) -> int:
        """Keep ``encoder`` (and make the recurrent core); returns the size of what the head reads (the core's
        hidden size, the encoder's ``features``, or the vector's size)."""
        self.encoder = encoder
        self.mask_columns = flat_mask_columns(observation_space)
        self.encoded_space = feature_space(observation_space)
        if encoder is not None:
            size = int(encoder.features)
        else:
            size = self.num_observations if self.mask_columns is None else int(np.prod(self.encoded_space.shape))
        # a submodule, or None: not a class attribute, which would hide the submodule from nn.Module's lookup
        self.recurrent = None if recurrent is None else RecurrentCore(recurrent, size)
        return size if recurrent is None else recurrent.hidden_size

    def encode(self, observations: torch.Tensor) -> torch.Tensor:
        if self.mask_columns is not None:
            observations = split_flat_mask(self.mask_columns, observations)[0]
        if self.encoder is None:
            return observations
        return self.encoder(unflatten_observations(self.encoded_space, observations))

    def features(self, inputs: Mapping[str, Any], key: str = "observations") -> tuple[torch.Tensor, dict[str, Any]]:
        """What the head reads, and the outputs besides it: the recurrent core's next states as ``"rnn"``."""
        x = self.encode(inputs[key])
        if getattr(self, "recurrent", None) is None:
            return x, {}
        # sequences only in training mode and with the update's episode-end flags (skrl's PPO_RNN passes them):
        # acting, even from a model left in training mode, is one step per observation
        sequences = self.training and "terminated" in inputs
        x, states = self.recurrent(x, inputs["rnn"], episode_ends(inputs), sequences=sequences)
        return x, {"rnn": states}

    def get_specification(self) -> dict[str, Any]:
        return {} if getattr(self, "recurrent", None) is None else {"rnn": self.recurrent.specification()}

    def action_mask(self, observations: torch.Tensor) -> torch.Tensor | None:
        """The observations' action mask (bool ``[B, n_actions]``), or ``None`` when they carry none."""
        if getattr(self, "mask_columns", None) is None:
            return None
        return split_flat_mask(self.mask_columns, observations)[1]


def flat_observations(observations: Any, device: Any) -> torch.Tensor:
    """Raw observations (``[B, *shape]``, or a dict of those for a Dict space) as skrl's models read
    them: float32 ``[B, size]``, a Dict's keys concatenated in sorted order as skrl flattens them."""
    if isinstance(observations, Mapping):
        parts = [torch.as_tensor(np.asarray(observations[k]), dtype=torch.float32, device=device) for k in sorted(observations)]
        return torch.cat([p.reshape(len(p), -1) for p in parts], dim=-1)
    x = torch.as_tensor(np.asarray(observations), dtype=torch.float32, device=device)
    return x.reshape(len(x), -1)


class GaussianPolicy(GaussianMixin, EncodedModel):
    """Diagonal Gaussian over Box actions: an MLP mean and a state-independent learned ``log_std``.

    With ``state_dependent`` (gSDE's noise, ``rlplug.backends.common.gsde``) the net is a ``StateDependentHead``:
    the std is the marginal one at the last hidden features, and inside ``sde.collecting()`` ``act`` returns
    ``mean + z @ M`` (the env's exploration matrix) with its log-probability under that marginal Gaussian.
    ``clip_mean``: with gSDE, the mean is clamped to ``[-clip_mean, clip_mean]`` (0: not).
    """

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
        encoder: nn.Module | None = None,
        recurrent: RecurrentSpec | None = None,
        state_dependent: StateDependentNoise | None = None,
        clip_mean: float = 0.0,
    ) -> None:
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        GaussianMixin.__init__(self, clip_actions=clip_actions, min_log_std=min_log_std, max_log_std=max_log_std)
        size = self.attach_encoder(encoder, observation_space, recurrent)
        if state_dependent is None:
            self.net = mlp(size, hidden_sizes, self.num_actions, activation)
            self.log_std_parameter = nn.Parameter(torch.full((self.num_actions,), float(initial_log_std)))
        else:
            trunk = nn.Sequential(*mlp(size, hidden_sizes[:-1], hidden_sizes[-1], activation), ACTIVATIONS[activation]())
            self.net = StateDependentHead(trunk, hidden_sizes[-1], self.num_actions, state_dependent, clip_mean)

    @property
    def sde(self) -> StateDependentNoise | None:
        """gSDE's noise, or ``None`` (a state-independent ``log_std``)."""
        return self.net.noise if isinstance(self.net, StateDependentHead) else None

    def compute(self, inputs: Mapping[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        x, outputs = self.features(inputs)
        if self.sde is None:
            return self.net(x), {**outputs, "log_std": self.log_std_parameter}
        mean, std = self.net(x)
        return mean, {**outputs, "log_std": std.log()}

    def explore(self, inputs: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """gSDE's collection step: ``(mean, mean + z @ M, clamped log std of the marginal Gaussian)``."""
        x, _ = self.features(inputs)
        latent, mean = self.net.latent_and_mean(x)
        return mean, mean + self.sde.noise(latent), self.clamp_log_std(self.sde.std(latent).log())

    def act(self, inputs: Mapping[str, Any], *, role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        if self.sde is None or not self.sde.active:
            return super().act(inputs, role=role)
        mean, actions, log_std = self.explore(inputs)
        log_prob = Normal(mean, log_std.exp()).log_prob(actions).sum(dim=-1, keepdim=True)
        return actions, {"log_prob": log_prob, "log_std": log_std, "mean_actions": mean}

    def clamp_log_std(self, log_std: torch.Tensor) -> torch.Tensor:
        """``log_std`` clamped to ``[min_log_std, max_log_std]``, as skrl's ``GaussianMixin.act`` clamps it
        (what a policy with its own ``act``, SAC's squashed Gaussian, reuses)."""
        return torch.clamp(log_std, min=self._g_min_log_std, max=self._g_max_log_std)


class CategoricalPolicy(CategoricalMixin, EncodedModel):
    """Categorical over Discrete actions from MLP logits."""

    def __init__(
        self,
        observation_space: gym.Space,
        action_space: gym.Space,
        device: str,
        hidden_sizes: Sequence[int],
        activation: str = "tanh",
        encoder: nn.Module | None = None,
        recurrent: RecurrentSpec | None = None,
    ) -> None:
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        CategoricalMixin.__init__(self, unnormalized_log_prob=True)
        self.net = mlp(self.attach_encoder(encoder, observation_space, recurrent), hidden_sizes, self.num_actions, activation)

    def compute(self, inputs: Mapping[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        x, outputs = self.features(inputs)  # masked actions: zero probability (masked_values)
        return masked_values(self.net(x), self.action_mask(inputs["observations"])), outputs


class DeterministicModel(DeterministicMixin, EncodedModel):
    """An MLP with a deterministic output: a state value V(s) or, with ``with_actions``, Q(s, a).

    ``input_key`` picks what it reads: ``"observations"``, or ``"states"`` for a centralised critic
    (MAPPO). ``output_size`` defaults to 1; a DQN Q-network passes the number of actions (``dueling``: its
    MLP is ``DuelingMlp``; ``atoms``: a distributional head's outputs per action, ``output_size`` being actions x
    atoms). ``recurrent`` (observations only, without actions): a recurrent value.
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
        encoder: nn.Module | None = None,
        recurrent: RecurrentSpec | None = None,
        dueling: bool = False,
        atoms: int = 1,
    ) -> None:
        Model.__init__(
            self, observation_space=observation_space, state_space=state_space, action_space=action_space, device=device
        )
        DeterministicMixin.__init__(self, clip_actions=False)
        self.input_key = input_key
        self.with_actions = with_actions
        if recurrent is not None and (input_key != "observations" or with_actions):
            raise ValueError("a recurrent DeterministicModel reads observations only (a value V(s), not Q(s, a) or a state critic)")
        # Q(s, .) of a Discrete space (one output per action) of masked observations: masked actions are
        # never the argmax, the epsilon-greedy choice or the target's max (masked_values)
        self.masks_outputs = input_key == "observations" and not with_actions and output_size > 1 and output_size == getattr(action_space, "n", 0)
        if input_key == "states":  # a centralised critic reads the global state vector, never encoded
            self.attach_encoder(None, observation_space)
            self.mask_columns = None
            input_size = self.num_states
        else:
            input_size = self.attach_encoder(encoder, observation_space, recurrent)
        if with_actions:
            input_size += self.num_actions
        self.net = mlp_head(input_size, hidden_sizes, output_size, activation, dueling, atoms)

    def compute(self, inputs: Mapping[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        x, outputs = self.features(inputs, self.input_key)
        if self.with_actions:
            x = torch.cat([x, inputs["taken_actions"]], dim=-1)
        values = self.net(x)
        if self.masks_outputs:
            values = masked_values(values, self.action_mask(inputs[self.input_key]))
        return values, outputs


class DeterministicPolicy(DeterministicMixin, EncodedModel):
    """A deterministic policy for Box actions (TD3, DDPG): ``tanh(mlp(obs))`` scaled into the bounds."""

    def __init__(
        self,
        observation_space: gym.Space,
        action_space: gym.spaces.Box,
        device: str,
        hidden_sizes: Sequence[int],
        activation: str = "relu",
        encoder: nn.Module | None = None,
    ) -> None:
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        DeterministicMixin.__init__(self, clip_actions=False)
        self.net = mlp(self.attach_encoder(encoder, observation_space), hidden_sizes, self.num_actions, activation)
        low = torch.as_tensor(action_space.low, dtype=torch.float32)
        high = torch.as_tensor(action_space.high, dtype=torch.float32)
        self.register_buffer("center", (high + low) / 2)
        self.register_buffer("half_range", (high - low) / 2)

    def compute(self, inputs: Mapping[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        return self.center + self.half_range * torch.tanh(self.net(self.encode(inputs["observations"]))), {}


def stochastic_policy(
    observation_space: gym.Space,
    action_space: gym.Space,
    device: str,
    hidden_sizes: Sequence[int],
    activation: str = "tanh",
    initial_log_std: float = 0.0,
    encoder: nn.Module | None = None,
    recurrent: RecurrentSpec | None = None,
    gaussian_class: type[GaussianPolicy] | None = None,
    state_dependent: Any = None,
) -> Model:
    """A Categorical policy for Discrete actions, a Gaussian one for Box actions (``recurrent``: with an LSTM or
    GRU core after the encoder; ``gaussian_class``: a ``GaussianPolicy`` subclass, RPO's; ``state_dependent``:
    gSDE's noise for the Gaussian)."""
    if isinstance(action_space, gym.spaces.Discrete):
        return CategoricalPolicy(observation_space, action_space, device, hidden_sizes, activation, encoder=encoder, recurrent=recurrent)
    if isinstance(action_space, gym.spaces.Box):
        extra = {} if state_dependent is None else {"state_dependent": state_dependent}
        return (gaussian_class or GaussianPolicy)(
            observation_space, action_space, device, hidden_sizes, activation, initial_log_std, encoder=encoder, recurrent=recurrent,
            **extra,
        )
    raise TypeError(f"no default stochastic policy for action space {action_space}")


def value_model(
    observation_space: gym.Space,
    action_space: gym.Space,
    device: str,
    hidden_sizes: Sequence[int],
    activation: str = "tanh",
    encoder: nn.Module | None = None,
    recurrent: RecurrentSpec | None = None,
) -> DeterministicModel:
    """V(s): one output from the observations (``recurrent``: through an LSTM or GRU core of its own)."""
    return DeterministicModel(observation_space, action_space, device, hidden_sizes, activation, encoder=encoder, recurrent=recurrent)


def critic_values(agent: Any, roles: Sequence[str], inputs: Mapping[str, Any], actions: torch.Tensor) -> list[torch.Tensor]:
    """Q(s, a) of the agent's critics ``roles`` (``q_model``s, online or ``target_``), in that order: called one after
    another, or with ``agent.batched_critics`` (the setting ``batched_critics``) as one ensemble, one batched matmul
    per layer over their weights (``ensemble_forward``; ``batched_critics_refusal`` says when that cannot be)."""
    if getattr(agent, "batched_critics", False):
        x = torch.cat([inputs["observations"], actions], dim=-1)
        return list(ensemble_forward([getattr(agent, role).net for role in roles], x).unbind(0))
    return [getattr(agent, role).act({**inputs, "taken_actions": actions}, role=role)[0] for role in roles]


def batched_critics_refusal(critics: Sequence[Model]) -> str | None:
    """Why ``critics`` cannot be called as one batched ensemble (``None``: they can): each must be a ``q_model``
    reading the raw observation vector and the action through an ``mlp`` of the same shape."""
    for critic in critics:
        if not isinstance(critic, DeterministicModel) or not critic.with_actions or critic.input_key != "observations":
            return f"{type(critic).__name__} is not a Q(s, a) q_model"
        if critic.encoder is not None or critic.mask_columns is not None:
            return "the critics read their observations through an encoder (only the plain observation vector is batched)"
        if not plain_layers(critic.net):
            return "the critics are not plain MLPs (batch renormalisation, a dueling head)"
    shapes = {tuple(tuple(p.shape) for p in critic.net.parameters()) for critic in critics}
    return None if len(shapes) == 1 else "the critics' layers differ in shape"


def q_model(
    observation_space: gym.Space,
    action_space: gym.Space,
    device: str,
    hidden_sizes: Sequence[int],
    activation: str = "relu",
    encoder: nn.Module | None = None,
    dueling: bool = False,
    quantiles: int = 1,
) -> DeterministicModel:
    """Q(s, a) for Box actions (encoded observations and actions concatenated; ``quantiles`` outputs for a
    distributional critic, TQC's), or Q(s, ·) for Discrete actions (``dueling``: value and advantage layers,
    ``DuelingMlp``)."""
    if isinstance(action_space, gym.spaces.Discrete):
        if quantiles != 1:
            raise ValueError("quantiles is for Q(s, a) of a Box space; a distributional Q(s, .) subclasses DeterministicModel")
        return DeterministicModel(
            observation_space, action_space, device, hidden_sizes, activation, output_size=int(action_space.n), encoder=encoder,
            dueling=dueling,
        )
    if dueling:
        raise ValueError("a dueling head is for Discrete actions (one Q-value per action), not Q(s, a) of a Box space")
    return DeterministicModel(observation_space, action_space, device, hidden_sizes, activation, output_size=quantiles,
                              with_actions=True, encoder=encoder)  # fmt: skip


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
