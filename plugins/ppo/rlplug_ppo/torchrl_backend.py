"""PPO on TorchRL: models, rollout buffer, ``ClipPPOLoss`` + GAE, and rlplug's own training loop.

Reads top to bottom like a single-file PPO on TorchRL 0.14: one batch of ``rollout_steps`` steps is
gathered from ``num_envs`` in-process envs (the on-policy family's lean path, or TorchRL's ``Collector`` with
``collector = true``: the same batches), GAE is computed once per batch with the
loss's own value estimator, then ``epochs`` passes of minibatches drawn without replacement from a
``ReplayBuffer`` go through the registered loss (``build.loss``), whose optimised terms
(``build.loss_entry.terms``) are summed, clipped by gradient norm and stepped with Adam. That loop is
the on-policy family's ``TorchRLRolloutTrainer``, shared with MAPPO and A2C.
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build, RlplugError
from rlplug.backends.torchrl import LeanClipPPOLoss, TorchRLRolloutTrainer, actor_critic_modules, describe_loss, rollout_buffer
from torchrl.data import ReplayBuffer
from torchrl.objectives import ClipPPOLoss

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """Separate actor (Categorical or Gaussian) and critic MLPs, initialised from ``build.seed``; with
    ``recurrent`` an LSTM or GRU core between each one's encoder and its MLP head.

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


VALUE_CLIP_MODES = ("clipped", "pessimistic")
KL_ESTIMATORS = ("k3", "k1")


def _choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise RlplugError(f"unknown {name} '{value}' (torchrl setting of ppo): expected one of {', '.join(choices)}")
    return value


class SettingsClipPPOLoss(LeanClipPPOLoss, ClipPPOLoss):
    """``ClipPPOLoss`` with two of its conventions as settings, through its own overridable hooks, and
    ``LeanClipPPOLoss``'s forward: upstream's values and gradients without its tensordict plumbing, upstream's
    own forward where the lean one does not apply (masked actors, hooks, ...; ``lean_ppo_obstacle``).

    ``value_clip_mode`` (with ``clip_value``): ``"clipped"`` fits the clipped prediction only, skrl's value
    loss; ``"pessimistic"`` is upstream's ``max(clipped, unclipped)`` error. ``kl_estimator``: ``"k3"``
    reports ``kl_approx`` as ``mean((r - 1) - log r)`` (skrl's, never negative), ``"k1"`` as upstream's
    ``mean(-log r)``. The defaults are upstream's; the factory sets the recipe's (``rlplug_ppo.settings``).
    """

    value_clip_mode = "pessimistic"
    kl_estimator = "k1"

    def _critic_loss_inputs(
        self, target_return: torch.Tensor, state_value: torch.Tensor, old_state_value: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        # clipping the prediction here makes upstream's clipped and unclipped errors the same number,
        # so its max() is the clipped error (value_clip_fraction then reads 0)
        if old_state_value is not None and self.value_clip_mode == "clipped":
            state_value = old_state_value + (state_value - old_state_value).clamp(-self.clip_value, self.clip_value)
        return target_return, state_value, old_state_value

    def kl_approx(self, log_weight: torch.Tensor, kl_approx: torch.Tensor) -> torch.Tensor:
        if self.kl_estimator == "k3":
            with torch.no_grad():
                return torch.expm1(log_weight) - log_weight
        return kl_approx

    def _log_weight(self, tensordict: Any, adv_shape: torch.Size) -> tuple[Any, ...]:
        log_weight, dist, kl_approx, log_is_weight = super()._log_weight(tensordict, adv_shape)
        return log_weight, dist, self.kl_approx(log_weight, kl_approx), log_is_weight


def make_clip_loss(build: Build, loss_class: type[SettingsClipPPOLoss] = SettingsClipPPOLoss) -> ClipPPOLoss:
    """The registered default loss ("clip") for ppo/torchrl: ``ClipPPOLoss`` (``SettingsClipPPOLoss``; ``loss_class``: a
    subclass of it, RPO's) with its value estimator. With ``advantage_norm_scope = "rollout"`` the trainer standardises
    advantages once per rollout, so the loss does not do it again per minibatch."""
    s = build.settings
    loss = loss_class(
        build.models["actor"],
        build.models["critic"],
        clip_epsilon=s["clip_epsilon"],
        entropy_coeff=s["entropy_coeff"],
        critic_coeff=s["critic_coeff"],
        loss_critic_type=s["loss_critic_type"],
        clip_value=s["clip_value"],
        normalize_advantage=s["normalize_advantage"] and s.get("advantage_norm_scope", "minibatch") == "minibatch",
        functional=False,  # the modules themselves, not parameter copies swapped in per call: ~12 % of a PPO step
    )
    loss.value_clip_mode = _choice("value_clip_mode", s.get("value_clip_mode", "pessimistic"), VALUE_CLIP_MODES)
    loss.kl_estimator = _choice("kl_estimator", s.get("kl_estimator", "k1"), KL_ESTIMATORS)
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
