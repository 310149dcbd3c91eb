"""Lean TorchRL losses: upstream's maths on upstream's parameters, without TensorDict on the hot path.

A TorchRL off-policy loss (``SACLoss``, ``TD3Loss``, ``IQLLoss``, ``CQLLoss``) keeps its networks'
parameters in ``TensorDictParams`` (the Q networks stacked ``[num_qvalue_nets, ...]``) and evaluates
them through ``to_module`` and ``vmap`` over tensordicts. At rlplug's sizes (64-256 hidden units,
batch 256, one CPU thread) the arithmetic is a few milliseconds and that plumbing about as much again:
a cProfile of one ``SACLoss`` step counts ~11,000 Python calls (``_to_module``, ``is_compiling``,
tensordict copies and locks), which is the 0.5-0.8 update floor BENCHMARKS.md reports.

A lean loss subclasses the upstream class, so its constructor, parameter groups
(``actor_network_params``, ``qvalue_network_params``, ``log_alpha`` ...), target parameters (which
``SoftUpdate`` / ``HardUpdate`` find), ``set_keys``, value estimator and ``state_dict`` are
upstream's, and overrides ``forward`` to compute the same terms from plain tensors: each network is
called with ``torch.func.functional_call`` on its inner ``nn.Module`` with its slice of the stacked
parameters (the ``addmm`` kernels a hand-written loop runs), random draws in upstream's order, so the
values match upstream's on the same batch and seed (tests/test_lean_losses.py). Configurations the
lean path does not cover (a multi-step estimator, priority weights, loss masks, ``reduction != "mean"``)
fall back to upstream's ``forward``.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn
from torch.nn import functional as F
from torch.func import functional_call
from torchrl.objectives.common import AUTO_LOSS_MASK_KEYS
from torchrl.objectives.value import TD0Estimator

from ...errors import RlplugError


def _inner(module: nn.Module) -> tuple[nn.Module, str]:
    """The ``nn.Module`` a ``TensorDictModule`` wraps (``ValueOperator``, ``Actor``) or, for a
    ``ProbabilisticActor``, the one its first ``TensorDictModule`` wraps, with its parameters' prefix."""
    inner = getattr(module, "module", None)
    if isinstance(inner, nn.ModuleList):  # ProbabilisticTensorDictSequential: [params module, distribution]
        return inner[0].module, "module.0.module."
    return inner, "module."


def _leaves(module: nn.Module, prefix: str = "") -> list[tuple[str, nn.Module]] | None:
    """The modules an ``nn.Sequential`` (nested ones flattened) applies in order, with their parameter
    prefixes; ``None`` when ``module`` is not a chain of single-input modules."""
    if isinstance(module, nn.Sequential):
        out: list[tuple[str, nn.Module]] = []
        for name, child in module.named_children():
            inner = _leaves(child, f"{prefix}{name}.")
            if inner is None:
                return None
            out += inner
        return out
    return [(prefix, module)]


