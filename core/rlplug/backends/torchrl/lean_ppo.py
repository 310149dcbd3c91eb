"""A lean ``ClipPPOLoss.forward``: upstream's terms from the actor's and critic's own networks on plain tensors.

A PPO update spends about three quarters of a TorchRL PPO step in the loss, and at rlplug's sizes (64x64 MLPs,
minibatches of a few hundred) most of that is tensordict plumbing around a few small matrix products: the
input's ``clone``, the actor's ``get_dist`` through ``ProbabilisticTensorDictSequential`` (interaction-type
lookups, a tensordict out), the critic's ``TensorDictModule`` call, the output's ``named_apply``.

``LeanClipPPOLoss`` is a mixin placed before ``ClipPPOLoss`` (or a subclass of it). Where ``lean_ppo_obstacle``
finds nothing it does not know, its ``forward`` runs the same operations as upstream's, in upstream's order, on
the tensors the batch holds: the actor's inner ``nn.Module`` on its in-keys, the distribution built as
``get_dist`` builds it, ``log_prob``, the clipped surrogate, upstream's own ``_get_entropy``,
``_weighted_loss_entropy``, ``_critic_loss_inputs``, ``distance_loss``, ``_clip_value_loss`` and
``_reduce_loss``. The values and gradients are upstream's bit for bit (tests/test_lean_losses.py). A recurrent
actor-critic (``recurrent.recurrent_actor_critic``) on a minibatch of sequences runs features, the torch RNN over
each stretch between episode starts (``recurrent.replay_sequences``) and the head, where upstream's core splits
and pads the tensordict at those starts: the same values and gradients to float rounding. Anything
else (a multi-module actor, ``MaskedCategorical`` or a composite distribution, a module with hooks,
the functional or delayed-actor modes, an advantage the loss must compute itself, loss masks, ``reduction !=
"mean"``) goes to upstream's ``forward``.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential, TensorDictModule, TensorDictSequential
from torch.distributions import Categorical
from torchrl._utils import _standardize
from torchrl.modules import GRUModule, IndependentNormal, LSTMModule
from torchrl.objectives.utils import _clip_value_loss, distance_loss

from .acting import _global_hooks, _hooked
from .lean import loss_output
from .recurrent import INIT_KEY, replay_sequences

# exact types: a subclass (MaskedCategorical) may read more than the parameters' keys
LEAN_DISTRIBUTIONS = (Categorical, IndependentNormal)


def _plain_module(module: Any) -> bool:
    """A ``TensorDictModule`` whose ``forward`` is upstream's: its inner module on the in-keys' tensors."""
    return (
        isinstance(module, TensorDictModule)
        and type(module).forward is TensorDictModule.forward
        and not getattr(module, "safe", False)
        and not getattr(module, "out_to_in_map", None)
        and getattr(module, "inplace", True) is True
    )


@dataclass(frozen=True)
class NetworkParts:
    """A network as the lean forward runs it: ``head``'s inner module on its in-keys (the actor's distribution
    parameters, or the critic's value); for a recurrent network (``recurrent.recurrent_actor_critic``) first
    ``features`` on the observations and ``core`` replaying the batch's sequences (``replay_sequences``)."""

    head: TensorDictModule
    features: TensorDictModule | None = None
    core: Any = None

    def modules(self) -> list[Any]:
        return [module for module in (self.features, self.core, self.head) if module is not None]

    def in_keys(self) -> list[Any]:
        if self.core is None:
            return list(self.head.in_keys)
        return [*self.features.in_keys, *self.core.in_keys[1:]]  # the observations, hidden states, is_init

    def __call__(self, tensordict: TensorDictBase) -> Any:
        if self.core is None:
            return self.head.module(*[tensordict.get(key) for key in self.head.in_keys])
        features = self.features.module(*[tensordict.get(key) for key in self.features.in_keys])
        *states, is_init = (tensordict.get(key) for key in self.core.in_keys[1:])
        return self.head.module(replay_sequences(self.core, features, states, is_init))


def _recurrent_parts(sequence: Any) -> NetworkParts | None:
    """``features -> core -> head`` of a ``TensorDictSequential``, each reading what the one before wrote."""
    if type(sequence) is not TensorDictSequential or len(sequence.module) != 3:
        return None
    features, core, head = sequence.module
    if not (_plain_module(features) and _plain_module(head) and type(core) in (LSTMModule, GRUModule)):
        return None
    if list(features.out_keys) != core.in_keys[:1] or list(head.in_keys) != core.out_keys[:1] or core.in_keys[-1] != INIT_KEY:
        return None
    return NetworkParts(head, features, core)


