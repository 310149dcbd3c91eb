"""QR-DQN on TorchRL: DQN's cell (``rlplug_dqn.torchrl_backend``) with a quantile Q network and ``QRDQNLoss``.

TorchRL 0.14 has no QR-DQN loss, so ``QRDQNLoss`` is a ``LossModule`` of rlplug's (with target parameters,
which DQN's target updater moves). The ``QValueActor``'s network (``QuantileMean``) returns the quantiles'
mean per action, so DQN's epsilon-greedy collection, evaluation and export take the argmax of the mean
unchanged. Memory, target updater, exploration (n-step returns included) and trainer are DQN's.
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.torchrl import configure_threads, loss_output, observation_keys, observation_net, q_value_actor, seed_everything
from rlplug_dqn.torchrl_backend import build_memory, build_target_updater, build_trainer  # noqa: F401 -- DQN's
from tensordict import TensorDictBase
from torch import nn
from torchrl.objectives import LossModule

from .quantile import quantile_huber_loss


class QuantileMean(nn.Module):
    """``net``'s ``n_actions x n_quantiles`` outputs: ``quantiles`` reshapes them, ``forward`` averages them."""

    def __init__(self, net: nn.Module, n_actions: int, n_quantiles: int) -> None:
        super().__init__()
        self.net, self.quantile_shape = net, (n_actions, n_quantiles)

    def quantiles(self, *observations: torch.Tensor) -> torch.Tensor:
        return self.net(*observations).unflatten(-1, self.quantile_shape)

    def forward(self, *observations: torch.Tensor) -> torch.Tensor:
        return self.quantiles(*observations).mean(-1)


def build_models(build: Build) -> dict[str, Any]:
    """Z(s, .) inside a ``QValueActor`` ("action" = argmax of the mean); target parameters live in the loss."""
    configure_threads()
    seed_everything(build.seed)
    s, n = build.settings, int(build.action_space.n)
    net = observation_net(build, n * s["n_quantiles"], s["hidden_sizes"], s["activation"], dueling=s["dueling"], atoms=s["n_quantiles"])
    net = QuantileMean(net, n, s["n_quantiles"])
    return {"q_network": q_value_actor(net, build.action_space, observation_keys(build)).to(build.device)}


class QRDQNLoss(LossModule):
    """sb3-contrib's QR-DQN loss: quantile Huber loss of Z(s, a) against ``r + gamma ** steps * (1 - terminated)
    * Z'(s', argmax mean Z'(s', .))`` with target parameters (``steps``: an n-step batch's, else 1; ``double``: the
    argmax of the online network's mean)."""

    value_network: nn.Module  # declared, as upstream's losses do (convert_to_functional checks)
    value_network_params: TensorDictBase
    target_value_network_params: TensorDictBase

    def __init__(self, value_network: nn.Module, gamma: float, double: bool = False) -> None:
        super().__init__()
        self.convert_to_functional(value_network, "value_network", create_target_params=True)
        self.gamma, self.double = gamma, double

    def quantiles(self, params: TensorDictBase, tensordict: TensorDictBase, prefix: tuple = ()) -> torch.Tensor:
        module = self.value_network.module[0]
        with params.to_module(self.value_network):
            return module.module.quantiles(*[tensordict.get(prefix + (k,)) for k in module.in_keys])

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        with torch.no_grad():
            next_z = self.quantiles(self.target_value_network_params, tensordict, ("next",))
            chooser = self.quantiles(self.value_network_params, tensordict, ("next",)) if self.double else next_z
            next_z = next_z.gather(1, chooser.mean(-1).argmax(-1)[:, None, None].expand(-1, 1, next_z.shape[-1])).squeeze(1)
            steps = tensordict.get("steps_to_next_obs", None)
            gamma = self.gamma if steps is None else self.gamma ** steps.view(-1, 1)
            not_done = tensordict.get(("next", "terminated")).view(-1, 1).logical_not()
            target = tensordict.get(("next", "reward")).view(-1, 1) + gamma * not_done * next_z
        z = self.quantiles(self.value_network_params, tensordict)
        action = tensordict.get("action").view(-1, 1, 1).expand(-1, 1, z.shape[-1])
        return loss_output({"loss": quantile_huber_loss(z.gather(1, action).squeeze(1), target)})


def make_qrdqn_loss(build: Build) -> QRDQNLoss:
    """The registered default loss ("qrdqn") for qrdqn/torchrl."""
    return QRDQNLoss(build.models["q_network"], build.settings["gamma"], build.settings["double_dqn"])
