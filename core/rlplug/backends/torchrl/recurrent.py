"""Recurrent actor-critics on TorchRL (PPO's ``recurrent = "lstm" | "gru"``): the modules, the env
transforms that carry their hidden states, the rollout cut into training sequences, and the hidden state
deterministic acting carries from one call to the next.

Actor and critic each read ``features -> core -> MLP head``: the features are the cell's observation
encoder (with the shared ``RunningNormalizer`` first, when standardising), or the observation itself for a
flat vector; the core is TorchRL's ``LSTMModule`` / ``GRUModule``. Each has its own core and hidden state
(skrl's PPO keeps a policy and a value state too). Collection (the lean path or TorchRL's collector) steps
actor and critic together, so both hidden states travel through the env's tensordicts: ``InitTracker`` marks each episode's first step
(``is_init``), the cores' ``TensorDictPrimer`` put zeros there, and every collected step stores the
hidden state it was acted from (root keys) and the one after it (``("next", key)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn
from torchrl.envs import EnvBase, InitTracker
from torchrl.modules import GRUModule, LSTMModule, ProbabilisticActor
from torchrl.modules.utils import get_primers_from_module

from ...envs.masks import feature_space
from ...errors import RecipeError
from ..common.encoders import observation_encoder
from ..common.nets import mlp
from .modules import EncodedNet, action_mask_key, observation_keys, stochastic_actor, value_operator

RNN_KINDS = ("lstm", "gru")
INIT_KEY = "is_init"
"""``InitTracker``'s key: true on the first step of an episode, where a core starts from zeros."""


def hidden_keys(role: str, kind: str) -> list[str]:
    """Where ``role``'s ("actor", "critic") hidden state lives in a step's tensordict: h (and an LSTM's c)."""
    return [f"{role}_rnn_h", f"{role}_rnn_c"] if kind == "lstm" else [f"{role}_rnn_h"]


def recurrent_core(kind: str, input_size: int, hidden_size: int, layers: int, role: str) -> LSTMModule | GRUModule:
    """``role``'s core: reads ``{role}_features`` and its hidden keys, writes ``{role}_core`` and the next hidden
    state under ``("next", key)``, where ``step_mdp`` carries it to the following step's root."""
    if kind not in RNN_KINDS:
        raise RecipeError(f"unknown recurrent core '{kind}': expected one of {', '.join(RNN_KINDS)}")
    keys = hidden_keys(role, kind)
    core = LSTMModule if kind == "lstm" else GRUModule
    return core(input_size=input_size, hidden_size=hidden_size, num_layers=layers,
                in_keys=[f"{role}_features", *keys], out_keys=[f"{role}_core", *(("next", key) for key in keys)])  # fmt: skip


def features_net(build: Any, normalizer: nn.Module | None) -> tuple[nn.Module, int]:
    """The observation features a core reads, and their width: the cell's encoder (``EncodedNet`` without a
    head reads the observation keys as the feed-forward networks do), or the flat observation itself."""
    encoder = observation_encoder(build)
    if encoder is None:
        net: nn.Module = nn.Identity()
        size = int(np.prod(feature_space(build.observation_space).shape))  # an action mask is no feature
    else:
        net, size = EncodedNet(encoder, nn.Identity(), observation_keys(build)), int(encoder.features)
    return (net if normalizer is None else nn.Sequential(normalizer, net)), size


def recurrent_actor_critic(build: Any, normalizer: nn.Module | None) -> dict[str, nn.Module]:
    """Actor (Categorical or Gaussian) and critic, each ``features -> LSTM/GRU -> MLP head``, from the
    settings ``recurrent``, ``recurrent_hidden_size``, ``recurrent_layers``, ``hidden_sizes``, ``activation``
    and ``initial_log_std``; ``normalizer`` (or ``None``) comes first in both."""
    s = build.settings
    kind, width, layers = s["recurrent"], int(s["recurrent_hidden_size"]), int(s["recurrent_layers"])
    keys = observation_keys(build)

    def before(role: str) -> list[TensorDictModule]:
        net, size = features_net(build, normalizer)
        features = TensorDictModule(net, in_keys=keys, out_keys=[f"{role}_features"])
        return [features, recurrent_core(kind, size, width, layers, role)]

    def head(output_size: int) -> nn.Module:
        return mlp(width, s["hidden_sizes"], output_size, s["activation"])

    # an action mask reaches the head's MaskedCategorical from the step's tensordict, beside the core's output
    actor = stochastic_actor(head, build.action_space, s["initial_log_std"], "actor_core", before("actor"),
                             mask_key=action_mask_key(build))
    # the critic returns its value only: the loss's estimator, with skip_existing, then skips it as it skips a
    # feed-forward critic when the values are in the batch already (the trainer computes them itself)
    critic = TensorDictSequential(*before("critic"), value_operator(head(1), "critic_core"), selected_out_keys=["state_value"])
    return {"actor": actor, "critic": critic}


