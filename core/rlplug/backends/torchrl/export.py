"""Exporting a TorchRL cell's deterministic policy (``Trainer.export_policy``): the network inside the
actor (its ``RunningNormalizer`` and encoder included) and what TorchRL's DETERMINISTIC exploration mode
makes of its output, as one ``ExportedPolicy`` of plain torch modules (no tensordict at run time)."""

from __future__ import annotations

import copy
from typing import Any

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn
from torch.distributions import Categorical
from torchrl.modules import (
    DistributionalQValueActor,
    IndependentNormal,
    MaskedCategorical,
    MultiAgentMLP,
    ProbabilisticActor,
    QValueActor,
    QValueModule,
    TanhNormal,
)

from ...envs.masks import ACTION_MASK_KEY
from ...errors import ExportUnsupportedError
from ..common.export import Argmax, ClampToBounds, ExportedPolicy, MaskedArgmax, policy_signature


class Loc(nn.Module):
    """A Gaussian's deterministic action: its ``loc`` (the first of the ``(loc, scale)`` pair)."""

    def forward(self, loc_scale: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return loc_scale[0]


class SupportMean(nn.Module):
    """A distributional Q network's means: ``net``'s log-probabilities ``[..., atoms, actions]`` (TorchRL's layout)
    weighted by the support, one Q-value per action (what ``DistributionalQValueModule`` takes the argmax of)."""

    def __init__(self, net: nn.Module, support: torch.Tensor) -> None:
        super().__init__()
        self.net = net
        self.register_buffer("support", support.detach().clone().unsqueeze(-1))

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return (self.net(*inputs).exp() * self.support).sum(-2)


class TanhNormalMode(nn.Module):
    """``TanhNormal``'s deterministic sample: ``center + half_range * tanh(loc)``, the tanh kept off ±1 as
    TorchRL's safe tanh keeps it (``1 - finfo(float32).resolution``)."""

    def __init__(self, low: torch.Tensor, high: torch.Tensor) -> None:
        super().__init__()
        low, high = torch.as_tensor(low, dtype=torch.float32), torch.as_tensor(high, dtype=torch.float32)
        self.register_buffer("center", (high + low) / 2)
        self.register_buffer("half_range", (high - low) / 2)
        self.limit = 1.0 - torch.finfo(torch.float32).resolution

    def forward(self, loc_scale: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        squashed = torch.tanh(loc_scale[0]).clamp(-self.limit, self.limit)
        return self.center + self.half_range * squashed


class TorchRLDeterministicPolicy(nn.Module):
    """``bounds(then(net(*observations)))``: an actor's network, its deterministic action, an optional clamp."""

    def __init__(self, net: nn.Module, then: nn.Module, bounds: nn.Module | None = None) -> None:
        super().__init__()
        self.net, self.then = net, then
        self.bounds = bounds if bounds is not None else nn.Identity()

    def forward(self, *observations: torch.Tensor) -> torch.Tensor:
        return self.bounds(self.then(self.net(*observations)))


class AgentNets(nn.Module):
    """A decentralised ``MultiAgentMLP`` as plain modules: ``[..., n_agents, obs]`` in, each agent's network
    (one shared by all, or one per agent) on its own observation, ``[..., n_agents, out]`` out. TorchRL's
    module runs its per-agent networks through ``torch.vmap`` over a ``TensorDictParams``, which neither
    tracing nor the ONNX exporter takes."""

    def __init__(self, nets: list[nn.Module], shared: bool) -> None:
        super().__init__()
        self.nets = nn.ModuleList(nets)
        self.shared = shared

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        if self.shared:
            return self.nets[0](observations)
        return torch.stack([net(observations[..., i, :]) for i, net in enumerate(self.nets)], dim=-2)


def agent_nets(module: MultiAgentMLP) -> AgentNets:
    """``module``'s networks with a copy of its current weights (an export is a snapshot)."""
    if module.centralized or module.agent_dim != -2:
        raise ExportUnsupportedError("only decentralised multi-agent policies (each agent reads its own observation) can be exported")
    nets = []
    for i in range(1 if module.share_params else module.n_agents):
        params = module.params if module.share_params else module.params[i]
        net = copy.deepcopy(module._empty_net)  # its weights are meta tensors: put a copy of the agent's in
        for key, value in params.flatten_keys(".").items():
            path, _, name = key.rpartition(".")
            owner = net.get_submodule(path)
            for slots in (owner._parameters, owner._buffers, owner.__dict__):
                slots.pop(name, None)
            owner.register_parameter(name, nn.Parameter(value.detach().clone(), requires_grad=False))
        nets.append(net)
    return AgentNets(nets, module.share_params)


def _plain(module: nn.Module) -> nn.Module:
    """``module`` with its ``MultiAgentMLP`` (itself, or a step of an ``nn.Sequential``) made ``AgentNets``."""
    if isinstance(module, MultiAgentMLP):
        return agent_nets(module)
    if isinstance(module, nn.Sequential) and any(isinstance(m, MultiAgentMLP) for m in module):
        return nn.Sequential(*(_plain(m) for m in module))
    if any(isinstance(m, MultiAgentMLP) for m in module.modules()):
        raise ExportUnsupportedError(f"a MultiAgentMLP inside a {type(module).__name__} cannot be exported")
    return module


def deterministic_head(actor: nn.Module) -> tuple[nn.Module, nn.Module]:
    """``(net, then)`` of a TorchRL actor built by this package's factories: a ``QValueActor`` (argmax of
    Q), a ``DistributionalQValueActor`` whose network gives log-probabilities (argmax of their means on the
    support), a ``ProbabilisticActor`` over a ``Categorical`` (argmax of the logits), an ``IndependentNormal``
    (its loc) or a ``TanhNormal`` (the squashed loc), a ``TensorDictModule`` writing ``"action"``
    itself (TD3's ``deterministic_actor``), or a Q network followed by a ``QValueModule`` (argmax of Q; QMIX's
    per-agent networks). Anything else raises ``ExportUnsupportedError``."""
    if isinstance(actor, DistributionalQValueActor) and not actor.make_log_softmax:  # the network's log-probabilities
        return SupportMean(actor.module[0].module, actor.support), Argmax()
    if isinstance(actor, QValueActor) and not isinstance(actor, DistributionalQValueActor):
        return actor.module[0].module, Argmax()
    if (isinstance(actor, TensorDictSequential) and len(actor.module) == 2 and isinstance(actor.module[0], TensorDictModule)
            and isinstance(actor.module[1], QValueModule)):  # Q values then their argmax under a group's keys (QMIX's)
        return actor.module[0].module, Argmax()
    if isinstance(actor, ProbabilisticActor):
        params, sampler = actor.module[0], actor.module[-1]
        if not isinstance(params, TensorDictModule):
            raise ExportUnsupportedError(f"the actor's parameter module is a {type(params).__name__}, not one TensorDictModule")
        return params.module, distribution_mode(sampler)
    if isinstance(actor, TensorDictModule) and len(actor.out_keys) == 1:
        return actor.module, nn.Identity()
    raise ExportUnsupportedError(f"a {type(actor).__name__} actor cannot be exported")


def distribution_mode(sampler: Any) -> nn.Module:
    """What DETERMINISTIC exploration makes of a ``ProbabilisticActor``'s distribution parameters: the argmax
    of a ``Categorical``'s logits, an ``IndependentNormal``'s loc, a ``TanhNormal``'s squashed loc."""
    kind, kwargs = sampler.distribution_class, dict(sampler.distribution_kwargs or {})
    if kind in (Categorical, MaskedCategorical):  # the mask, an input of its own, is applied by torchrl_policy_export
        return Argmax()
    if kind is IndependentNormal and not kwargs.get("tanh_loc", False):
        return Loc()
    if kind is TanhNormal and not kwargs.get("tanh_loc", False) and {"low", "high"} <= set(kwargs):
        return TanhNormalMode(kwargs["low"], kwargs["high"])
    raise ExportUnsupportedError(f"the deterministic action of a {kind.__name__} actor with {sorted(kwargs)} cannot be exported")


def torchrl_policy_export(build: Any, actor: nn.Module, clamp: bool = False) -> ExportedPolicy:
    """The ``ExportedPolicy`` of a TorchRL cell whose ``act_deterministic`` is ``actor``'s action in
    DETERMINISTIC exploration mode (``deterministic_actions``), clamped into the Box action bounds with
    ``clamp`` (the on-policy cells' Gaussians are unbounded).

    The network takes the observation keys positionally, in the order the actor reads them (a Dict's
    keys sorted, as the exported inputs are); an action mask is an input too, and the action the argmax of
    the valid ones (``MaskedArgmax``). The module shares the trainer's parameters (a
    ``MultiAgentMLP``'s are copied, see ``agent_nets``): save it (``rlplug export``) before training on.
    """
    net, then = deterministic_head(actor)
    net = _plain(net)
    signature = policy_signature(build)
    names = [spec["name"] for spec in signature["inputs"]]
    if ACTION_MASK_KEY in names:  # the argmax over the valid actions; the network reads the other inputs
        return ExportedPolicy(MaskedArgmax(net, names.index(ACTION_MASK_KEY)), signature)
    if clamp and signature["action"]["kind"] == "box":
        bounds = ClampToBounds(build.action_space.low, build.action_space.high)
    else:
        bounds = None
    return ExportedPolicy(TorchRLDeterministicPolicy(net, then, bounds), signature)


# ---- recurrent actors (recurrent.py) --------------------------------------------------------------


class RecurrentDeterministicPolicy(nn.Module):
    """``(*observations, hidden) -> (action, hidden)`` of a ``features -> LSTM / GRU -> head`` actor, one step.

    ``hidden`` is float32 ``[B, layers, width]``: a GRU's h, or an LSTM's h then c on the last axis
    (``width = 2 x hidden size``); zeros start an episode. The torch RNN is the one inside TorchRL's
    ``LSTMModule`` / ``GRUModule`` (batch first), run on a sequence of one step. With ``mask_index`` the
    observation input there is the action mask: the features read the others, and the action is the argmax
    of the valid actions' logits (``MaskedArgmax``'s rule)."""

    def __init__(
        self, features: nn.Module, rnn: nn.Module, head: nn.Module, then: nn.Module, bounds: nn.Module | None,
        mask_index: int | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.features, self.rnn, self.head, self.then = features, rnn, head, then
        self.bounds = bounds if bounds is not None else nn.Identity()
        self.lstm = isinstance(rnn, nn.LSTM)
        self.mask_index = mask_index

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = inputs[-1].transpose(0, 1)  # the RNN's [layers, B, width]
        observations, i = inputs[:-1], self.mask_index
        if i is not None:
            observations = (*observations[:i], *observations[i + 1 :])
        x = self.features(*observations).unsqueeze(1)
        if self.lstm:
            h, c = hidden.chunk(2, dim=-1)
            y, (h, c) = self.rnn(x, (h.contiguous(), c.contiguous()))
            hidden = torch.cat([h, c], dim=-1)
        else:
            y, hidden = self.rnn(x, hidden.contiguous())
        out = self.head(y.squeeze(1))
        if i is not None:
            out = out.masked_fill(inputs[i] < 0.5, torch.finfo(out.dtype).min)
        action = self.bounds(self.then(out))
        return action, hidden.transpose(0, 1)


def recurrent_policy_export(build: Any, actor: ProbabilisticActor, clamp: bool = False) -> ExportedPolicy:
    """The ``ExportedPolicy`` of a recurrent TorchRL actor (``recurrent.recurrent_actor_critic``): one more
    input after the observations, ``hidden`` (float32 ``[B, layers, width]``), and the next hidden state
    returned after the action, as ``rlplug.backends.common.export`` lays it out for both backends."""
    from .recurrent import actor_parts, state_shape

    features, rnn, params, sampler = actor_parts(actor)
    signature = policy_signature(build, hidden=state_shape(actor))
    bounds = ClampToBounds(build.action_space.low, build.action_space.high) if clamp and signature["action"]["kind"] == "box" else None
    names = [spec["name"] for spec in signature["inputs"]]
    mask_index = names.index(ACTION_MASK_KEY) if ACTION_MASK_KEY in names else None
    policy = RecurrentDeterministicPolicy(features, rnn, params.module, distribution_mode(sampler), bounds, mask_index)
    return ExportedPolicy(policy, signature)


def plain_act(trainer: Any) -> Any:
    """``trainer.act_deterministic`` computed by its exported module (the same parameters, modules and
    deterministic head, so the same actions) without building a TensorDict and running the probabilistic
    actor on each call: a quarter of the time a step on CartPole (``benchmarks/eval_speed.py``). A recurrent
    actor, several observation inputs (a Dict space, an action mask) or a cell without an export keep
    ``act_deterministic``."""
    try:
        policy = trainer.export_policy()
    except ExportUnsupportedError:
        return trainer.act_deterministic
    if not isinstance(policy, ExportedPolicy) or policy.recurrent or len(policy.input_names) != 1:
        return trainer.act_deterministic
    device = trainer.build.device

    def act(observations: Any) -> Any:
        with torch.no_grad():
            return policy(torch.as_tensor(observations, device=device)).cpu().numpy()

    return act

