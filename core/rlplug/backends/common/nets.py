"""Network building blocks both backends share (imports torch: only backend modules import this)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ...errors import UnknownNameError
from ...util.suggest import did_you_mean

ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU}


def mlp(input_size: int, hidden_sizes: Sequence[int], output_size: int, activation: str = "tanh") -> nn.Sequential:
    """Linear layers of ``hidden_sizes`` with ``activation`` between them and a linear output layer."""
    if activation not in ACTIVATIONS:
        raise UnknownNameError(f"unknown activation '{activation}'" + did_you_mean(activation, ACTIVATIONS))
    layers: list[nn.Module] = []
    size = input_size
    for hidden in hidden_sizes:
        layers += [nn.Linear(size, hidden), ACTIVATIONS[activation]()]
        size = hidden
    layers.append(nn.Linear(size, output_size))
    return nn.Sequential(*layers)


class DuelingMlp(nn.Module):
    """Q(s, .) = V(s) + A(s, .) - mean A(s, .): the hidden layers of ``mlp`` shared, then a one-output value
    layer and a one-output-per-action advantage layer (Wang et al. 2016, "Dueling Network Architectures").

    Where the actions' values differ little next to their size (CartPole's Q is near 100 whichever way the
    cart is pushed) a plain head carries that small difference in the same outputs as the large common
    value; here the value layer carries the common part and the advantage layer only the difference.
    """

    def __init__(self, input_size: int, hidden_sizes: Sequence[int], output_size: int, activation: str = "relu",
                 atoms: int = 1) -> None:  # fmt: skip
        super().__init__()
        if not hidden_sizes:
            raise ValueError("a dueling head needs at least one hidden layer (hidden_sizes is empty)")
        self.trunk = nn.Sequential(*mlp(input_size, hidden_sizes[:-1], hidden_sizes[-1], activation), ACTIVATIONS[activation]())
        self.value = nn.Linear(hidden_sizes[-1], atoms)
        self.advantage = nn.Linear(hidden_sizes[-1], output_size)
        self.atoms = atoms

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.trunk(x)
        advantage = self.advantage(features)
        if self.atoms == 1:
            return self.value(features) + advantage - advantage.mean(-1, keepdim=True)
        # a distributional head (Rainbow's): per action, ``atoms`` outputs (quantiles, or logits over a support);
        # the value and the mean advantage are per atom, over the actions
        advantage = advantage.unflatten(-1, (-1, self.atoms))
        combined = self.value(features).unsqueeze(-2) + advantage - advantage.mean(-2, keepdim=True)
        return combined.flatten(-2)


def mlp_head(input_size: int, hidden_sizes: Sequence[int], output_size: int, activation: str, dueling: bool = False,
             atoms: int = 1) -> nn.Module:  # fmt: skip
    """A model's MLP after its encoder: ``mlp``, or ``DuelingMlp`` with ``dueling`` (a Q(s, .) network only;
    policies, values and Q(s, a) never pass it; ``atoms``: a distributional head's outputs per action)."""
    if dueling:
        return DuelingMlp(input_size, hidden_sizes, output_size, activation, atoms)
    return mlp(input_size, hidden_sizes, output_size, activation)


class BatchRenorm(nn.Module):
    """Batch renormalisation (Ioffe 2017) over the features of ``[B, num_features]`` inputs: CrossQ's critic norm.

    Training: normalised with the batch's statistics, then corrected towards the running ones by ``r`` (clamped to
    ``[1 / max_r, max_r]``) and ``d`` (clamped to ``[-max_d, max_d]``), which are out of autograd; for the first
    ``warmup_steps`` training batches ``r = 1`` and ``d = 0`` (plain batch norm) while the running statistics settle.
    Evaluation: the running statistics only. The math of ``torchrl.modules.BatchRenorm1d`` and sb3-contrib's, but the
    warm-up counter stops at ``warmup_steps``: TorchRL 0.14.1's keeps counting (its ``clamp_max`` is not in place), so
    after 2 x ``warmup_steps`` batches its ``r - 1`` and ``d`` are doubled, then tripled. Defined here, not taken from
    TorchRL, so the skrl backend has it without TorchRL installed.
    """

    def __init__(self, num_features: int, momentum: float = 0.01, eps: float = 1e-3, warmup_steps: int = 100_000,
                 max_r: float = 3.0, max_d: float = 5.0) -> None:  # fmt: skip
        super().__init__()
        self.momentum, self.eps, self.warmup_steps, self.max_r, self.max_d = momentum, eps, warmup_steps, max_r, max_d
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        running_std = (self.running_var + self.eps).sqrt()
        if self.training:
            mean, var = x.mean(0), x.var(0, unbiased=False)
            std = (var + self.eps).sqrt()
            r = (std.detach() / running_std).clamp(1 / self.max_r, self.max_r)
            d = ((mean.detach() - self.running_mean) / running_std).clamp(-self.max_d, self.max_d)
            # 0 while warming up, then 1; a tensor, not a Python branch, so that TorchRL's loss can vmap the critics
            warm = (self.num_batches_tracked >= self.warmup_steps).to(x.dtype)
            r, d = 1 + (r - 1) * warm, d * warm
            x = (x - mean) / std * r + d
            with torch.no_grad():  # the running statistics take the unbiased batch variance, as BatchNorm's do
                self.running_mean += self.momentum * (mean - self.running_mean)
                self.running_var += self.momentum * (var * x.shape[0] / (x.shape[0] - 1) - self.running_var)
                self.num_batches_tracked += 1
        else:
            x = (x - self.running_mean) / running_std
        return self.weight * x + self.bias


