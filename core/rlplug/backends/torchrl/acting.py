"""An exploration policy run on plain tensors: what the lean collection calls at every env step.

A TorchRL policy is a tree of tensordict modules. Calling it on the carrier costs 0.2-0.4 ms a step at
rlplug's sizes on the 2-core box, most of it tensordict plumbing (dispatch, key checks, interaction-type
lookups) around a few small matrix products. ``tensor_policy(policy)`` walks the tree once and, when it
knows every module in it, returns a ``TensorPolicy``: the same modules' maths, in the same order, on a
dict of tensors by key. Each step is upstream's own code where upstream has it as a function (the inner
``nn.Module``, ``_dist_sample``, ``sample_and_log_prob``, ``AdditiveGaussianModule._add_noise``, the
``QValueModule``'s action mapping, a spec's ``rand``), so the actions and every random draw are the
policy's (tests/test_torchrl_lean_collection.py compares the collected data with the collector's).

Known modules: ``TensorDictSequential`` and the probabilistic sequence (run in order), ``TensorDictModule``
(and subclasses that keep its ``forward``), ``ProbabilisticTensorDictModule`` / ``SafeProbabilisticModule``
in RANDOM mode, ``AdditiveGaussianModule``, ``EGreedyModule``, ``QValueModule`` and
``DistributionalQValueModule`` (all three with an action mask, read from the inputs like an observation), ``LSTMModule`` / ``GRUModule`` stepping (their hidden states and
``is_init`` read from the inputs, the next states written to ``("next", key)``), and any module that offers ``tensor_step(batch_size)`` itself (a
cell's own exploration module: DQN's per-step epsilon builds on ``egreedy_step``). A module with forward
hooks, a ``safe`` projection, a generator, an input no earlier step provides, or anything else unknown
makes ``tensor_policy`` return ``None``: the
collection then calls the policy on its tensordict, as the collector does (OU noise, whose state lives in
the carrier, always does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict.nn import (
    CompositeDistribution,
    InteractionType,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictSequential,
)
from tensordict.utils import expand_as_right
from torch import nn
from torchrl.data import Composite
from torchrl.modules import AdditiveGaussianModule, DistributionalQValueModule, EGreedyModule, GRUModule, LSTMModule, QValueModule
from torchrl.modules.distributions.utils import sample_and_log_prob
from torchrl.modules.tensordict_module.probabilistic import SafeProbabilisticModule

from .recurrent import torch_rnn

Values = dict[Any, torch.Tensor]
Step = Callable[[Values], None]


class TensorPolicy:
    """``policy(values)``: runs the steps on ``values`` (tensors by tensordict key, updated in place).
    ``hooked()``: whether a forward hook was registered on one of the modules since (the caller then calls
    the policy itself, so the hook runs)."""

    def __init__(self, steps: list[Step], modules: list[nn.Module]) -> None:
        self.steps, self.modules = steps, modules

    def hooked(self) -> bool:
        return _global_hooks() or any(_hooked(module) for module in self.modules)

    def __call__(self, values: Values) -> Values:
        for step in self.steps:
            step(values)
        return values


def tensor_policy(policy: nn.Module, inputs: Sequence[Any], batch_size: torch.Size) -> TensorPolicy | None:
    """The policy's ``TensorPolicy`` (acting in RANDOM exploration mode on ``inputs``, the observation keys,
    for a batch of ``batch_size`` envs), or ``None`` when a module of it is not one this module knows how to
    run on tensors, or reads a key neither the inputs nor an earlier module provide."""
    steps: list[Step] = []
    available = set(inputs)
    if not _compile(policy, steps, available, torch.Size(batch_size)) or "action" not in available:
        return None
    return TensorPolicy(steps, list(policy.modules()))


def _hooked(module: nn.Module) -> bool:
    return bool(module._forward_hooks or module._forward_pre_hooks)


def _global_hooks() -> bool:
    from torch.nn.modules import module as torch_module

    return bool(torch_module._global_forward_hooks or torch_module._global_forward_pre_hooks)


def _compile(module: nn.Module, steps: list[Step], available: set[Any], batch_size: torch.Size) -> bool:
    """Appends ``module``'s steps; ``available``: the keys the steps so far can read (grows with the outputs)."""
    if _hooked(module) or _global_hooks():
        return False
    kind = type(module)
    if kind.forward in (TensorDictSequential.forward, ProbabilisticTensorDictSequential.forward):
        if getattr(module, "partial_tolerant", False) or getattr(module, "_selected_out_keys", None):
            return False
        if isinstance(module, ProbabilisticTensorDictSequential) and (module.return_composite or not module._requires_sample):
            return False
        return all(_compile(child, steps, available, batch_size) for child in module.module)
    own = getattr(module, "tensor_step", None)
    if callable(own):
        step = own(batch_size)
    elif kind.forward is TensorDictModule.forward:
        step = _module_step(module)
    elif kind.forward in (ProbabilisticTensorDictModule.forward, SafeProbabilisticModule.forward):
        step = _sampling_step(module)
    elif kind.forward is AdditiveGaussianModule.forward:
        key = module.action_key
        step = lambda values: values.__setitem__(key, module._add_noise(values[key]))  # noqa: E731
    elif kind.forward is EGreedyModule.forward:
        step = egreedy_step(module, batch_size)
    elif kind.forward is QValueModule.forward:
        step = _qvalue_step(module)
    elif kind.forward is DistributionalQValueModule.forward:
        step = _distributional_step(module)
    elif kind in (LSTMModule, GRUModule):
        step = _recurrent_step(module)
    else:
        step = None
    if step is None or not set(module.in_keys) <= available:
        return False
    available.update(module.out_keys)
    steps.append(step)
    return True


