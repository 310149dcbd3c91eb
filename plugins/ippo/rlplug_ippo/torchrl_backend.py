"""IPPO on TorchRL: MAPPO's cell (``rlplug_mappo.torchrl_backend``) with TorchRL's own ``IPPOLoss``.

The models are MAPPO's with ``centralised_critic = false`` (settings): a per-agent critic on each agent's
local observation. ``IPPOLoss`` is ``MAPPOLoss``'s math for such a critic; the keys, the MAGAE estimator,
the buffer and the trainer are MAPPO's.
"""

from __future__ import annotations

from rlplug import Build
from rlplug_mappo import torchrl_backend as mappo
from rlplug_mappo.torchrl_backend import build_memory, build_models, build_trainer  # noqa: F401 -- MAPPO's
from torchrl.objectives.multiagent import IPPOLoss


def make_ippo_loss(build: Build) -> IPPOLoss:
    """The registered default loss ("ippo") for ippo/torchrl: ``IPPOLoss`` set up as mappo's ``MAPPOLoss``."""
    return mappo.make_mappo_loss(build, IPPOLoss)
