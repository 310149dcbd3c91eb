"""skrl replay memory: the names of its tensors, the replay ``RandomMemory``, and its checkpoint state."""

from __future__ import annotations

from typing import Any

from skrl.memories.torch import RandomMemory

from ...hookspecs import Build

# skrl's memory tensor names for the dataset's keys, as its own off-policy agents name them
SKRL_NAMES = {
    "observation": "observations",
    "action": "actions",
    "reward": "rewards",
    "next_observation": "next_observations",
    "terminated": "terminated",
    "truncated": "truncated",
}


# ---- memory -------------------------------------------------------------------------------------


def replay_memory(build: Build) -> RandomMemory:
    """A replay ``RandomMemory`` of ``buffer_size`` transitions spread over the vector env's columns.

    Sampled with replacement: ``torch.randint`` instead of a full ``randperm`` of the buffer on every
    gradient step (what skrl does without replacement), as Stable-Baselines3 and TorchRL sample.
    """
    per_env = max(1, build.settings["buffer_size"] // build.num_envs)
    return RandomMemory(memory_size=per_env, num_envs=build.num_envs, device=build.device, replacement=True)


def memory_state(memory: RandomMemory) -> dict[str, Any]:
    """The filled rows of every memory tensor and the write position: what a resumed run samples from."""
    rows = memory.memory_size if memory.filled else memory.memory_index
    return {
        "tensors": {name: tensor[:rows].clone() for name, tensor in memory.tensors.items()},
        "memory_index": memory.memory_index,
        "env_index": memory.env_index,
        "filled": memory.filled,
    }


def load_memory_state(memory: RandomMemory, state: dict[str, Any]) -> None:
    """Copy a ``memory_state`` back in place (skrl's sampling views stay valid)."""
    for name, saved in state["tensors"].items():
        target = memory.tensors.get(name)
        if target is None or saved.shape[1:] != target.shape[1:] or len(saved) > len(target):
            raise ValueError(f"the checkpoint's replay tensor '{name}' {tuple(saved.shape)} does not fit this memory")
        target[: len(saved)].copy_(saved)
    memory.memory_index = int(state["memory_index"])
    memory.env_index = int(state["env_index"])
    memory.filled = bool(state["filled"])