def _module_step(module: TensorDictModule) -> Step | None:
    """``TensorDictModule.forward``: the inner module on the in-keys' tensors, its outputs to the out-keys."""
    if getattr(module, "safe", False) or getattr(module, "out_to_in_map", None) or getattr(module, "inplace", True) is not True:
        return None
    inner, in_keys, out_keys = module.module, list(module.in_keys), list(module.out_keys)

    def step(values: Values) -> None:
        out = inner(*[values[key] for key in in_keys])
        if isinstance(out, torch.Tensor):
            out = (out,)
        for key, value in zip(out_keys, out):
            values[key] = value

    return step


def _sampling_step(module: ProbabilisticTensorDictModule) -> Step | None:
    """A distribution from the in-keys' tensors, sampled as upstream samples in RANDOM mode: with its
    log-probability (``sample_and_log_prob``) when the module returns one, else ``_dist_sample``."""
    if getattr(module, "safe", False) or module.num_samples is not None or len(module.dist_sample_keys) != 1:
        return None
    if getattr(module, "_generator", None) is not None or getattr(module, "_generator_key", None) is not None:
        return None
    if isinstance(module.distribution_class, type) and issubclass(module.distribution_class, CompositeDistribution):
        return None
    names = [key[-1] if isinstance(key, tuple) else key for key in module.dist_keys]
    in_keys, out_key, kwargs = list(module.in_keys), module.dist_sample_keys[0], module.distribution_kwargs
    with_log_prob = module.return_log_prob and type(module).forward is SafeProbabilisticModule.forward
    log_prob_key = module.log_prob_key if module.return_log_prob else None

    def step(values: Values) -> None:
        dist = module.distribution_class(**{name: values[key] for name, key in zip(names, in_keys)}, **kwargs)
        if with_log_prob:
            sample, log_prob = sample_and_log_prob(dist, torch.Size(), reparameterize=dist.has_rsample)
        else:
            sample = module._dist_sample(dist, interaction_type=InteractionType.RANDOM)
            log_prob = dist.log_prob(sample) if log_prob_key is not None else None
        values[out_key] = sample
        if log_prob is not None:
            values[log_prob_key] = log_prob

    return step


