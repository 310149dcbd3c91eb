"""Translate PPO's neutral hyperparameters into each backend's own settings (no torch imports).

The dicts returned here are what ``rlplug show NAME --backend B`` prints, and a recipe's raw
``[recipes.X.skrl]`` / ``[recipes.X.torchrl]`` tables may override any of their keys. PPO's
parameters are the on-policy family's (``rlplug.families``), so is their translation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug.families import skrl_onpolicy_settings, torchrl_onpolicy_settings

TORCHRL_PARITY_SETTINGS: dict[str, Any] = {
    "advantage_norm_scope": "rollout",
    "value_clip_mode": "clipped",
    "kl_estimator": "k3",
    "value_norm_update": "values_and_returns",
    "observation_norm_update": "first_epoch",
    "normalizer_convention": "skrl",
}
"""Where rlplug's TorchRL PPO does what skrl's PPO does rather than what TorchRL does by default, so one
recipe is one algorithm on both backends. Each can be set back in a recipe's ``[recipes.X.torchrl]``:

* ``advantage_norm_scope``: ``"rollout"`` standardises the advantages once over the whole rollout after GAE
  (skrl's ``compute_gae``: mean, Bessel-corrected std + 1e-8); ``"minibatch"`` lets ``ClipPPOLoss``
  standardise each minibatch by its own statistics (TorchRL's ``normalize_advantage``).
* ``value_clip_mode``: with ``value_clip``, ``"clipped"`` fits only the clipped prediction
  ``old + clip(V - old, ±value_clip)`` (skrl); ``"pessimistic"`` takes the larger of the clipped and
  unclipped errors (TorchRL's ``ClipPPOLoss``, as in OpenAI's baselines).
* ``kl_estimator``: the approximate KL that steers ``kl_adaptive`` and ``kl_early_stop`` (and is logged as
  ``kl_approx``): ``"k3"`` is ``mean((r - 1) - log r)``, never negative (skrl); ``"k1"`` is
  ``mean(-log r)`` (TorchRL), unbiased but so noisy on a 512-transition rollout that a KL target of
  0.008 reads as "too small" about as often as not.
* ``value_norm_update`` (with ``normalize_values``): ``"values_and_returns"`` updates the running
  statistics with the rollout's values, then its returns, and clips the critic's standardised output to
  ±5 before denormalising it (skrl's ``RunningStandardScaler`` as its PPO applies it); ``"returns"``
  uses the value targets only.
* ``observation_norm_update`` (with ``normalize_observations``): ``"first_epoch"`` updates the running
  statistics with each minibatch of the first epoch just before the loss reads it (skrl);
  ``"after_update"`` updates them once with the whole rollout after the update.
* ``normalizer_convention`` (with ``normalize_observations`` or ``normalize_values``): ``"skrl"`` starts the
  running statistics of observations and values from one virtual sample of mean 0 and variance 1 and merges
  each batch's Bessel-corrected variance (skrl's ``RunningStandardScaler``); ``"baselines"`` from a count of
  1e-4 with population variances (OpenAI baselines' ``RunningMeanStd``). The prior weighs in while few
  samples are in: after CartPole's first 512 observations a feature of variance 0.005 standardises with 0.007.
"""


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Fields of skrl's ``PPO_CFG`` (class names as strings; the backend maps them to classes)."""
    return skrl_onpolicy_settings(hp, recipe)


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Arguments of ``ClipPPOLoss``, the GAE estimator, the collector and rlplug's TorchRL loop, with skrl's
    PPO semantics where TorchRL's defaults differ (``TORCHRL_PARITY_SETTINGS``)."""
    return {**torchrl_onpolicy_settings(hp, recipe), "value_estimator": "GAE", "normalize_advantage": True, **TORCHRL_PARITY_SETTINGS}