def rollout_policy(actor: nn.Module, critic: TensorDictSequential) -> TensorDictSequential:
    """What the collector steps: the actor, then the critic with every output kept, so the next hidden
    states of both reach ``("next", key)`` and from there the following step."""
    return TensorDictSequential(actor, TensorDictSequential(*critic.module))


def torch_rnn(core: LSTMModule | GRUModule) -> nn.LSTM | nn.GRU:
    """The ``nn.LSTM`` / ``nn.GRU`` a TorchRL core runs."""
    return core.lstm if isinstance(core, LSTMModule) else core.gru


def is_recurrent(actor: nn.Module) -> bool:
    return any(isinstance(m, (LSTMModule, GRUModule)) for m in actor.modules())


def cores(module: nn.Module) -> list[LSTMModule | GRUModule]:
    return [m for m in module.modules() if isinstance(m, (LSTMModule, GRUModule))]


def module_hidden_keys(module: nn.Module) -> list[str]:
    """The root hidden keys of every core in ``module`` (its in-keys between the features and ``is_init``)."""
    return [key for core in cores(module) for key in core.in_keys[1:] if key != INIT_KEY]


def carry_hidden_states(env: EnvBase, policy: nn.Module) -> EnvBase:
    """``env`` with ``InitTracker`` and the primers of ``policy``'s cores appended: resets write ``is_init``
    and zero hidden states, steps carry ``("next", key)`` to the next root (TorchRL's recurrent recipe)."""
    env.append_transform(InitTracker(INIT_KEY))
    env.append_transform(get_primers_from_module(policy))
    return env


# ---- training sequences -------------------------------------------------------------------------


def sequence_count(settings: Any, num_envs: int) -> tuple[int, int]:
    """``(sequences per rollout, sequences per minibatch)``: each env's ``rollout_steps`` cut into whole
    sequences of ``sequence_length``; a minibatch holds ``minibatch_size // sequence_length`` of them (at least
    one). Refused when ``sequence_length`` does not divide an env's rollout."""
    length, frames = int(settings["sequence_length"]), int(settings["frames_per_batch"])
    steps = frames // num_envs
    if steps % length:
        raise RecipeError(
            f"sequence_length {length} does not divide rollout_steps {steps}: the TorchRL update replays each env's "
            f"rollout in whole sequences (choose a divisor of {steps}, e.g. {_divisor_near(steps, length)})"
        )
    return frames // length, max(1, int(settings["minibatch_size"]) // length)


def _divisor_near(n: int, length: int) -> int:
    return min((d for d in range(1, n + 1) if n % d == 0), key=lambda d: (abs(d - length), -d))


