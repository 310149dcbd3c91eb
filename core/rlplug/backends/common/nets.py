"""Network building blocks both backends share (imports torch: only backend modules import this)."""

from __future__ import annotations

from collections.abc import Sequence

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
