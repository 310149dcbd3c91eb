"""SAC for Discrete actions on TorchRL, and the TorchRL backend module sac's declaration names: a Box build goes to
``torchrl_backend`` unchanged, a Discrete one gets ``torchrl.objectives.DiscreteSACLoss`` (issue 48).

A categorical actor and the twin Q(s, .) networks go into ``DiscreteSACLoss`` (index actions,
``action_space="categorical"``, the entropy target ``0.98 log |A|`` when ``target_entropy = "auto"``) with SAC's value
estimator, its one Adam over actor, critics and alpha, its target update and its loop; evaluation acts with the
categorical actor's mode (the argmax of its logits). The lean loss ("sac-lean", the TorchRL default) is Box-only: on
Discrete actions it is ``DiscreteSACLoss`` itself.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from rlplug import Build
from rlplug.backends.torchrl import (categorical_actor, configure_threads, describe_loss, observation_keys, observation_net,
                                    seed_everything, set_value_estimator)  # fmt: skip
from tensordict.nn import TensorDictModule
from torchrl.objectives import DiscreteSACLoss, SACLoss

from . import torchrl_backend as box
from .settings import refuse_discrete_noise


def is_discrete(build: Build) -> bool:
    return isinstance(build.action_space, gym.spaces.Discrete)


def discrete_models(build: Build) -> dict[str, Any]:
    """A categorical actor and ``num_qvalue_nets`` independently initialised Q(s, .) networks, each with its own encoder."""
    refuse_discrete_noise(build.settings)
    configure_threads()
    seed_everything(build.seed)
    s, keys, n = build.settings, observation_keys(build), int(build.action_space.n)
    actor = categorical_actor(observation_net(build, n, s["hidden_sizes"], s["activation"]), keys)
    critics = [TensorDictModule(observation_net(build, n, s["hidden_sizes"], s["activation"]), in_keys=keys,
                                out_keys=["action_value"]) for _ in range(s["num_qvalue_nets"])]  # fmt: skip
    return {"actor": actor.to(build.device), "critics": [c.to(build.device) for c in critics]}


def make_discrete_sac_loss(build: Build) -> DiscreteSACLoss:
    s = build.settings
    loss = DiscreteSACLoss(build.models["actor"], build.models["critics"], action_space="categorical",
                           num_actions=int(build.action_space.n), num_qvalue_nets=s["num_qvalue_nets"],
                           loss_function=s["loss_function"], alpha_init=s["alpha_init"], fixed_alpha=s["fixed_alpha"],
                           target_entropy=s["target_entropy"])  # fmt: skip
    set_value_estimator(loss, s)
    return loss


# ---- what the plugin dispatches to: Box builds to torchrl_backend, Discrete ones to the cell above ----------


def build_models(build: Build) -> dict[str, Any]:
    return discrete_models(build) if is_discrete(build) else box.build_models(build)


build_memory = box.build_memory
build_target_updater = box.build_target_updater
build_trainer = box.build_trainer  # the same Adam groups (actor, critics, log alpha) and loop; the actor's mode acts


def make_sac_loss(build: Build) -> SACLoss:
    """The registered "sac" loss: ``SACLoss`` (Box) or ``DiscreteSACLoss`` (Discrete)."""
    return make_discrete_sac_loss(build) if is_discrete(build) else box.make_sac_loss(build)


def make_lean_sac_loss(build: Build) -> SACLoss:
    """The registered "sac-lean" loss: ``LeanSACLoss`` (Box); on Discrete actions ``DiscreteSACLoss`` itself."""
    return make_discrete_sac_loss(build) if is_discrete(build) else box.make_lean_sac_loss(build)


def describe_sac_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimators."""
    return describe_loss(SACLoss, DiscreteSACLoss, value_estimator="td0 | td1 | td_lambda")
