"""TorchRL building blocks for offline cells: the dataset as a ``TensorDictReplayBuffer`` in TorchRL's
transition layout, and the trainer that takes gradient steps from it without a collector.

TorchRL's losses take any batch in its layout (reference §9.1); a cell subclasses
``TorchRLOfflineTrainer`` with its optimisers and update stages (``TorchRLStagedUpdates``), as an
off-policy cell subclasses ``TorchRLOffPolicyTrainer``.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict
from torchrl.data import RandomSampler, TensorDictReplayBuffer

from ...contract.hookspecs import Build
from ...hooks import LOOPS
from ..common.offline import OfflineTrainerBase, dataset_transitions
from ..common.seeding import configure_threads, seed_everything
from .buffers import TransitionStorage, extend_quietly
from .staged import TorchRLStagedUpdates


def dataset_tensordict(build: Build) -> TensorDict:
    """The dataset as one ``[N]`` tensordict: ``observation``, ``action`` and ``next`` with
    ``observation``, ``reward``, ``terminated``, ``truncated`` and ``done`` (what TorchRL's losses read).

    Discrete actions stay indices (``[N]`` int64), as ``GymWrapper(categorical_action_encoding=True)``
    and rlplug's ``q_value_actor`` produce them.
    """
    _, data = dataset_transitions(build)
    count = len(data["reward"])
    action = data["action"].reshape(count) if data["action"].dtype == torch.int64 else data["action"]
    nxt = {
        "observation": data["next_observation"],
        "reward": data["reward"],
        "terminated": data["terminated"],
        "truncated": data["truncated"],
        "done": data["terminated"] | data["truncated"],
    }
    return TensorDict(
        {"observation": data["observation"], "action": action, "next": TensorDict(nxt, batch_size=[count])},
        batch_size=[count],
        device=build.device,
    )


def dataset_buffer(build: Build) -> TensorDictReplayBuffer:
    """A ``TensorDictReplayBuffer`` holding the whole dataset, sampled uniformly in ``batch_size`` batches."""
    data = dataset_tensordict(build)
    buffer = TensorDictReplayBuffer(
        storage=TransitionStorage(len(data), device=build.device),  # upstream's, sampled leaf by leaf
        sampler=RandomSampler(),
        batch_size=build.settings["batch_size"],
    )
    extend_quietly(buffer, data)
    return buffer


class TorchRLOfflineTrainer(TorchRLStagedUpdates, OfflineTrainerBase):
    """Offline gradient steps on ``build.memory`` (the dataset buffer); no environment, no collector.

    One gradient step samples a batch and runs the cell's update stages (``TorchRLStagedUpdates``: by
    default the registered loss's optimised terms summed, the gradient norm of each of the optimiser's
    first ``clip_groups`` parameter groups clipped, one optimiser step), then the target update.
    Subclasses give ``make_optimizers(build)`` and name their policy (``policy_model``).
    """

    hook_loop = LOOPS["torchrl", "offline"]

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        configure_threads()
        seed_everything(build.seed)
        self.memory = build.memory
        self.init_updates(build)
