"""A2C on TorchRL, top to bottom: models, memory, loss, trainer.

The loss is TorchRL's own ``A2CLoss`` (``torchrl.objectives``) with a GAE value estimator that
standardises the advantages over each rollout, as skrl's A2C does. The trainer is the on-policy
family's ``TorchRLRolloutTrainer``: one iteration is one collector batch of ``rollout_steps`` steps
from ``num_envs`` envs, the advantages computed once on the whole batch, then one pass of
``minibatches`` minibatches through the registered loss, its optimised terms summed, clipped by
gradient norm and stepped with Adam.
"""

from __future__ import annotations

from typing import Any

from rlplug import Build
from rlplug.backends.torchrl import TorchRLRolloutTrainer, actor_critic_modules, rollout_buffer
from torchrl.data import ReplayBuffer
from torchrl.objectives import A2CLoss, ValueEstimators

# ---- models ---------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """``actor`` (Categorical or Gaussian) and ``critic`` MLPs, initialised from ``build.seed``."""
    return actor_critic_modules(build)


# ---- memory ---------------------------------------------------------------------------------------


def build_memory(build: Build) -> ReplayBuffer:
    """One batch of transitions; iterating it yields the minibatches of one pass, without replacement."""
    return rollout_buffer(build)


# ---- loss -----------------------------------------------------------------------------------------


def make_a2c_loss(build: Build) -> A2CLoss:
    """The registered default loss ("a2c") for a2c/torchrl: ``A2CLoss`` with its GAE estimator."""
    s = build.settings
    loss = A2CLoss(
        build.models["actor"],
        build.models["critic"],
        entropy_coeff=s["entropy_coeff"],
        critic_coeff=s["critic_coeff"],
        loss_critic_type=s["loss_critic_type"],
    )
    # A2CLoss leaves its entropy terms out at a zero coefficient; the cell declares them optimised
    loss.entropy_bonus = True
    loss.make_value_estimator(ValueEstimators.GAE, gamma=s["gamma"], lmbda=s["lmbda"], average_gae=True)
    return loss


# ---- trainer --------------------------------------------------------------------------------------


class TorchRLA2CTrainer(TorchRLRolloutTrainer):
    """One ``step()`` = one collector batch (``rollout_steps`` x ``num_envs`` transitions) + the update."""


def build_trainer(build: Build) -> TorchRLA2CTrainer:
    return TorchRLA2CTrainer(build)
