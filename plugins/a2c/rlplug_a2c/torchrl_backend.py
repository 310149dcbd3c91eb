"""A2C on TorchRL: PPO's models and rollout buffer, ``torchrl.objectives.A2CLoss`` with a GAE estimator, and the
on-policy family's loop (``TorchRLRolloutTrainer``): one collector batch, its advantages standardised over the
batch (``normalize_advantage``), one pass of ``minibatches`` through the loss, Adam or RMSprop (``optimizer``).
"""

from __future__ import annotations

from typing import Any

from rlplug import Build
from rlplug.backends.torchrl import TorchRLRolloutTrainer, actor_critic_modules, describe_loss, rollout_buffer
from torchrl.objectives import A2CLoss, ValueEstimators

build_models = actor_critic_modules  # actor (Categorical or Gaussian) and critic MLPs
build_memory = rollout_buffer  # one batch; iterating it yields one pass of minibatches without replacement


def make_a2c_loss(build: Build) -> A2CLoss:
    """The registered default loss ("a2c") for a2c/torchrl: ``A2CLoss`` with its GAE estimator; the trainer standardises
    the advantages once per rollout, as skrl's A2C does, so the estimator does not (``average_gae``)."""
    s = build.settings
    loss = A2CLoss(
        build.models["actor"],
        build.models["critic"],
        entropy_coeff=s["entropy_coeff"],
        critic_coeff=s["critic_coeff"],
        loss_critic_type=s["loss_critic_type"],
        functional=False,  # the modules themselves, as PPO's loss: no parameter copies swapped in per call
    )
    loss.entropy_bonus = True  # A2CLoss leaves its entropy term out at a zero coefficient; the cell declares it optimised
    loss.make_value_estimator(ValueEstimators.GAE, gamma=s["gamma"], lmbda=s["lmbda"], average_gae=False)
    return loss


def describe_a2c_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimator."""
    return describe_loss(A2CLoss, value_estimator="GAE")


build_trainer = TorchRLRolloutTrainer  # one step() = one collector batch (rollout_steps x num_envs) + the update