def with_batch_renorm(net: nn.Sequential, **renorm: float) -> nn.Sequential:
    """``net`` (an ``mlp``) with a ``BatchRenorm`` before each of its linear layers (over that layer's inputs: the
    raw input, then each hidden activation), as sb3-contrib's CrossQ critics. The linear layers are ``net``'s own, so
    their initialisation (and the seed's draws) is unchanged."""
    layers: list[nn.Module] = []
    for layer in net:
        if isinstance(layer, nn.Linear):
            layers.append(BatchRenorm(layer.in_features, **renorm))
        layers.append(layer)
    return nn.Sequential(*layers)


class EnsembleMlp(nn.Module):
    """``N`` MLPs of one shape as one module: each linear layer's ``N`` weights stacked (``[N, in, out]``) and applied
    in one batched matmul (``torch.baddbmm``) for all members, instead of ``N`` modules called in a Python loop.

    Built from the members themselves (``mlp``s with the same sizes and activation), so their initialisation, and
    what a seed draws for it, is unchanged; ``forward`` takes ``[B, in]`` (the same input to every member) or
    ``[N, B, in]`` and returns ``[N, B, out]``, member ``i``'s output equal to ``members[i](x)``.
    """

    def __init__(self, members: Sequence[nn.Sequential]) -> None:
        super().__init__()
        if not members:
            raise ValueError("an ensemble needs at least one member")
        shapes = [[(type(layer), getattr(layer, "weight", torch.empty(0)).shape) for layer in member] for member in members]
        if any(shape != shapes[0] for shape in shapes):
            raise ValueError("an ensemble's members must have the same layers and sizes")
        self.size = len(members)
        self.weights, self.biases, self.activations = nn.ParameterList(), nn.ParameterList(), nn.ModuleList()
        for index, layer in enumerate(members[0]):
            if isinstance(layer, nn.Linear):
                linears = [member[index] for member in members]
                self.weights.append(nn.Parameter(torch.stack([m.weight.detach().t() for m in linears]).contiguous()))
                self.biases.append(nn.Parameter(torch.stack([m.bias.detach() for m in linears]).unsqueeze(1).contiguous()))
                self.activations.append(nn.Identity())
            else:  # the activation after the previous linear layer
                self.activations[-1] = type(layer)()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 2:
            x = x.expand(self.size, *x.shape)
        for weight, bias, activation in zip(self.weights, self.biases, self.activations):
            x = activation(torch.baddbmm(bias, x, weight))
        return x


def plain_layers(net: nn.Module) -> bool:
    """Whether ``net`` is an ``mlp``: an ``nn.Sequential`` of linear layers and stateless activations only (what
    ``ensemble_forward`` can batch; a ``BatchRenorm`` or a dueling head is not)."""
    return isinstance(net, nn.Sequential) and all(
        type(layer) is nn.Linear or type(layer) in ACTIVATIONS.values() for layer in net
    )


def ensemble_forward(members: Sequence[nn.Sequential], x: torch.Tensor) -> torch.Tensor:
    """``members``' outputs at ``x`` (``[B, in]``, the same input to all) as ``[N, B, out]``, in one batched matmul per
    layer (``torch.baddbmm`` over their weights stacked for this call) instead of ``N`` calls one after another. The
    members keep their own parameters (gradients flow back to each); they are ``mlp``s of one shape (``plain_layers``).
    Values equal each member's own up to float rounding (the batched kernel sums in another order)."""
    x = x.expand(len(members), *x.shape)
    for index, layer in enumerate(members[0]):
        if type(layer) is nn.Linear:
            weight = torch.stack([member[index].weight for member in members]).transpose(1, 2)
            bias = torch.stack([member[index].bias for member in members]).unsqueeze(1)
            x = torch.baddbmm(bias, x, weight)
        else:
            x = layer(x)
    return x
