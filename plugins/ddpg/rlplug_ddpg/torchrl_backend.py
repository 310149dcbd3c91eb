"""DDPG on TorchRL: TD3's cell (``rlplug_td3.torchrl_backend``) with ``torchrl.objectives.DDPGLoss``.

Overridden: the loss only. TD3's actor and Q-network become ``DDPGLoss``'s actor and its one value
network (target copies of both); TD3's trainer steps it with ``policy_delay = 1``, so the critic, the
actor and the targets move on every gradient step. Memory, exploration, evaluation and export are TD3's.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torchrl.objectives import DDPGLoss as UpstreamDDPGLoss
from torchrl.objectives.utils import distance_loss

from rlplug import Build
from rlplug.backends.torchrl import LeanLoss, NetworkCall, describe_loss, lean_applies, set_value_estimator, td0_target
from rlplug_td3.torchrl_backend import build_memory, build_models, build_target_updater, build_trainer  # noqa: F401


class DDPGLoss(UpstreamDDPGLoss):
    """Upstream's ``DDPGLoss`` under the names TD3's trainer steps (``TD3Loss``'s): ``value_loss``,
    ``actor_loss`` and ``qvalue_network_params``. Values, parameters and keys are upstream's."""

    value_loss = UpstreamDDPGLoss.loss_value
    actor_loss = UpstreamDDPGLoss.loss_actor
    qvalue_network_params = property(lambda self: self.value_network_params)


class LeanDDPGLoss(LeanLoss, DDPGLoss):
    """``DDPGLoss``'s two terms from plain tensors (``NetworkCall``): upstream's values, parameters and keys
    (and the priority it writes), without tensordict plumbing. A multi-step estimator, priority weights or a
    loss mask fall back to upstream's methods."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.actor_call, self.q_call = NetworkCall(self.actor_network), NetworkCall(self.value_network)

    def loss_value(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        if not lean_applies(self, tensordict):
            return super().loss_value(tensordict)
        keys, in_keys = self.tensor_keys, self.actor_network.in_keys
        observations = [tensordict.get(key) for key in in_keys]
        action = tensordict.get(self.actor_network.out_keys[0])  # the Q-network reads the observations, then it
        predicted = self.q_call(self.value_network_params, *observations, action).squeeze(-1)
        with torch.no_grad():
            next_observations = [tensordict.get(("next", key)) for key in in_keys]
            next_action = self.actor_call(self.target_actor_network_params, *next_observations)
            next_value = self.q_call(self.target_value_network_params, *next_observations, next_action)
            target = td0_target(self, tensordict.get(("next", keys.reward)), tensordict.get(("next", keys.terminated)), next_value)
        target = target.squeeze(-1)
        td_error = (predicted - target).pow(2).detach()
        tensordict.set(keys.priority, td_error, inplace=True)
        loss = distance_loss(predicted, target, loss_function=self.loss_function).mean()
        return loss, {"td_error": td_error, "pred_value": predicted.detach(), "target_value": target}

    def loss_actor(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        if not lean_applies(self, tensordict):
            return super().loss_actor(tensordict)
        observations = [tensordict.get(key) for key in self.actor_network.in_keys]
        action = self.actor_call(self.actor_network_params, *observations)
        return -self.q_call(self.value_network_params, *observations, action, detach=True).squeeze(-1).mean(), {}

    value_loss, actor_loss = loss_value, loss_actor


def make_ddpg_loss(build: Build, loss_class: type[DDPGLoss] = DDPGLoss) -> DDPGLoss:
    """The registered loss "ddpg" for ddpg/torchrl (``loss_class``: "ddpg-lean"'s), with target copies of the actor
    and the Q-network (upstream's default keeps no target actor) and the recipe's value estimator."""
    s = build.settings
    loss = loss_class(build.models["actor"], build.models["qvalue"], delay_actor=True, delay_value=True, loss_function=s["loss_function"])
    set_value_estimator(loss, s)
    return loss


def make_lean_ddpg_loss(build: Build) -> LeanDDPGLoss:
    """The default loss "ddpg-lean": ``LeanDDPGLoss``, constructed as "ddpg"."""
    return make_ddpg_loss(build, LeanDDPGLoss)


def describe_ddpg_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimators."""
    return describe_loss(UpstreamDDPGLoss, value_estimator="td0 | td1 | td_lambda (hp value_estimator)")
