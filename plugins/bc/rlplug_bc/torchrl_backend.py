"""Behaviour cloning on TorchRL: the policy, the dataset buffer, ``BCLoss``, the offline trainer.

Reads top to bottom like a single-file BC on TorchRL 0.14: a deterministic actor (``tanh(net(s))``
scaled into the bounds, Box) or a logits module (Discrete) goes into ``torchrl.objectives.BCLoss``,
which compares the actor's ``"action"`` with the dataset's: ``loss_function`` for Box actions, the
cross-entropy of the logits for Discrete ones. Each gradient step samples the dataset buffer and steps
one Adam on ``loss_bc``; there are no target networks. A Discrete policy acts through a
``QValueActor`` over the same network (the argmax of the logits, the categorical policy's mode).
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from rlplug import Build
from rlplug.backends.torchrl import (
    TorchRLOfflineTrainer,
    adam,
    configure_threads,
    dataset_buffer,
    describe_loss,
    deterministic_actor,
    observation_keys,
    observation_net,
    q_value_actor,
    seed_everything,
)
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.objectives import BCLoss

# ---- models -------------------------------------------------------------------------------------


def is_discrete(build: Build) -> bool:
    return isinstance(build.action_space, gym.spaces.Discrete)


def build_models(build: Build) -> dict[str, Any]:
    """Box: ``{"actor"}``, the deterministic actor. Discrete: ``{"actor"}`` writing the logits at "action"
    (what ``BCLoss`` reads) and ``{"policy"}``, the ``QValueActor`` acting with their argmax, one network."""
    configure_threads()
    seed_everything(build.seed)
    s = build.settings
    keys = observation_keys(build)
    if is_discrete(build):
        net = observation_net(build, int(build.action_space.n), s["hidden_sizes"], s["activation"]).to(build.device)
        return {"actor": TensorDictModule(net, in_keys=keys, out_keys=["action"]), "policy": q_value_actor(net, build.action_space, keys)}
    net = observation_net(build, int(np.prod(build.action_space.shape)), s["hidden_sizes"], s["activation"])
    return {"actor": deterministic_actor(net, build.action_space, keys).to(build.device)}


# ---- memory -------------------------------------------------------------------------------------

build_memory = dataset_buffer  # the whole dataset in a TensorDictReplayBuffer, sampled uniformly


# ---- loss ---------------------------------------------------------------------------------------


def make_bc_loss(build: Build) -> BCLoss:
    """The registered default loss ("bc") for bc/torchrl: ``BCLoss`` on the actor, with the recipe's distance
    (Box) or cross-entropy (Discrete)."""
    with warnings.catch_warnings():
        # upstream's convert_to_functional registers a target_actor_network_params BCLoss does not annotate (harmless)
        warnings.filterwarnings("ignore", message="The name target_actor_network_params", category=UserWarning)
        return BCLoss(build.models["actor"], loss_function="cross_entropy" if is_discrete(build) else build.settings["loss_function"])


def describe_bc_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts (no value estimator: no bootstrapping)."""
    return describe_loss(BCLoss, value_estimator="none")


# ---- trainer ------------------------------------------------------------------------------------


class TorchRLBCTrainer(TorchRLOfflineTrainer):
    """The core's offline step (sample the dataset, ``loss_bc``, clip, step one Adam); evaluation acts with
    the actor's action (Box) or the argmax of the logits (Discrete)."""

    def make_optimizers(self, build: Build) -> dict[str, torch.optim.Adam]:
        params = list(build.loss.actor_network_params.values(True, True))
        return {"update": adam([{"params": params, "lr": build.settings["lr"]}], build.settings["optimizer_impl"])}

    def policy_module(self, build: Build) -> nn.Module:
        return build.models["policy" if is_discrete(build) else "actor"]


build_trainer = TorchRLBCTrainer
