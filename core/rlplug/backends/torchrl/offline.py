"""TorchRL building blocks for offline cells: the dataset as a ``TensorDictReplayBuffer`` in TorchRL's
transition layout, and the trainer that takes gradient steps from it without a collector.

TorchRL's losses take any batch in its layout (reference §9.1); a cell subclasses
``TorchRLOfflineTrainer`` with ``gradient_step()`` (sample, loss, optimiser step, target update).
"""

from __future__ import annotations


from typing import Any

import numpy as np
import torch
from tensordict import TensorDict
from torch import nn
from torchrl.data import LazyTensorStorage, RandomSampler, TensorDictReplayBuffer

from ...hooks import LOOPS
from ...hookspecs import Build
from ..common.offline import OfflineTrainerBase, dataset_transitions
from ..common.parallel import sync_gradients
from ..common.seeding import configure_threads, seed_everything
from .buffers import extend_quietly
from .export import torchrl_policy_export
from .modules import deterministic_actions


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
        storage=LazyTensorStorage(len(data), device=build.device),
        sampler=RandomSampler(),
        batch_size=build.settings["batch_size"],
    )
    extend_quietly(buffer, data)
    return buffer


class TorchRLOfflineTrainer(OfflineTrainerBase):
    """Offline gradient steps on ``build.memory`` (the dataset buffer); no environment, no collector.

    One gradient step: sample a batch, call the registered loss, sum its optimised terms, clip the
    gradient norm of the first ``clip_groups`` parameter groups (all when ``None``), step the
    optimiser, step the target updater from the hook. Subclasses give ``make_optimizer(build)`` (one
    optimiser, a parameter group per network) and ``policy_module(build)`` (the module whose
    ``"action"`` output, in DETERMINISTIC exploration mode, is the evaluated action).
    """

    clip_groups: int | None = None
    hook_loop = LOOPS["torchrl", "offline"]

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        configure_threads()
        seed_everything(build.seed)
        self.memory = build.memory
        self.loss, self.target_updater = build.loss, build.target_updater
        self.optimised_terms = tuple(build.loss_entry.terms)
        self.logged_terms = self.optimised_terms + tuple(t for t in build.loss_entry.reported if t not in self.optimised_terms)
        self.grad_norm_clip = build.settings.get("grad_norm_clip", 0.0)
        self.optimizer = self.make_optimizer(build)
        self.policy = self.policy_module(build)

    def make_optimizer(self, build: Build) -> torch.optim.Optimizer:  # pragma: no cover - abstract
        raise NotImplementedError

    def policy_module(self, build: Build) -> nn.Module:  # pragma: no cover - abstract
        raise NotImplementedError

    def loss_terms(self, sample: TensorDict) -> dict[str, torch.Tensor]:
        """The loss's terms on one batch; a cell whose terms change from step to step (td3bc's delayed
        actor term) overrides this."""
        return dict(self.loss(sample).items())  # one pass over the tensordict, then dict lookups

    def optimise(self, sample: TensorDict) -> dict[str, torch.Tensor]:
        """Loss, backward, optimiser step: what ``compile = true`` compiles (the target update stays eager)."""
        out = self.hooks.process_loss(sample, self.loss_terms(sample))
        total = sum(out[name] for name in self.optimised_terms if name in out)
        self.optimizer.zero_grad(set_to_none=True)
        total.backward()
        sync_gradients(self.optimizer)  # data-parallel runs: the mean gradient over ranks
        if self.grad_norm_clip > 0:
            for group in self.optimizer.param_groups[: self.clip_groups]:
                nn.utils.clip_grad_norm_(group["params"], self.grad_norm_clip)
        self.optimizer.step()
        return {name: out[name] for name in self.logged_terms if name in out}

    def gradient_step(self) -> dict[str, torch.Tensor]:
        if "_optimise" not in self.__dict__:
            self._optimise = self.compiled(self.optimise)
        terms = self._optimise(self.hooks.process_optim_batch(self.memory.sample()))
        self.target_updater.step()
        return terms

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:
        return deterministic_actions(self.policy, observations, self.build.device)

    def export_policy(self) -> nn.Module:
        """``act_deterministic`` as one module: the policy's network and its deterministic action."""
        return torchrl_policy_export(self.build, self.policy)

    # -- checkpoints: the loss holds the online and target parameters (and log alpha) -------------

    def module_state(self) -> dict[str, Any]:
        return {
            "loss": self.loss.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "target_updater": self.target_updater.state_dict(),
        }

    def load_module_state(self, state: dict[str, Any]) -> None:
        self.loss.load_state_dict(state["loss"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.target_updater.load_state_dict(state["target_updater"])
