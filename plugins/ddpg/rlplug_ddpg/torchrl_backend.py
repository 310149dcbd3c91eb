"""DDPG on TorchRL: TD3's cell (``rlplug_td3.torchrl_backend``) with ``torchrl.objectives.DDPGLoss``.

Overridden: the loss only. TD3's actor and Q-network become ``DDPGLoss``'s actor and its one value
network (target copies of both); TD3's trainer steps it with ``policy_delay = 1``, so the critic, the
actor and the targets move on every gradient step. Memory, exploration, evaluation and export are TD3's.
"""

from __future__ import annotations

from typing import Any

from rlplug import Build
from rlplug.backends.torchrl import describe_loss, set_value_estimator
from rlplug_td3.torchrl_backend import build_memory, build_models, build_target_updater, build_trainer  # noqa: F401
from torchrl.objectives import DDPGLoss as UpstreamDDPGLoss


class DDPGLoss(UpstreamDDPGLoss):
    """Upstream's ``DDPGLoss`` under the names TD3's trainer steps (``TD3Loss``'s): ``value_loss``,
    ``actor_loss`` and ``qvalue_network_params``. Values, parameters and keys are upstream's."""

    value_loss = UpstreamDDPGLoss.loss_value
    actor_loss = UpstreamDDPGLoss.loss_actor
    qvalue_network_params = property(lambda self: self.value_network_params)


def make_ddpg_loss(build: Build) -> DDPGLoss:
    """The registered default loss ("ddpg") for ddpg/torchrl, with target copies of the actor and the
    Q-network (upstream's default keeps no target actor) and the recipe's value estimator."""
    s = build.settings
    loss = DDPGLoss(build.models["actor"], build.models["qvalue"], delay_actor=True, delay_value=True, loss_function=s["loss_function"])
    set_value_estimator(loss, s)
    return loss


def describe_ddpg_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimators."""
    return describe_loss(UpstreamDDPGLoss, value_estimator="td0 | td1 | td_lambda (hp value_estimator)")
