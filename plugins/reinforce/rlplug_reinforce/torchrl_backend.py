"""REINFORCE on TorchRL: A2C's cell (``rlplug_a2c.torchrl_backend``) with ``torchrl.objectives.ReinforceLoss`` and a TD(1)
estimator (Monte-Carlo returns, bootstrapped from the critic where a rollout cuts an episode). The loop is the
on-policy family's; with ``baseline = false`` it takes the returns themselves as advantages (``advantage_baseline``).
"""

from __future__ import annotations

from typing import Any

from rlplug import Build
from rlplug.backends.torchrl import describe_loss
from rlplug_a2c.torchrl_backend import build_memory, build_models, build_trainer  # noqa: F401 -- A2C's, unchanged
from torchrl.objectives import ReinforceLoss, ValueEstimators


def make_reinforce_loss(build: Build) -> ReinforceLoss:
    """The registered default loss ("reinforce") for reinforce/torchrl."""
    s = build.settings
    loss = ReinforceLoss(build.models["actor"], build.models["critic"], loss_critic_type=s["loss_critic_type"], functional=False)
    loss.make_value_estimator(ValueEstimators.TD1, gamma=s["gamma"])
    return loss


def describe_reinforce_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimator."""
    return describe_loss(ReinforceLoss, value_estimator="TD1")
