"""``DiscreteCQL``: CQL for Discrete actions on skrl's ``Agent`` base."""

from __future__ import annotations

from typing import Any

import torch
from rlplug.backends.skrl import UpdateStage, hard_copy

from .skrl_base import OfflineStagedAgent


class DiscreteCQL(OfflineStagedAgent):
    """Q-learning + the CQL penalty on skrl's ``Agent`` base (DQN's roles, one Adam, one stage: "critic")."""

    update_stages = (UpdateStage("critic", optimizer="optimizer"),)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.q_network, self.target_q_network = self.models["q_network"], self.models["target_q_network"]
        hard_copy(self.target_q_network, self.q_network)
        self.optimizer = torch.optim.Adam(self.q_network.parameters(), lr=self.cfg.learning_rate[1])
        self.checkpoint_modules["q_network"] = self.q_network
        self.checkpoint_modules["target_q_network"] = self.target_q_network
        self.checkpoint_modules["optimizer"] = self.optimizer

    def act(self, observations: torch.Tensor, states: torch.Tensor | None, *, timestep: int, timesteps: int) -> tuple[torch.Tensor, dict[str, Any]]:
        """The argmax of Q (``[B, 1]`` int64, what the memory stores)."""
        q_values, _ = self.q_network.compute({"observations": observations}, role="q_network")
        return q_values.argmax(dim=-1, keepdim=True), {}
