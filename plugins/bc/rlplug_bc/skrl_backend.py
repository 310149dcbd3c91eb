"""Behaviour cloning on skrl: the policy, the dataset memory, the loss, the agent, the trainer.

Reads top to bottom like a single-file BC on skrl 2.1, which has neither BC nor an offline path
(reference §11): skrl's models and ``RandomMemory`` hold the policy and the dataset, the agent is
written on skrl's ``Agent`` base, and each gradient step asks the registered loss object
(``build.loss``) for its one stage, ``policy``, stepped by one Adam. The maths is TorchRL's ``BCLoss``:
a distance between ``pi(s)`` and the dataset's action (Box), the cross-entropy of the logits
(Discrete). There are no target networks, so no target updater.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import (
    DeterministicPolicy,
    OfflineLoopAgent,
    SkrlOfflineTrainer,
    StagedLossAgent,
    UpdateStage,
    configure_threads,
    dataset_memory,
    observation_encoder,
    seed_skrl,
    stochastic_policy,
)
from skrl.agents.torch import Agent, AgentCfg

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """The policy, initialised from ``build.seed``: ``tanh(mlp(s))`` scaled into the bounds (Box), or
    a categorical policy's logits (Discrete)."""
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    if isinstance(build.action_space, gym.spaces.Discrete):
        return {"policy": stochastic_policy(*args, encoder=observation_encoder(build))}
    return {"policy": DeterministicPolicy(*args, encoder=observation_encoder(build))}


# ---- memory -------------------------------------------------------------------------------------

build_memory = dataset_memory  # the whole dataset in one RandomMemory, sampled uniformly with replacement


# ---- loss ---------------------------------------------------------------------------------------

DISTANCES = {"l2": F.mse_loss, "l1": F.l1_loss, "smooth_l1": F.smooth_l1_loss}


class BCLoss:
    """BC's loss, one stage ("policy"): called as ``loss(agent, batch, "policy")``. ``mean(distance(pi(s), a))``
    over every action element (Box), ``mean(cross_entropy(logits(s), a))`` (Discrete)."""

    def __init__(self, loss_function: str = "l2") -> None:
        self.distance = DISTANCES[loss_function]

    def __call__(self, agent: BC, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        output, _ = agent.policy.compute({"observations": batch["observations"]}, role="policy")
        actions = batch["actions"]
        if agent.discrete:
            return {"loss_bc": F.cross_entropy(output, actions.reshape(-1).long())}
        return {"loss_bc": self.distance(output, actions)}


def make_bc_loss(build: Build) -> BCLoss:
    """The registered default loss ("bc") for bc/skrl."""
    return BCLoss(build.settings["loss_function"])


# ---- agent --------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class BC_CFG(AgentCfg):
    """Configuration of rlplug's skrl BC agent (skrl's ``XXX_CFG`` style)."""

    batch_size: int = 256
    learning_rate: float = 1e-3
    grad_norm_clip: float = 0.0
    mixed_precision: bool = False


class BC(OfflineLoopAgent, StagedLossAgent, Agent):
    """Behaviour cloning on skrl's ``Agent`` base: role ``policy``, one stage ("policy") stepping
    ``policy_optimizer``. ``init`` is skrl's own: the dataset memory already holds its tensors."""

    update_stages = (UpdateStage("policy"),)
    _tensors_names = ["observations", "actions"]

    def __init__(self, *, cfg: BC_CFG, **kwargs: Any) -> None:
        super().__init__(cfg=cfg, **kwargs)
        self.policy = self.models["policy"]
        self.discrete = isinstance(self.action_space, gym.spaces.Discrete)
        self.policy_optimizer = torch.optim.Adam(self.policy.parameters(), lr=cfg.learning_rate)
        self.checkpoint_modules["policy"] = self.policy
        self.checkpoint_modules["policy_optimizer"] = self.policy_optimizer
        # the AMP scaler, the autocast device type and identity preprocessors come from StagedLossAgent's setup

    def act(self, observations: torch.Tensor, states: torch.Tensor | None, *, timestep: int, timesteps: int) -> tuple[torch.Tensor, dict[str, Any]]:
        return self.policy.act({"observations": self.observation_preprocessor(observations)}, role="policy")

    def sample_batch(self) -> dict[str, torch.Tensor]:
        """One uniform dataset batch by name (BC trains on the raw observations)."""
        return self.sampled_transitions()


def bc_cfg(build: Build) -> BC_CFG:
    """``BC_CFG`` from the settings; TensorBoard and checkpoint writes are rlplug's, so skrl's are off."""
    s = build.settings
    return BC_CFG(batch_size=s["batch_size"], learning_rate=s["learning_rate"], grad_norm_clip=s["grad_norm_clip"],
                  experiment={"write_interval": 0, "checkpoint_interval": 0})  # fmt: skip


# ---- trainer ------------------------------------------------------------------------------------


class SkrlBCTrainer(SkrlOfflineTrainer):
    """rlplug's offline loop around the skrl ``BC`` agent; evaluation acts with the policy's action (Box,
    already in the bounds) or the argmax of its logits (Discrete)."""

    agent_class = BC
    agent_config = staticmethod(bc_cfg)


build_trainer = SkrlBCTrainer