def egreedy_step(module: EGreedyModule, batch_size: torch.Size, before: Callable[[], None] | None = None) -> Step | None:
    """``EGreedyModule.forward`` in RANDOM mode for a batch of ``batch_size`` envs: a uniform draw per env
    against epsilon, then the spec's random action, kept where the draw fell under epsilon. ``before()``
    runs first (a subclass's per-step schedule, which upstream's forward would run before its own)."""
    if isinstance(module.action_key, tuple) or module.spec is None:
        return None
    spec = module.spec[module.action_key] if isinstance(module.spec, Composite) else module.spec
    key, mask_key, expanded = module.action_key, module.action_mask_key, {}

    def step(values: Values) -> None:
        if before is not None:
            before()
        action = values[key]
        cond = torch.rand(batch_size, device=module.eps.device) < module.eps
        cond = expand_as_right(cond, action)
        shaped = spec
        if spec.shape != action.shape:
            shaped = expanded.get(action.shape)
            if shaped is None:
                shaped = expanded[action.shape] = spec.expand(action.shape)
        if mask_key is not None:  # upstream's: the random action drawn among the step's valid ones
            shaped.update_mask(values[mask_key])
        values[key] = torch.where(cond, shaped.rand(), action)

    return step


def _recurrent_step(module: LSTMModule | GRUModule) -> Step | None:
    """``LSTMModule`` / ``GRUModule`` outside recurrent mode: one step per env from the hidden state in the inputs
    (zeros where ``is_init`` starts an episode), the torch RNN called as upstream calls it (a length-1 sequence,
    layers first); the output and the next state (``("next", key)``) as upstream writes them."""
    if module.recurrent_mode:
        return None
    rnn = torch_rnn(module)
    in_keys, out_keys = list(module.in_keys), list(module.out_keys)  # [x, h(, c), is_init], [y, next h(, c)]

    def step(values: Values) -> None:
        x, *states, is_init = (values[key] for key in in_keys)
        starts = is_init.view(-1, *[1] * (states[0].dim() - 1))
        states = [torch.where(starts, torch.zeros_like(state), state).transpose(0, 1).contiguous() for state in states]
        output, hidden = rnn(x.unsqueeze(1), tuple(states) if len(states) == 2 else states[0])
        values[out_keys[0]] = output.squeeze(1)
        for key, state in zip(out_keys[1:], hidden if isinstance(hidden, tuple) else (hidden,)):
            values[key] = state.transpose(0, 1)

    return step


def _distributional_step(module: DistributionalQValueModule) -> Step | None:
    """``DistributionalQValueModule.forward``: the argmax of the log-probabilities' means on the support (masked
    actions at the dtype's lowest value first, as upstream masks them), and those values as they were masked."""
    if module.action_space != "categorical" or len(module.out_keys) != 2:
        return None
    values_key, mask_key = module.action_value_key, module.action_mask_key
    action_key, out_values_key = module.out_keys
    to_action = module.action_func_mapping[module.action_space]

    def step(values: Values) -> None:
        action_values = values[values_key]
        if mask_key is not None:
            action_values = torch.where(values[mask_key], action_values, torch.finfo(action_values.dtype).min)
        values[action_key], values[out_values_key] = to_action(action_values), action_values

    return step


def _qvalue_step(module: QValueModule) -> Step | None:
    """``QValueModule.forward``: the action space's mapping of the action values (argmax) and the chosen
    action's value. Upstream then checks the action's shape against the spec; where it would reshape
    (``strict_shape = False``) this is not taken."""
    if module.action_space != "categorical" or module.strict_shape is False:
        return None
    if len(module.out_keys) != 3:
        return None
    values_key, mask_key = module.action_value_key, module.action_mask_key
    action_key, _, chosen_key = module.out_keys
    to_action = module.action_func_mapping[module.action_space]
    chosen = module.action_value_func_mapping.get(module.action_space, module._default_action_value)

    def step(values: Values) -> None:
        action_values = values[values_key]
        if mask_key is not None:  # upstream's: masked actions at the dtype's lowest value, never the argmax
            action_values = torch.where(values[mask_key], action_values, torch.finfo(action_values.dtype).min)
        values[action_key] = action = to_action(action_values)
        values[chosen_key] = chosen(action_values, action)

    return step
