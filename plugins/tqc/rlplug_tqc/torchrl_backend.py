"""TQC on TorchRL: SAC's cell (``rlplug_sac.torchrl_backend``) with quantile critics and TorchRL's ``TQCLoss``.

Overridden: the models (SAC's actor and ``n_critics`` critics of ``n_quantiles`` outputs) and the loss,
upstream's ``TQCLoss`` (a ``SACLoss``: the same actor, critic and alpha parameters, so SAC's one Adam with three
groups, its target updater and its trainer run it unchanged). Replay is SAC's, TD(0) only.
"""

from __future__ import annotations

from typing import Any

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
    loss = TQCLoss(**sac.sac_loss_arguments(build), top_quantiles_to_drop_per_net=build.settings["top_quantiles_to_drop_per_net"])
    set_value_estimator(loss, build.settings)
    return loss


def describe_tqc_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimator."""
    return describe_loss(TQCLoss, value_estimator="td0")
