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
