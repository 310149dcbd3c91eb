"""The optimiser an on-policy cell steps with: Adam (skrl's and TorchRL's default) or RMSprop (SB3's A2C), chosen by
the ``optimizer`` setting of the family's ``OPTIMIZER_CHOICE_PARAMS`` (``rlplug.families.onpolicy``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch

from ...errors import UnknownNameError
from ...families.onpolicy import ROLLOUT_OPTIMIZERS
from ...util.suggest import did_you_mean


def rollout_optimizer(parameters: Iterable[torch.nn.Parameter], lr: float, settings: Mapping[str, Any]) -> torch.optim.Optimizer:
    """``torch.optim.Adam(parameters, lr)`` unless ``settings["optimizer"]`` is ``"rmsprop"``: then
    ``torch.optim.RMSprop(parameters, lr, alpha=rmsprop_alpha, eps=rmsprop_eps)``, as SB3's A2C makes it with
    ``use_rms_prop`` (weight decay 0, no momentum, not centred)."""
    kind = settings.get("optimizer", "adam")
    if kind not in ROLLOUT_OPTIMIZERS:
        raise UnknownNameError(f"unknown optimizer '{kind}': expected one of {', '.join(ROLLOUT_OPTIMIZERS)}"
                               + did_you_mean(str(kind), ROLLOUT_OPTIMIZERS))  # fmt: skip
    if kind == "rmsprop":
        return torch.optim.RMSprop(parameters, lr=lr, alpha=settings["rmsprop_alpha"], eps=settings["rmsprop_eps"])
    return torch.optim.Adam(parameters, lr=lr)
