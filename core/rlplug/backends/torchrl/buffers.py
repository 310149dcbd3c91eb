"""TorchRL replay buffers: filling a lazy storage quietly."""

from __future__ import annotations

from typing import Any

from tensordict import TensorDict

from .env import quiet_torchrl_info


def extend_quietly(memory: Any, transitions: TensorDict) -> None:
    """``memory.extend(transitions)``; the first call, which sizes a lazy storage, without TorchRL's INFO line."""
    if len(memory):
        memory.extend(transitions)
    else:
        with quiet_torchrl_info():
            memory.extend(transitions)