def cut_sequences(batch: TensorDictBase, length: int) -> TensorDictBase:
    """A ``[num_envs, steps]`` rollout as ``[num_envs * steps // length, length]`` sequences, each one env's
    consecutive steps: a core replays one from the hidden state stored at its first step, and starts again
    from zeros where ``is_init`` marks a new episode inside it."""
    envs, steps = batch.shape
    return batch.reshape(envs, steps // length, length).reshape(envs * (steps // length), length)


def value_inputs(batch: TensorDictBase, observation_keys: Sequence[Any], critic_keys: Sequence[str]) -> TensorDict:
    """``[2, *batch]``: every step's observation with the critic's hidden state it was acted from, then its
    next observation with the state after it, for one step-wise critic call (the hidden states the rollout
    stored make it the same as replaying each env's steps in order)."""
    parts = {key: torch.stack([batch[key], batch["next", key]]) for key in [*observation_keys, *critic_keys]}
    parts[INIT_KEY] = torch.stack([batch[INIT_KEY], torch.zeros_like(batch[INIT_KEY])])
    return TensorDict(parts, batch_size=[2, *batch.shape])


def replay_sequences(core: LSTMModule | GRUModule, features: torch.Tensor, states: Sequence[torch.Tensor],
                     is_init: torch.Tensor) -> torch.Tensor:
    """``core``'s outputs ``[S, L, hidden]`` over ``S`` sequences of ``L`` steps (``features`` ``[S, L, F]``), each
    from the state stored at its first step (``states``: h (and c), ``[S, L, layers, hidden]``), starting again from
    zeros at every step ``is_init`` (``[S, L, 1]``) marks: what the core computes in TorchRL's recurrent mode,
    without its split-and-pad of the tensordict. The torch RNN runs once per stretch between such steps (over all
    sequences at once, the sequences whose episode starts there zeroed first), as skrl's recurrent models do."""
    rnn = torch_rnn(core)
    starts = is_init.squeeze(-1)
    carried = [state[:, 0].transpose(0, 1).contiguous() for state in states]  # [layers, S, hidden]
    cuts = [0, *(starts[:, 1:].any(dim=0).nonzero(as_tuple=True)[0] + 1).tolist(), features.shape[1]]
    outputs = []
    for start, stop in zip(cuts[:-1], cuts[1:]):
        if start:
            keep = (~starts[:, start]).to(features.dtype).view(1, -1, 1)
            carried = [state * keep for state in carried]  # out of place: autograd keeps the originals
        output, hidden = rnn(features[:, start:stop], tuple(carried) if len(carried) == 2 else carried[0])
        carried = list(hidden) if isinstance(hidden, tuple) else [hidden]
        outputs.append(output)
    return outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=1)


# ---- deterministic acting -----------------------------------------------------------------------


class ActingState:
    """The actor's hidden state between ``act_deterministic`` calls: zeros for a new batch (after ``reset``, or
    when the batch size changes), then each call's next state."""

    def __init__(self, actor: nn.Module) -> None:
        self.keys = module_hidden_keys(actor)
        self.shapes = {key: shape for core in cores(actor) for key, shape in core_shapes(core).items()}
        self.state: TensorDict | None = None

    def reset(self) -> None:
        self.state = None

    def inputs(self, observations: TensorDict) -> TensorDict:
        """``observations`` with the hidden state the batch's episodes are in."""
        size = observations.batch_size
        if self.state is None or self.state.batch_size != size:
            device = observations.device
            self.state = TensorDict({key: torch.zeros(*size, *shape, device=device) for key, shape in self.shapes.items()},
                                    batch_size=size, device=device)  # fmt: skip
        observations.update(self.state)
        observations.set(INIT_KEY, torch.zeros(*size, 1, dtype=torch.bool, device=observations.device))
        return observations

    def carry(self, output: TensorDictBase) -> None:
        self.state = TensorDict({key: output["next", key] for key in self.keys}, batch_size=output.batch_size,
                                device=output.device)  # fmt: skip


def core_shapes(core: LSTMModule | GRUModule) -> dict[str, tuple[int, int]]:
    """``{hidden key: (layers, hidden size)}`` of one core."""
    rnn = torch_rnn(core)
    keys = [key for key in core.in_keys[1:] if key != INIT_KEY]
    return {key: (rnn.num_layers, rnn.hidden_size) for key in keys}


def state_shape(actor: nn.Module) -> tuple[int, int]:
    """``(layers, width)`` of the actor's hidden state as the exported policy takes it: an LSTM's h and c side
    by side (``width = 2 x hidden size``), a GRU's h."""
    (core,) = cores(actor)
    shapes = list(core_shapes(core).values())
    return shapes[0][0], sum(shape[1] for shape in shapes)


def actor_parts(actor: ProbabilisticActor) -> tuple[nn.Module, nn.Module, TensorDictModule, Any]:
    """``(features net, torch RNN, head params module, sampler)`` of a ``recurrent_actor_critic`` actor."""
    sequence, sampler = actor.module[0], actor.module[-1]
    features, core, params = sequence.module
    return features.module, torch_rnn(core), params, sampler
