"""skrl building blocks for offline cells: the dataset in a skrl ``RandomMemory`` and the trainer that
takes gradient steps without an environment.

skrl has no offline path (every trainer steps an env, reference §11): a cell writes its agent on
skrl's ``Agent`` base with a ``gradient_step()`` that samples ``agent.memory`` and returns its loss
terms, and subclasses ``SkrlOfflineTrainer`` with ``make_agent``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from skrl.agents.torch import Agent
from skrl.memories.torch import RandomMemory

from ...hooks import LOOPS
from ...hookspecs import Build
from ..common.offline import OfflineTrainerBase, dataset_transitions
from ..common.seeding import configure_threads
from .env import seed_skrl
from ..common.encoders import compact_dtype
from .memory import OBSERVATION_TENSORS, SKRL_NAMES
from .models import flat_observations

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


class SkrlOfflineTrainer(OfflineTrainerBase):
    """Drives a skrl agent's ``gradient_step()`` on the dataset memory; no environment is stepped.

    Subclasses implement ``make_agent(build)`` (an ``Agent`` with ``gradient_step() -> dict`` of loss
    terms and ``checkpoint_modules``), and ``act_deterministic``. Models stay in training mode during
    updates and are evaluated through ``compute`` (no dropout or batch norm in rlplug's models).
    """

    hook_loop = LOOPS["skrl", "offline"]

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        configure_threads()
        seed_skrl(build.seed)
        self.agent = self.make_agent(build)
        self.agent.trainer_hooks = self.hooks
        self.agent.init()
        self.agent.enable_training_mode(True)
        self.agent.enable_models_training_mode(True)
        if build.settings.get("compile") and hasattr(self.agent, "optimise_stage"):  # a StagedLossAgent
            self.agent.stage_step = self.compiled(self.agent.optimise_stage)

    def make_agent(self, build: Build) -> Agent:  # pragma: no cover - abstract
        raise NotImplementedError

    def gradient_step(self) -> dict[str, torch.Tensor]:
        return self.agent.gradient_step()

    def observations(self, observations: np.ndarray) -> torch.Tensor:
        return flat_observations(observations, self.build.device)

    def module_state(self) -> dict[str, Any]:
        modules = {name: module.state_dict() for name, module in self.agent.checkpoint_modules.items()}
        extra = getattr(self.agent, "extra_state", None)
        return {"modules": modules, "agent": extra() if extra else {}}

    def load_module_state(self, state: dict[str, Any]) -> None:
        for name, module in self.agent.checkpoint_modules.items():
            if name not in state["modules"]:
                raise KeyError(f"the checkpoint holds no '{name}' module")
            module.load_state_dict(state["modules"][name])
        load_extra = getattr(self.agent, "load_extra_state", None)
        if load_extra:
            load_extra(state["agent"])
