"""Training hooks: TorchRL's ``Trainer`` hook points on every rlplug training loop, both backends.

``trainer.register_op(dest, op)`` / ``hook.register(trainer)`` as on a ``torchrl.trainers.Trainer``
(``DESTS``: TorchRL's destination names); a plugin's ``rlplug_trainer_hooks(build)``; a recipe's
``hooks`` field. Registered hook modules are checkpointed with the trainer. The guide's "Hook points"
section says when each destination runs on each family. Torch-free to import.
"""

from __future__ import annotations

from .neutral import NAMED_HOOKS, EarlyStopping, LogScalar, RewardScaling
from .points import DESTS, LOOPS, UNHOOKED, Loop, TrainerHooks, family_loop, own_loop
from .trainer_api import TorchRLTrainerAPI

__all__ = [
    "DESTS", "LOOPS", "NAMED_HOOKS", "EarlyStopping", "LogScalar", "Loop", "RewardScaling", "TorchRLTrainerAPI",
    "TrainerHooks", "UNHOOKED", "family_loop", "own_loop",
]  # fmt: skip