_PARTS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _cached(network: Any, read: Any) -> Any:
    """``read(network)``, read once per network (every minibatch asks)."""
    try:
        return _PARTS[network]
    except (KeyError, TypeError):
        pass
    parts = read(network)
    try:
        _PARTS[network] = parts
    except TypeError:
        pass
    return parts


def actor_parts(actor: Any) -> tuple[NetworkParts, ProbabilisticTensorDictModule] | None:
    """The actor's parameter network and distribution module, when it is one of each (rlplug's feed-forward or
    recurrent ``ProbabilisticActor``) with a known distribution; else ``None``."""
    return _cached(actor, _actor_parts)


def _actor_parts(actor: Any) -> tuple[NetworkParts, ProbabilisticTensorDictModule] | None:
    if not isinstance(actor, ProbabilisticTensorDictSequential) or actor.return_composite:
        return None
    modules = list(actor.module)
    if len(modules) != 2:
        return None
    params, dist = modules
    parts = NetworkParts(params) if _plain_module(params) else _recurrent_parts(params)
    if parts is None or type(dist).get_dist is not ProbabilisticTensorDictModule.get_dist:
        return None
    if dist.distribution_class not in LEAN_DISTRIBUTIONS or len(dist.dist_sample_keys) != 1:
        return None
    if set(dist.in_keys) != set(parts.head.out_keys):
        return None
    return parts, dist


def critic_parts(critic: Any, value_key: Any) -> NetworkParts | None:
    """The critic as the lean forward runs it: a plain value module, or ``features -> core -> value``."""
    parts = _cached(critic, lambda c: NetworkParts(c) if _plain_module(c) else _recurrent_parts(c))
    return parts if parts is not None and list(parts.head.out_keys) == [value_key] else None


def lean_ppo_obstacle(loss: Any, tensordict: Any) -> str | None:
    """Why the lean forward cannot compute what upstream's would on ``tensordict`` (``None``: it can)."""
    if not isinstance(tensordict, TensorDictBase) or tensordict.batch_dims not in (1, 2):
        return "the batch is not a flat tensordict or a batch of sequences"
    if loss.functional or loss.delay_actor or loss.max_importance_ratio is not None or loss.advantage_norm is not None:
        return "functional, delayed-actor, capped-ratio and advantage_norm modes are upstream's"
    if loss.reduction != "mean" or loss.separate_losses or loss._entropy_coeff_map is not None:
        return "a reduction other than mean, separate losses or per-head entropy coefficients"
    parts = actor_parts(loss.actor_network)
    if parts is None:
        return "the actor is not one parameter network and one known distribution"
    keys = loss.tensor_keys
    networks = [parts[0]]
    if loss._has_critic:
        critic = critic_parts(loss.critic_network, keys.value)
        if critic is None:
            return "the critic is not a plain value module or a recurrent value network"
        networks.append(critic)
    sequences = tensordict.batch_dims == 2  # a recurrent update's [sequences, steps]
    if any((network.core is not None) != sequences or (sequences and not network.core.recurrent_mode) for network in networks):
        return "a recurrent network outside recurrent mode, or a batch of sequences for a feed-forward one"
    modules = [loss.actor_network, parts[1], *(m for network in networks for m in network.modules())]
    if loss._has_critic:
        modules.append(loss.critic_network)
    if sequences:
        modules.append(loss.actor_network.module[0])
    if _global_hooks() or any(_hooked(module) for module in modules):
        return "a module has forward hooks"
    if not all(isinstance(key, (str, tuple)) for key in (keys.action, keys.sample_log_prob)):
        return "several action heads"
    needed = [keys.advantage, keys.action, keys.sample_log_prob, *parts[0].in_keys()]
    if loss._has_critic:
        needed += [keys.value_target, *networks[1].in_keys()] + ([keys.value] if loss.clip_value else [])
    values = [tensordict.get(key, None) for key in needed]
    if any(not isinstance(value, torch.Tensor) for value in values):
        return "the batch lacks an entry the lean forward reads (the advantage is computed upstream)"
    if values[0].shape != (*tensordict.batch_size, 1) or values[1].requires_grad or values[2].requires_grad:
        return "the advantage is not [B, 1], or the action or its log-probability requires grad"
    if any(tensordict.get(key, None) is not None for key in ("shifted_valid", *loss._loss_mask_keys())):
        return "the batch holds a loss mask"
    return None


