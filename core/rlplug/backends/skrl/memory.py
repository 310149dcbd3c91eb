"""skrl replay memory: the names of its tensors, the replay ``RandomMemory`` (uint8 images stored as
uint8), and its checkpoint state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from skrl.memories.torch import RandomMemory

from ...contract.hookspecs import Build
from ..common.encoders import compact_dtype
from ..common.nstep import lookahead_positions, nstep_returns

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

OBSERVATION_TENSORS = ("observations", "next_observations")


class CompactMemory(RandomMemory):
    """skrl's ``RandomMemory`` whose named tensors are stored in a dtype of their own.

    skrl's agents create their observation tensors as float32 in ``init()``; for uint8 images that is
    4 bytes a pixel. Here ``stored_dtypes`` (``{"observations": torch.uint8, ...}``) wins over the dtype
    the agent asks for: ``add_samples`` copies the env's float32 pixels (whole numbers) into uint8 rows,
    sampled batches come back as uint8, and the models' encoders scale them.
    """

    def __init__(self, *, stored_dtypes: Mapping[str, torch.dtype] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stored_dtypes = dict(stored_dtypes or {})

    def create_tensor(self, name: str, *, size: Any, dtype: torch.dtype | None = None, keep_dimensions: bool = False) -> bool:
        return super().create_tensor(name, size=size, dtype=self.stored_dtypes.get(name, dtype), keep_dimensions=keep_dimensions)


def observation_memory(build: Build, memory_size: int, num_envs: int, **kwargs: Any) -> RandomMemory:
    """A ``RandomMemory`` of ``memory_size`` rows per env; a ``CompactMemory`` keeping observations of a
    uint8 or bool space as uint8 (an 84x84x4 frame: 28 KB instead of 113 KB)."""
    dtype = compact_dtype(build.observation_space)
    if dtype is None:
        return RandomMemory(memory_size=memory_size, num_envs=num_envs, device=build.device, **kwargs)
    return CompactMemory(
        memory_size=memory_size, num_envs=num_envs, device=build.device,
        stored_dtypes=dict.fromkeys(OBSERVATION_TENSORS, dtype), **kwargs,
    )


def replay_memory(build: Build) -> RandomMemory:
    """A replay ``RandomMemory`` of ``buffer_size`` transitions spread over the vector env's columns.

    Sampled with replacement: ``torch.randint`` instead of a full ``randperm`` of the buffer on every
    gradient step (what skrl does without replacement), as Stable-Baselines3 and TorchRL sample.
    """
    per_env = max(1, build.settings["buffer_size"] // build.num_envs)
    return observation_memory(build, per_env, build.num_envs, replacement=True)


def nstep_transitions(memory: RandomMemory, batch: dict[str, Any], n: int, gamma: float) -> dict[str, Any]:
    """``batch``, sampled from ``memory`` at ``memory.sampling_indexes``, with n-step returns: ``rewards`` the
    discounted sum of up to ``n`` rewards from each sampled step on in its env, ``next_observations``,
    ``next_states`` and ``terminated`` those of the last step summed, and ``discounts`` (``gamma ** steps``)
    for the bootstrap. The sum stops after an episode's last step, so the memory needs a ``truncated``
    tensor besides ``terminated`` (``common.nstep``)."""
    views, envs = memory.tensors_view, memory.num_envs
    capacity = memory.memory_size * envs
    written = memory.memory_index * envs + (capacity if memory.filled else 0)  # congruent to the rows written
    sampled = memory.sampling_indexes.to(views["rewards"].device)
    positions, stored = lookahead_positions(sampled, n, written=written, capacity=capacity, num_envs=envs, steps_per_block=1)
    ended_at = (views["terminated"][positions] | views["truncated"][positions]).squeeze(-1)
    last, returns, steps = nstep_returns(positions, stored, views["rewards"][positions].squeeze(-1), ended_at, gamma)
    out = dict(batch, rewards=returns[:, None], discounts=(gamma ** steps.to(returns.dtype))[:, None])
    for name in ("next_observations", "next_states", "terminated"):
        if out.get(name) is not None:
            out[name] = views[name][last]
    return out


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
