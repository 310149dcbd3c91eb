"""What every offline algorithm shares before torch is imported: its neutral hyperparameters and
their translation into settings both backends read.

IQL and CQL declare ``OFFLINE_PARAMS + TARGET_PARAMS`` next to their own. An offline recipe names a
``dataset`` to train from and the ``env`` it is evaluated on; its ``steps`` budget counts gradient
updates, not environment steps. Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..schema import Param

OFFLINE_PARAMS = (
    Param("batch_size", 256, "transitions per gradient step, sampled uniformly from the dataset", bounds="[1, 2**20]",
          search=(64, 128, 256, 512)),
    Param("log_every", 1_000, "gradient updates between two metric rows (one trainer iteration)", bounds="[1, inf)"),
    Param("eval_every", 5_000, "gradient updates between two evaluations during training (0: only at the end)",
          bounds="[0, inf)"),
    Param("eval_episodes", 5, "deterministic episodes per evaluation during training (the final one uses the recipe's)",
          bounds="[1, 10**6]"),
    Param("action_margin", 0.0, "continuous actions: pull dataset actions this fraction of the half-range inside the "
          "bounds (0.01 keeps a tanh-squashed policy's log-prob finite at actions recorded on the bound)", bounds="[0, 1)"),
)
"""Every offline cell: minibatches sampled from the dataset, logging and periodic evaluation, the action margin."""


def offline_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """The settings every offline trainer reads, identical on both backends."""
    if hp["batch_size"] < 1:
        raise ValueError(f"batch_size must be at least 1, got {hp['batch_size']}")
    if hp["log_every"] < 1:
        raise ValueError(f"log_every must be at least 1, got {hp['log_every']}")
    if not 0.0 <= hp["action_margin"] < 1.0:
        raise ValueError(f"action_margin must be in [0, 1), got {hp['action_margin']}")
    return {
        "batch_size": hp["batch_size"],
        "log_every": hp["log_every"],
        "eval_every": hp["eval_every"],
        "eval_episodes": hp["eval_episodes"],
        "action_margin": hp["action_margin"],
    }
