"""IQL for Discrete actions on TorchRL, and the TorchRL backend module iql's declaration names: a Box build goes
to ``torchrl_backend`` unchanged, a Discrete one gets ``torchrl.objectives.DiscreteIQLLoss`` (issue 49).

A categorical actor, two Q(s, .) networks and V(s) go into ``DiscreteIQLLoss`` (index actions,
``action_space="categorical"``) with the TD(0) estimator, the same three Adam groups and target update as the
Box cell; evaluation acts with the categorical actor's mode (the argmax of its logits). The lean loss
("iql-lean", the TorchRL default) is Box-only: on Discrete actions it is ``DiscreteIQLLoss`` itself.
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
from rlplug import Build
from rlplug.backends.torchrl import (categorical_actor, configure_threads, observation_keys, observation_net, seed_everything,
                                    set_value_estimator, value_operator)  # fmt: skip
from tensordict.nn import TensorDictModule
from torchrl.objectives import DiscreteIQLLoss, IQLLoss

from . import torchrl_backend as box


def is_discrete(build: Build) -> bool:
    return isinstance(build.action_space, gym.spaces.Discrete)


def discrete_models(build: Build) -> dict[str, Any]:
    """A categorical actor, two independently initialised Q(s, .) networks and V(s), each with its own encoder."""
    configure_threads()
    seed_everything(build.seed)
    s, keys, n = build.settings, observation_keys(build), int(build.action_space.n)
    actor = categorical_actor(observation_net(build, n, s["hidden_sizes"], s["activation"]), keys)
    critics = [TensorDictModule(observation_net(build, n, s["hidden_sizes"], s["activation"]), in_keys=keys,
                                out_keys=["state_action_value"]) for _ in range(s["num_qvalue_nets"])]  # fmt: skip
    value = value_operator(observation_net(build, 1, s["hidden_sizes"], s["activation"]), keys)
    return {"actor": actor.to(build.device), "critics": [c.to(build.device) for c in critics], "value": value.to(build.device)}


def make_discrete_iql_loss(build: Build) -> DiscreteIQLLoss:
    s = build.settings
    with warnings.catch_warnings():
        # the shared convert_to_functional registers target parameters DiscreteIQLLoss does not annotate (harmless)
        warnings.filterwarnings("ignore", message="The name target_", category=UserWarning)
        loss = DiscreteIQLLoss(build.models["actor"], build.models["critics"], build.models["value"], action_space="categorical",
                               num_qvalue_nets=s["num_qvalue_nets"], loss_function=s["loss_function"],
                               expectile=s["expectile"], temperature=s["temperature"])  # fmt: skip
    set_value_estimator(loss, s)
    return loss


# ---- what the plugin dispatches to: Box builds to torchrl_backend, Discrete ones to the cell above ----------


def build_models(build: Build) -> dict[str, Any]:
    return discrete_models(build) if is_discrete(build) else box.build_models(build)


build_memory = box.build_memory
build_target_updater = box.build_target_updater
build_trainer = box.build_trainer  # the same optimiser groups (actor, critics, value) and loop; the actor's mode acts


def make_iql_loss(build: Build) -> IQLLoss:
    """The registered "iql" loss: ``IQLLoss`` (Box) or ``DiscreteIQLLoss`` (Discrete)."""
    return make_discrete_iql_loss(build) if is_discrete(build) else box.make_iql_loss(build)


def make_lean_iql_loss(build: Build) -> IQLLoss:
    """The registered "iql-lean" loss: ``LeanIQLLoss`` (Box); on Discrete actions ``DiscreteIQLLoss`` itself."""
    return make_discrete_iql_loss(build) if is_discrete(build) else box.make_lean_iql_loss(build)


def describe_iql_loss() -> dict[str, Any]:
    from rlplug.backends.torchrl import describe_loss

    return describe_loss(IQLLoss, DiscreteIQLLoss, value_estimator="td0")
