"""C51 on TorchRL: DQN's cell (``rlplug_dqn.torchrl_backend``) with a ``DistributionalQValueActor`` and TorchRL's
``DistributionalDQNLoss``.

The actor's network (``AtomLogProbs``) writes log-probabilities ``[..., n_atoms, n_actions]`` under
``"action_value"``, the layout TorchRL's distributional modules read; its ``DistributionalQValueModule`` takes the
argmax of their means on the support, so DQN's epsilon-greedy collection, evaluation and export act on it
unchanged. Memory, target updater (the loss's target parameters), exploration (n-step returns included) and
trainer are DQN's.
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.torchrl import configure_threads, observation_keys, observation_net, seed_everything
from rlplug_dqn.torchrl_backend import build_memory, build_target_updater, build_trainer  # noqa: F401 -- DQN's
from torch import nn
from torchrl.data import Categorical as CategoricalSpec
from torchrl.modules import DistributionalQValueActor
from torchrl.objectives import DistributionalDQNLoss


class AtomLogProbs(nn.Module):
    """``net``'s ``n_atoms x n_actions`` outputs as log-probabilities over the atoms, ``[..., n_atoms, n_actions]``
    (``action_major``: ``net`` gives them as ``n_actions x n_atoms``, a dueling head's layout)."""

    def __init__(self, net: nn.Module, n_atoms: int, n_actions: int, action_major: bool = False) -> None:
        super().__init__()
        self.net, self.shape, self.action_major = net, (n_atoms, n_actions), action_major

    def forward(self, *observations: torch.Tensor) -> torch.Tensor:
        logits = self.net(*observations)
        if self.action_major:
            logits = logits.unflatten(-1, self.shape[::-1]).transpose(-1, -2)
        else:
            logits = logits.unflatten(-1, self.shape)
        return logits.log_softmax(-2)


def build_models(build: Build) -> dict[str, Any]:
    """Z(s, .) inside a ``DistributionalQValueActor`` ("action" = argmax of the means); target parameters live in
    the loss."""
    configure_threads()
    seed_everything(build.seed)
    s, n = build.settings, int(build.action_space.n)
    net = observation_net(build, s["n_atoms"] * n, s["hidden_sizes"], s["activation"], dueling=s["dueling"], atoms=s["n_atoms"])
    net = AtomLogProbs(net, s["n_atoms"], n, action_major=s["dueling"])
    actor = DistributionalQValueActor(net, support=torch.linspace(s["v_min"], s["v_max"], s["n_atoms"]),
                                      in_keys=observation_keys(build), spec=CategoricalSpec(n), action_space="categorical",
                                      make_log_softmax=False)  # fmt: skip
    return {"q_network": actor.to(build.device)}


def make_c51_loss(build: Build) -> DistributionalDQNLoss:
    """The registered default loss ("c51") for c51/torchrl: ``DistributionalDQNLoss`` with target parameters."""
    return DistributionalDQNLoss(build.models["q_network"], gamma=build.settings["gamma"], delay_value=True)