class NetworkCall:
    """Calls a loss's network on tensors with a chosen parameter set (online, target, detached, or one
    member of a stack): ``call(params, *inputs, index=i)``.

    ``params`` is one of the loss's ``TensorDictParams``; the names under the network's prefix are
    read once and cached (the tensors are updated in place by optimisers, ``SoftUpdate`` and
    ``load_state_dict``; ``reset()`` after ``.to()``). rlplug's MLPs (an ``nn.Sequential``, or
    ``q_value_operator``'s concatenation in front of one) run layer by layer, ``F.linear`` on the
    chosen weights: ``torch.func.functional_call`` swaps every parameter into the module and back on
    each call, 10-15 % of a 64x64 TD3 step. Anything else (an encoder) goes through ``functional_call``.
    """

    def __init__(self, network: nn.Module) -> None:
        from .modules import _Concat

        self.module, self.prefix = _inner(network)
        self._names: dict[int, list[tuple[str, torch.Tensor]]] = {}
        self.concat = isinstance(self.module, _Concat)
        body, body_prefix = (self.module.net, "net.") if self.concat else (self.module, "")
        leaves = _leaves(body, body_prefix) if isinstance(body, nn.Sequential) else None
        self.plan: list[tuple[str, str, nn.Module]] | None = None
        if leaves is not None:
            self.plan = []
            for prefix, leaf in leaves:
                stateless = next(iter(leaf.parameters()), None) is None and next(iter(leaf.buffers()), None) is None
                kind = "linear" if type(leaf) is nn.Linear else "call" if stateless else "functional"
                self.plan.append((kind, prefix, leaf))

    @property
    def batchable(self) -> bool:
        """Whether ``stacked`` applies: the network is rlplug's MLP (linear layers and stateless activations)."""
        return self.plan is not None and all(kind in ("linear", "call") for kind, _, _ in self.plan)

    def stacked(self, params: TensorDictBase, *inputs: torch.Tensor, indices: Any = None, detach: bool = False) -> torch.Tensor:
        """Every member of a stacked parameter set (``[N, ...]``; ``indices``: those members) at the same inputs, as
        ``[N, B, out]``: one batched matmul per linear layer (``torch.baddbmm``) instead of a call per member."""
        named = self.named(params)
        mapping = {k: (v.detach() if detach else v) for k, v in named}
        if indices is not None:
            mapping = {k: v[list(indices)] for k, v in mapping.items()}
        x = torch.cat(inputs, dim=-1) if self.concat else inputs[0]
        x = x.expand(len(next(iter(mapping.values()))), *x.shape)
        for kind, prefix, leaf in self.plan:
            if kind == "linear":
                weight, bias = mapping[prefix + "weight"].transpose(1, 2), mapping.get(prefix + "bias")
                x = torch.bmm(x, weight) if bias is None else torch.baddbmm(bias.unsqueeze(1), x, weight)
            else:
                x = leaf(x)
        return x

    def reset(self) -> None:
        self._names.clear()

    def named(self, params: TensorDictBase) -> list[tuple[str, torch.Tensor]]:
        key = id(params)
        named = self._names.get(key)
        if named is None:
            cut = len(self.prefix)
            named = [(".".join(k) if isinstance(k, tuple) else k, v) for k, v in params.items(True, True)]
            named = [(k[cut:], v) for k, v in named if k.startswith(self.prefix)]
            self._names[key] = named
        return named

    def __call__(self, params: TensorDictBase, *inputs: torch.Tensor, index: int | None = None, detach: bool = False) -> Any:
        named = self.named(params)
        if index is not None:
            named = [(k, v[index]) for k, v in named]
        mapping = {k: (v.detach() if detach else v) for k, v in named}
        if self.plan is None:
            return functional_call(self.module, mapping, inputs, strict=False, tie_weights=False)
        x = torch.cat(inputs, dim=-1) if self.concat else inputs[0]
        for kind, prefix, leaf in self.plan:
            if kind == "linear":
                x = F.linear(x, mapping[prefix + "weight"], mapping.get(prefix + "bias"))
            elif kind == "call":
                x = leaf(x)
            else:
                local = {k[len(prefix):]: v for k, v in mapping.items() if k.startswith(prefix)}
                x = functional_call(leaf, local, (x,), strict=False, tie_weights=False)
        return x


def lean_applies(loss: Any, tensordict: TensorDictBase) -> bool:
    """Whether the lean ``forward`` computes what upstream's would: a TD(0) estimator, mean reduction,
    no priority weights and no loss mask in the batch. Otherwise the caller falls back to upstream."""
    if loss.reduction not in (None, "mean") or not isinstance(loss._value_estimator, (TD0Estimator, type(None))):
        return False
    mask_keys = AUTO_LOSS_MASK_KEYS if loss._loss_mask_key == "auto" else (loss._loss_mask_key,)
    weight_key = getattr(loss.tensor_keys, "priority_weight", None)
    return all(tensordict.get(k, None) is None for k in (*mask_keys, weight_key) if k is not None)


def td0_target(
    loss: Any, reward: torch.Tensor, terminated: torch.Tensor, next_value: torch.Tensor, steps: torch.Tensor | None = None
) -> torch.Tensor:
    """``reward + gamma * not terminated * next_value`` with the loss's estimator's gamma (TD(0)); with ``steps``
    (an n-step batch's ``"steps_to_next_obs"``), ``gamma ** steps``, as ``TD0Estimator`` does."""
    gamma = loss.value_estimator.gamma
    if steps is not None:
        gamma = gamma ** steps.view_as(reward)
    return reward + gamma * (~terminated).int() * next_value


def stacked_q(loss: Any, params: Any, observations: list[torch.Tensor], action: torch.Tensor, indices: Any, detach: bool = False) -> torch.Tensor:
    """Q(s, a) of the members ``indices`` of a loss's Q stack under ``params`` (online, target), ``[len(indices), B,
    out]``: one ``loss.q_call`` per member, or with ``loss.batched_critics`` one batched call (``NetworkCall.stacked``)."""
    if loss.batched_critics:
        return loss.q_call.stacked(params, *observations, action, indices=indices, detach=detach)
    return torch.stack([loss.q_call(params, *observations, action, index=i, detach=detach) for i in indices])


def use_batched_critics(loss: Any, enabled: bool) -> None:
    """The setting ``batched_critics`` on a TorchRL loss: a lean loss calls its Q stack as one batched ensemble; an
    upstream loss with a Q stack (``SACLoss``, ``TQCLoss``, ``REDQLoss``, ``CrossQLoss``) already calls it through
    ``vmap``; anything else is refused in one line."""
    if not enabled:
        return
    call = getattr(loss, "q_call", None)
    if call is None and getattr(loss, "num_qvalue_nets", 0) > 1:
        return  # upstream's own forward: its stacked critics go through vmap already
    if call is None or getattr(loss, "num_qvalue_nets", 0) < 1:
        raise RlplugError(f"batched_critics = true: {type(loss).__name__} has no stack of Q(s, a) critics; set batched_critics = false")
    if not call.batchable:
        raise RlplugError("batched_critics = true: the critics are not plain MLPs over the observation vector (an encoder, batch "
                          "renormalisation); set batched_critics = false")  # fmt: skip
    loss.batched_critics = True


