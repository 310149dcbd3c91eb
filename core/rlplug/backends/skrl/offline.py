"""skrl building blocks for offline cells: the dataset in a skrl ``RandomMemory`` and the trainer that
takes gradient steps without an environment.

skrl has no offline path (every trainer steps an env, reference §11): a cell writes its agent on
skrl's ``Agent`` base (or reuses an off-policy one) with ``StagedLossAgent`` mixed in and its update
stages declared, and subclasses ``SkrlOfflineTrainer`` naming that ``agent_class`` and ``agent_config``,
as an off-policy cell subclasses ``SkrlOffPolicyTrainer``.
"""

from __future__ import annotations

from typing import Any

import torch
from skrl.memories.torch import RandomMemory

from ...contract.hookspecs import Build
from ...hooks import LOOPS
from ..common.offline import OfflineTrainerBase, dataset_transitions
from ..common.seeding import configure_threads
from .env import seed_skrl
from ..common.encoders import compact_dtype
from .memory import OBSERVATION_TENSORS, SKRL_NAMES
from .staged import StagedAgentTrainer


def dataset_memory(build: Build) -> RandomMemory:
    """The recipe's dataset as a full ``RandomMemory(memory_size=N, num_envs=1)``, sampled with replacement.

    Tensors are written in place (skrl's bulk ``add_samples`` mishandles large batches, §14.3), then
    the memory is marked full so ``sample`` draws from all N rows.
    """
    _, data = dataset_transitions(build)
    count = len(data["reward"])
    memory = RandomMemory(memory_size=count, num_envs=1, device=build.device, replacement=True)
    compact = compact_dtype(build.observation_space)  # uint8 pixels: 1 byte each in memory, scaled by the encoder
    for key, name in SKRL_NAMES.items():
        value = data[key].reshape(count, 1, -1).to(build.device)
        stored = compact if compact is not None and name in OBSERVATION_TENSORS else value.dtype
        memory.create_tensor(name, size=value.shape[-1], dtype=stored)
        memory.tensors[name].copy_(value)
    memory.filled, memory.memory_index, memory.env_index = True, 0, 0
    return memory


class OfflineLoopAgent:
    """Mixed in before an offline agent's bases (``class BC(OfflineLoopAgent, StagedLossAgent, Agent)``): skrl's
    interaction hooks for driving the agent with skrl's own loop (reference §11), which has no interaction to prepare
    and takes one ``update`` per ``post_interaction`` while training. rlplug's offline trainer calls ``gradient_step``
    directly."""

    def pre_interaction(self, *, timestep: int, timesteps: int) -> None:
        pass

    def post_interaction(self, *, timestep: int, timesteps: int) -> None:
        if self.training:
            self.update(timestep=timestep, timesteps=timesteps)
        super().post_interaction(timestep=timestep, timesteps=timesteps)


class SkrlOfflineTrainer(StagedAgentTrainer, OfflineTrainerBase):
    """Drives a skrl agent's ``gradient_step()`` on the dataset memory; no environment is stepped.

    Subclasses name ``agent_class`` (a ``StagedLossAgent`` whose ``gradient_step()`` returns the terms to
    log) and ``agent_config(build)`` (or override ``make_agent``), and the policy to act and export with
    (``policy_role``, ``policy_output``). Models stay in training mode during updates and are evaluated
    through ``compute`` (no dropout or batch norm in rlplug's models).
    """

    hook_loop = LOOPS["skrl", "offline"]

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        configure_threads()
        seed_skrl(build.seed)
        self.agent = self.make_agent(build)
        self.agent.use_batched_critics(bool(build.settings.get("batched_critics", False)))
        self.agent.trainer_hooks = self.hooks
        self.agent.init()
        self.agent.enable_training_mode(True)
        self.agent.enable_models_training_mode(True)
        self.compile_stages()

    def gradient_step(self) -> dict[str, torch.Tensor]:
        return self.agent.gradient_step()

    def module_state(self) -> dict[str, Any]:
        modules = {name: module.state_dict() for name, module in self.agent.checkpoint_modules.items()}
        return {"modules": modules, "agent": self.agent.extra_state()}

    def load_module_state(self, state: dict[str, Any]) -> None:
        for name, module in self.agent.checkpoint_modules.items():
            if name not in state["modules"]:
                raise KeyError(f"the checkpoint holds no '{name}' module")
            module.load_state_dict(state["modules"][name])
        self.agent.load_extra_state(state["agent"])
