"""What CQL's two skrl agents share: their configuration and ``OfflineStagedAgent``."""

from __future__ import annotations

import dataclasses
from typing import Any

from rlplug import Build
from rlplug.backends.skrl import OfflineLoopAgent, StagedLossAgent
from skrl.agents.torch import Agent, AgentCfg


@dataclasses.dataclass(kw_only=True)
class CQL_CFG(AgentCfg):
    """The agents' configuration (the loss keeps its own hyperparameters); skrl's SAC_CFG names."""

    batch_size: int = 256
    learning_rate: tuple[float, float, float] = (1e-4, 3e-4, 3e-4)  # policy, critics (Q network), entropy
    grad_norm_clip: float = 0.0
    learn_entropy: bool = True
    initial_entropy_value: float = 1.0
    target_entropy: float | None = None
    mixed_precision: bool = False


class OfflineStagedAgent(OfflineLoopAgent, StagedLossAgent, Agent):
    """What both CQL agents share on skrl's ``Agent`` base: batches sampled by name from the dataset memory
    (``StagedLossAgent.sample_batch``; the mixin provides skrl's mixed-precision scaler and identity
    preprocessors: the dataset is used as recorded), skrl's own loop's hooks (``OfflineLoopAgent``), and in each agent a
    deterministic ``act`` for skrl's own evaluation."""

    sampled_names = ("observations", "states", "actions", "rewards", "next_observations", "next_states", "terminated")


def cql_cfg(build: Build) -> CQL_CFG:
    s = build.settings
    return CQL_CFG(
        batch_size=s["batch_size"],
        learning_rate=tuple(s["learning_rate"]),
        grad_norm_clip=s["grad_norm_clip"],
        learn_entropy=s["learn_entropy"],
        initial_entropy_value=s["initial_entropy_value"],
        target_entropy=s["target_entropy"],
        experiment={"write_interval": 0, "checkpoint_interval": 0},
    )
