"""IQL on TorchRL: models, the dataset buffer, ``IQLLoss`` + TD(0), target updates, the offline trainer.

Reads top to bottom like a single-file Implicit Q-Learning on TorchRL 0.14 (reference §3.7, §9.1): a
squashed-Gaussian (``TanhNormal``) actor, two Q(s, a) networks and a V(s) network go into ``IQLLoss``
with a TD(0) value estimator (the critic's target ``r + gamma * (1 - terminated) * V(s')``). Each
gradient step samples the dataset buffer, sums the registered loss's optimised terms
(``loss_actor + loss_qvalue + loss_value``), steps one Adam with three parameter groups (actor,
critics, value), each at its own learning rate, then the target updater moves the target Q parameters.
Dataset actions recorded on the bounds are pulled ``action_margin`` inside them by the core, which
keeps ``TanhNormal``'s log-prob of them finite (reference §9.3).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from rlplug import Build
from rlplug.backends.torchrl import (
    LeanActorCritic,
    LossTargetUpdate,
    NetworkCall,
    TorchRLOfflineTrainer,
    adam,
    configure_threads,
    dataset_buffer,
    describe_loss,
    lean_applies,
    loss_output,
    loss_target_update,
    observation_keys,
    observation_net,
    q_value_operator,
    seed_everything,
    set_value_estimator,
    tanh_normal_actor,
    td0_target,
    value_operator,
)
from torchrl.data import TensorDictReplayBuffer
from tensordict import TensorDictBase
from torchrl.objectives import IQLLoss
from torchrl.objectives.utils import distance_loss

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """A ``TanhNormal`` actor over the action bounds, two independently initialised Q(s, a) networks and
    V(s), each reading the observation through its own copy of the cell's encoder."""
    configure_threads()
    seed_everything(build.seed)
    s = build.settings
    keys = observation_keys(build)
    action_size = int(np.prod(build.action_space.shape))
    actor = tanh_normal_actor(observation_net(build, 2 * action_size, s["hidden_sizes"], s["activation"]), build.action_space, keys)
    critics = [
        q_value_operator(observation_net(build, 1, s["hidden_sizes"], s["activation"], action_size), keys)
        for _ in range(s["num_qvalue_nets"])
    ]
    value = value_operator(observation_net(build, 1, s["hidden_sizes"], s["activation"]), keys)
    return {"actor": actor.to(build.device), "critics": [c.to(build.device) for c in critics], "value": value.to(build.device)}


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> TensorDictReplayBuffer:
    """The whole dataset in a ``TensorDictReplayBuffer``, sampled uniformly in ``batch_size`` batches."""
    return dataset_buffer(build)


# ---- loss ---------------------------------------------------------------------------------------


def make_iql_loss(build: Build, loss_class: type[IQLLoss] = IQLLoss) -> IQLLoss:
    """The registered default loss ("iql") for iql/torchrl: ``IQLLoss`` with a TD(0) estimator.

    IQLLoss's own defaults (``expectile=0.5``, ``temperature=1.0``) are not the paper's; the recipe's
    values are always passed.
    """
    s = build.settings
    loss = loss_class(
        build.models["actor"],
        build.models["critics"],
        build.models["value"],
        num_qvalue_nets=s["num_qvalue_nets"],
        loss_function=s["loss_function"],
        expectile=s["expectile"],
        temperature=s["temperature"],
    )
    set_value_estimator(loss, s)
    return loss


def describe_iql_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimator."""
    return describe_loss(IQLLoss, value_estimator="td0")


class LeanIQLLoss(LeanActorCritic, IQLLoss):
    """``IQLLoss`` computed from plain tensors (``NetworkCall``): upstream's terms, parameters and keys.

    Upstream evaluates the target Q networks twice (actor and value terms) and V(s) twice, through
    ``vmap`` and tensordicts; the values are the same computed once. The TD target reads V(s')
    detached, as upstream's ``target_value_network_params`` (IQL has no target V). A multi-step
    estimator or a loss mask fall back to ``IQLLoss.forward``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.v_call = NetworkCall(self.value_network)

    def critic_distance(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Each Q network's per-sample loss against the TD target (``[N, B]``: the recipe's ``loss_function``)."""
        return distance_loss(prediction, target, loss_function=self.loss_function)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not lean_applies(self, tensordict):
            return super().forward(tensordict)
        keys, in_keys = self.tensor_keys, self.actor_network.in_keys
        obs = [tensordict.get(k) for k in in_keys]
        action = tensordict.get(keys.action)
        with torch.no_grad():
            min_q = self.qvalues(self.target_qvalue_network_params, obs, action).squeeze(-1).min(0)[0]
            next_value = self.v_call(self.value_network_params, *[tensordict.get(("next", k)) for k in in_keys], detach=True)
            target = td0_target(
                self, tensordict.get(("next", keys.reward)), tensordict.get(("next", keys.terminated)), next_value
            ).squeeze(-1)
        log_prob = self.actor_distribution(obs).log_prob(action)
        value = self.v_call(self.value_network_params, *obs).squeeze(-1)
        weight = torch.exp((min_q - value.detach()) * self.temperature).clamp_max(100)
        loss_actor = -(weight * log_prob).mean()
        pred = self.qvalues(self.qvalue_network_params, obs, action).squeeze(-1)
        loss_qvalue = self.critic_distance(pred, target.expand_as(pred)).sum(0).mean()
        loss_value = self.loss_value_diff(min_q - value, self.expectile).mean()
        return loss_output(
            {"loss_actor": loss_actor, "loss_qvalue": loss_qvalue, "loss_value": loss_value, "entropy": -log_prob.detach().mean()}
        )


def make_lean_iql_loss(build: Build) -> LeanIQLLoss:
    """The registered "iql-lean" loss: ``LeanIQLLoss``, constructed as "iql"."""
    return make_iql_loss(build, LeanIQLLoss)


# ---- target networks ----------------------------------------------------------------------------


def build_target_updater(build: Build) -> LossTargetUpdate:
    """``SoftUpdate(tau)`` (or a hard copy every ``target_update_period`` steps) of the target Q parameters."""
    return loss_target_update(build, build.loss)


# ---- optimiser ----------------------------------------------------------------------------------


def make_optimizer(loss: IQLLoss, settings: dict[str, Any]) -> torch.optim.Adam:
    """One Adam, three parameter groups (actor, critics, value), each with its own learning rate.

    Each of IQLLoss's terms reaches only its own group (the actor loss reads V without gradient and the
    *target* Q parameters; the value loss reads the target Q parameters; the Q loss's target reads V
    detached), so one backward of the sum gives every group the gradient of its own term.
    """
    return adam(
        [
            {"params": list(loss.actor_network_params.values(True, True)), "lr": settings["actor_lr"]},
            {"params": list(loss.qvalue_network_params.values(True, True)), "lr": settings["critic_lr"]},
            {"params": list(loss.value_network_params.values(True, True)), "lr": settings["value_lr"]},
        ],
        settings["optimizer_impl"],
    )


# ---- trainer ------------------------------------------------------------------------------------


class TorchRLIQLTrainer(TorchRLOfflineTrainer):
    """The core's offline step (sample the dataset, sum the loss's optimised terms, clip each group, step
    Adam, then the target updater); evaluation acts with the actor's squashed mean."""

    def make_optimizers(self, build: Build) -> dict[str, torch.optim.Adam]:
        return {"update": make_optimizer(build.loss, build.settings)}


build_trainer = TorchRLIQLTrainer
