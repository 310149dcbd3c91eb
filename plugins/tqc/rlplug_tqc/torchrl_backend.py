"""TQC on TorchRL: SAC's cell (``rlplug_sac.torchrl_backend``) with quantile critics and TorchRL's ``TQCLoss``.

Overridden: the models (SAC's actor and ``n_critics`` critics of ``n_quantiles`` outputs) and the loss,
upstream's ``TQCLoss`` (a ``SACLoss``: the same actor, critic and alpha parameters, so SAC's one Adam with three
groups, its target updater and its trainer run it unchanged). Replay is SAC's, TD(0) only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from rlplug import Build
from rlplug.backends.torchrl import describe_loss, set_value_estimator
from rlplug_sac import torchrl_backend as sac
from rlplug_sac.torchrl_backend import build_memory, build_target_updater, build_trainer  # noqa: F401 -- SAC's
from torchrl.objectives import TQCLoss


def build_models(build: Build) -> dict[str, Any]:
    """SAC's ``TanhNormal`` actor and ``n_critics`` critics Z(s, a) of ``n_quantiles`` outputs."""
    return sac.build_models(build, critic_outputs=build.settings["n_quantiles"])


def make_tqc_loss(build: Build) -> TQCLoss:
    """The registered default loss ("tqc") for tqc/torchrl: upstream's ``TQCLoss`` over the critics, TD(0)."""
    s = build.settings
    target_entropy = s["target_entropy"]
    if target_entropy == "auto":  # resolved here, as SAC's, so the loss needs no action spec
        target_entropy = -float(np.prod(build.action_space.shape))
    loss = TQCLoss(
        build.models["actor"],
        build.models["critics"],
        num_qvalue_nets=s["num_qvalue_nets"],
        top_quantiles_to_drop_per_net=s["top_quantiles_to_drop_per_net"],
        alpha_init=s["alpha_init"],
        fixed_alpha=s["fixed_alpha"],
        target_entropy=target_entropy,
    )
    set_value_estimator(loss, s)
    return loss


def describe_tqc_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimator."""
    return describe_loss(TQCLoss, value_estimator="td0")
