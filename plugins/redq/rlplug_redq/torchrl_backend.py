"""REDQ on TorchRL: SAC's cell (``rlplug_sac.torchrl_backend``) with ``n_critics`` critics and TorchRL's ``REDQLoss``.

Overridden: the loss, upstream's ``REDQLoss`` (its actor, critic and alpha parameters are named as ``SACLoss``'s,
so SAC's one Adam with three groups, its target updater and its trainer run it unchanged). The models are SAC's
(``num_qvalue_nets = n_critics`` critics); replay is SAC's, TD(0) only.
"""

from __future__ import annotations

from typing import Any

from rlplug import Build
from rlplug.backends.torchrl import describe_loss, set_value_estimator
from rlplug_sac import torchrl_backend as sac
from rlplug_sac.torchrl_backend import build_memory, build_models, build_target_updater, build_trainer  # noqa: F401 -- SAC's
from torchrl.objectives import REDQLoss


UNCLAMPED = (1e-30, 1e30)
"""alpha's bounds: none in effect, as SAC's on both backends (upstream's default clamps it to [0.1, 10]); finite, as
REDQLoss keeps their logarithms as buffers and rlplug's divergence guard refuses a non-finite one."""


def make_redq_loss(build: Build) -> REDQLoss:
    """The registered default loss ("redq") for redq/torchrl: upstream's ``REDQLoss`` over the critics, TD(0), alpha
    unclamped (``UNCLAMPED``)."""
    s = build.settings
    loss = REDQLoss(**sac.sac_loss_arguments(build), sub_sample_len=s["critic_subset"], loss_function=s["loss_function"],
                    min_alpha=UNCLAMPED[0], max_alpha=UNCLAMPED[1])  # fmt: skip
    # REDQLoss registers its target_entropy buffer on first read: read it now, so a fresh loss's state_dict has the
    # key a checkpoint has (else resuming fails: "Unexpected key(s) in state_dict: target_entropy_buffer")
    _ = loss.target_entropy
    set_value_estimator(loss, s)
    return loss


def describe_redq_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimator."""
    return describe_loss(REDQLoss, value_estimator="td0")