class LeanLoss:
    """Mixin of every lean loss, placed before the upstream class: the ``NetworkCall`` attributes it holds
    are rebuilt when the loss moves device or dtype (``.to``, ``.double``). ``batched_critics``: whether its Q stack
    is called as one batched ensemble (``use_batched_critics``, ``stacked_q``)."""

    batched_critics = False

    def _apply(self, fn: Any) -> Any:
        for value in list(self.__dict__.values()):
            if isinstance(value, NetworkCall):
                value.reset()
        return super()._apply(fn)


class LeanQNetwork(LeanLoss):
    """``LeanLoss`` over one Q network (``value_network``: DQN, discrete CQL): ``self.q_call`` calls it
    on plain tensors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.q_call = NetworkCall(self.value_network)


class LeanActorCritic(LeanLoss):
    """``LeanLoss`` over a loss's ``actor_network`` and its stack of ``qvalue_network``s (SAC, CQL, IQL, and
    what derives from them), placed before the upstream class: ``actor_call`` and ``q_call`` (``NetworkCall``s)
    and the plain-tensor pieces a derived lean loss is written from:

    * ``qvalues(params, observations, action)``: every Q network of the stack, ``[num_qvalue_nets, B, 1]``;
    * ``actor_distribution(observations)``: the actor's distribution (``tanh_normal_actor``'s ``TanhNormal``),
      ``rsample_log_prob(dist)`` its reparameterised sample and log-probability;
    * ``entropy_coefficient`` (alpha, out of autograd, as upstream clamps it) and ``entropy_loss(log_prob)``
      (upstream's alpha loss, per sample) where the loss tunes an entropy coefficient (``log_alpha``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.actor_call = NetworkCall(self.actor_network)
        self.q_call = NetworkCall(self.qvalue_network)

    def qvalues(self, params: Any, observations: list[torch.Tensor], action: torch.Tensor, detach: bool = False) -> torch.Tensor:
        """Q(s, a) of each network of the stack under ``params`` (online, target), stacked ``[N, B, 1]``."""
        return stacked_q(self, params, observations, action, range(self.num_qvalue_nets), detach)

    def actor_distribution(self, observations: list[torch.Tensor], detach: bool = False) -> Any:
        """The actor's action distribution at ``observations`` under its online parameters (``detach``: out
        of autograd), built as the ``ProbabilisticActor`` builds it."""
        loc, scale = self.actor_call(self.actor_network_params, *observations, detach=detach)
        return actor_distribution(self.actor_network, loc, scale)

    @property
    def entropy_coefficient(self) -> torch.Tensor:
        """alpha, ``exp(log_alpha)`` clamped to the loss's bounds, out of autograd (upstream's ``_alpha``)."""
        return self._alpha

    def entropy_loss(self, log_prob: torch.Tensor) -> torch.Tensor:
        """Upstream's per-sample alpha loss, ``-log_alpha * (log_prob + target_entropy)``."""
        return self._alpha_loss(log_prob)


def actor_distribution(actor: Any, loc: torch.Tensor, scale: torch.Tensor) -> Any:
    """The distribution a ``ProbabilisticActor`` (``tanh_normal_actor``: a ``TanhNormal`` bounded by the
    action space) builds from its network's ``loc`` and ``scale``, on plain tensors."""
    module = actor.module[1]
    return module.distribution_class(loc, scale, **module.distribution_kwargs)


def rsample_log_prob(dist: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """A reparameterised sample of ``dist`` and its log-probability, as TorchRL's ``SACLoss`` draws them
    (``compute_rsample_log_prob``: for a ``TanhNormal``, the log-density of the squashed action)."""
    from torchrl.objectives.sac import compute_rsample_log_prob

    return compute_rsample_log_prob(dist)


def chosen_q(q: torch.Tensor, action: torch.Tensor, action_space: str) -> torch.Tensor:
    """Q(s, a) of the batch's actions: ``action`` an index (``"categorical"``, with or without a trailing
    1) or a one-hot."""
    if action_space == "categorical":
        return torch.gather(q, -1, action.unsqueeze(-1) if action.ndim != q.ndim else action).squeeze(-1)
    return (q * action.to(torch.float)).sum(-1)


def loss_output(terms: dict[str, torch.Tensor]) -> TensorDict:
    """The loss's scalar terms as a ``[]`` tensordict, as upstream's ``forward`` returns them."""
    return TensorDict._new_unsafe(terms, torch.Size([]))