class LeanClipPPOLoss:
    """Mixin before ``ClipPPOLoss``: its ``forward`` on plain tensors where ``lean_ppo_obstacle`` allows, else
    upstream's. ``lean_forward = False`` always takes upstream's. ``kl_approx(log_weight, kl_approx)`` is the
    hook a subclass changes the reported KL through (the lean path calls it; a subclass that overrides
    upstream's ``_log_weight`` calls it there too). ``_kl_approx`` is its former name, still honoured."""

    lean_forward = True

    def kl_approx(self, log_weight: torch.Tensor, kl_approx: torch.Tensor) -> torch.Tensor:
        """The reported KL estimate from the log importance weights and upstream's estimate (default: upstream's)."""
        return self._kl_approx(log_weight, kl_approx)

    def _kl_approx(self, log_weight: torch.Tensor, kl_approx: torch.Tensor) -> torch.Tensor:
        return kl_approx

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if not self.lean_forward or kwargs or len(args) != 1 or lean_ppo_obstacle(self, args[0]) is not None:
            return super().forward(*args, **kwargs)
        return self._lean_forward(args[0])

    def _lean_forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        # upstream's ClipPPOLoss.forward, PPOLoss._log_weight and PPOLoss.loss_critic, step for step and in
        # their order (the autograd graph's node order decides how gradients accumulate, so it is kept too)
        keys = self.tensor_keys
        advantage = tensordict.get(keys.advantage)
        if self.normalize_advantage and advantage.numel() > 1:
            advantage = _standardize(advantage, self.normalize_advantage_exclude_dims)

        prev_log_prob = tensordict.get(keys.sample_log_prob)
        network, dist_module = actor_parts(self.actor_network)
        out = network(tensordict)
        if isinstance(out, torch.Tensor):
            out = (out,)
        produced = dict(zip(network.head.out_keys, out))
        dist_kwargs = {}
        for dist_key, td_key in zip(dist_module.dist_keys, dist_module.in_keys):
            dist_kwargs[dist_key[-1] if isinstance(dist_key, tuple) else dist_key] = produced[td_key]
        dist = dist_module.distribution_class(**dist_kwargs, **dict(dist_module.distribution_kwargs))
        log_prob = dist.log_prob(tensordict.get(keys.action))
        log_weight = (log_prob - prev_log_prob).unsqueeze(-1)
        kl_approx = self.kl_approx(log_weight, (prev_log_prob - log_prob).unsqueeze(-1))

        with torch.no_grad():
            lw = log_weight.squeeze(-1)
            ess = (2 * lw.logsumexp(0) - (2 * lw).logsumexp(0)).exp()
            batch = log_weight.shape[0]
        gain1 = log_weight.exp() * advantage
        log_weight_clip = log_weight.clamp(*self._clip_bounds)
        clip_fraction = (log_weight_clip != log_weight).to(log_weight.dtype).mean()
        ratio = log_weight_clip.exp()
        gain2 = ratio * advantage
        gain = torch.stack([gain1, gain2], -1).min(dim=-1).values
        terms = {"loss_objective": -gain, "clip_fraction": clip_fraction, "kl_approx": kl_approx.detach().mean()}

        if self.entropy_bonus:
            entropy = self._get_entropy(dist, adv_shape=advantage.shape[:-1])
            terms["entropy"] = entropy.detach().mean()
            terms["loss_entropy"] = self._weighted_loss_entropy(entropy)
        if self._has_critic:
            terms.update(self._lean_critic_terms(tensordict))

        terms["ESS"] = ess / batch
        with torch.no_grad():
            ratio = log_weight.exp()
            terms["max_ratio"] = ratio.max()
            terms["mean_ratio"] = ratio.mean()
        for name, value in terms.items():
            if name.startswith("loss_"):
                terms[name] = self._reduce_loss(value).squeeze(-1)
        return loss_output(terms)

    def _lean_critic_terms(self, tensordict: TensorDictBase) -> dict[str, torch.Tensor]:
        keys = self.tensor_keys
        target_return = tensordict.get(keys.value_target)
        old_state_value = tensordict.get(keys.value) if self.clip_value else None
        state_value = critic_parts(self.critic_network, keys.value)(tensordict)
        target_return, state_value, old_state_value = self._critic_loss_inputs(target_return, state_value, old_state_value)
        loss_value = distance_loss(target_return, state_value, loss_function=self.loss_critic_type)
        terms: dict[str, torch.Tensor] = {}
        value_clip_fraction = None
        if self.clip_value:
            loss_value, value_clip_fraction = _clip_value_loss(
                old_state_value, state_value, self.clip_value, target_return, loss_value, self.loss_critic_type
            )
        terms["loss_critic"] = self.critic_coeff * loss_value
        if value_clip_fraction is not None:
            terms["value_clip_fraction"] = value_clip_fraction
        if self.log_explained_variance:
            with torch.no_grad():
                tgt, pred = target_return.detach(), state_value.detach()
                eps = torch.finfo(tgt.dtype).eps
                resid = torch.var(tgt - pred, correction=0, dim=0)
                total = torch.var(tgt, correction=0, dim=0)
                terms["explained_variance"] = 1.0 - resid / (total + eps)
        return terms
