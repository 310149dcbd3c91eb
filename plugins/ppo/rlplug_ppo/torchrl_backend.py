"""PPO on TorchRL: models, rollout buffer, ``ClipPPOLoss`` + GAE, and rlplug's own training loop.

Reads top to bottom like a single-file PPO on TorchRL 0.14: a ``Collector`` gathers one batch of
``rollout_steps`` steps from ``num_envs`` in-process envs, GAE is computed once per batch with the
loss's own value estimator, then ``epochs`` passes of minibatches drawn without replacement from a
``ReplayBuffer`` go through the registered loss (``build.loss``), whose optimised terms
(``build.loss_entry.terms``) are summed, clipped by gradient norm and stepped with Adam. That loop is
the on-policy family's ``TorchRLRolloutTrainer``, shared with MAPPO and A2C.
"""

from __future__ import annotations

from typing import Any

from rlplug import Build
from rlplug.backends.torchrl import TorchRLRolloutTrainer, actor_critic_modules, describe_loss, rollout_buffer
from torchrl.data import ReplayBuffer
from torchrl.objectives import ClipPPOLoss

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """Separate actor (Categorical or Gaussian) and critic MLPs, initialised from ``build.seed``.

    With ``normalize_observations`` both networks start with the same ``RunningNormalizer``, so the
    collector's policy, the loss and ``act_deterministic`` all standardise observations identically
    and the statistics travel inside the actor's ``state_dict``.
    """
    return actor_critic_modules(build)


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> ReplayBuffer:
    """One batch of transitions; iterating it yields one epoch of minibatches without replacement."""
    return rollout_buffer(build)


# ---- loss ---------------------------------------------------------------------------------------


def make_clip_loss(build: Build) -> ClipPPOLoss:
    """The registered default loss ("clip") for ppo/torchrl: ``ClipPPOLoss`` with its value estimator."""
    s = build.settings
    loss = ClipPPOLoss(
        build.models["actor"],
        build.models["critic"],
        clip_epsilon=s["clip_epsilon"],
        entropy_coeff=s["entropy_coeff"],
        critic_coeff=s["critic_coeff"],
        loss_critic_type=s["loss_critic_type"],
        clip_value=s["clip_value"],
        normalize_advantage=s["normalize_advantage"],
        functional=False,  # the modules themselves, not parameter copies swapped in per call: ~12 % of a PPO step
    )
    estimator = s["value_estimator"]
    kwargs = {"gamma": s["gamma"]}
    if estimator.lower() in ("gae", "tdlambda"):
        kwargs["lmbda"] = s["lmbda"]
    loss.make_value_estimator(estimator, **kwargs)
    return loss


def describe_clip_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimator."""
    return describe_loss(ClipPPOLoss, value_estimator="GAE")


# ---- trainer ------------------------------------------------------------------------------------


class TorchRLPPOTrainer(TorchRLRolloutTrainer):
    """One ``step()`` = one collector batch (``rollout_steps`` x ``num_envs`` transitions) + the update."""


build_trainer = TorchRLPPOTrainer
