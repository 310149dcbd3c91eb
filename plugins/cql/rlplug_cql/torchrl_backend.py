"""CQL on TorchRL: models, the dataset buffer, ``CQLLoss`` / ``DiscreteCQLLoss`` + TD(0), target
updates, the offline trainer.

Reads top to bottom like a single-file offline CQL on TorchRL 0.14 (reference §3.8, §9.1).
Box actions: a squashed-Gaussian (``TanhNormal``) actor and two Q(s, a) networks go into
``CQLLoss``; each gradient step sums ``loss_actor + loss_qvalue + loss_cql + loss_alpha`` (never
``loss_actor_bc``, the behaviour-cloning warm-up loss, which is only reported) and steps one Adam
with three parameter groups. Discrete actions: a ``QValueActor`` goes into ``DiscreteCQLLoss``
(``loss_qvalue + loss_cql``), one Adam. A ``SoftUpdate`` (or hard copy) moves the target Q
parameters after every step.

What rlplug changes around TorchRL's losses:

* Speed, not maths: ``CQLLoss.cql_loss`` subtracts ``Q(s, a_data)`` (``[B, 1]``) from the flattened
  log-sum-exp (``[B * num_random]``), which broadcasts to a ``[B, B * num_random]`` matrix only to
  average it (655k elements at batch 256 and num_random 10, where its arithmetic and gradient took
  ~25 % of a 64x64 step). ``BatchedCQLLoss`` averages each state's ``num_random`` rows first: the
  same loss value and gradients (see tests), from the same random draws in the same order.
* A bug: ``DiscreteCQLLoss`` bootstraps its TD target from the online network (it passes the target
  parameters under a keyword the value estimator ignores) and has no ``min_q_weight``:
  ``PatchedDiscreteCQLLoss`` binds the target parameters and weighs the penalty.
* Lean losses (``loss=cql-lean``, Box and Discrete): the same
  terms from plain tensors, without tensordict plumbing on the hot path (``rlplug.backends.torchrl.lean``).
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from rlplug import Build
from rlplug.backends.torchrl import (
    LeanActorCritic,
    LossTargetUpdate,
    LeanQNetwork,
    chosen_q,
    TorchRLOfflineTrainer,
    UpdateStage,
    adam,
    configure_threads,
    dataset_buffer,
    describe_loss,
    lean_applies,
    loss_output,
    loss_target_update,
    observation_keys,
    observation_net,
    q_value_actor,
    q_value_operator,
    seed_everything,
    tanh_normal_actor,
    td0_target,
)
from tensordict import TensorDictBase
from tensordict.utils import unravel_key
from torch import nn
from torchrl.data import TensorDictReplayBuffer
from torchrl.modules.distributions.utils import rsample_and_log_prob
from torchrl.objectives import CQLLoss, DiscreteCQLLoss, LossModule
from torchrl.objectives.utils import distance_loss


def is_discrete(build: Build) -> bool:
    return isinstance(build.action_space, gym.spaces.Discrete)


# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """Box: a ``TanhNormal`` actor over the action bounds and two independently initialised Q(s, a)
    MLPs. Discrete: one Q(s, .) MLP in a ``QValueActor``. Target networks live in the loss."""
    configure_threads()
    seed_everything(build.seed)
    s = build.settings
    keys = observation_keys(build)
    if is_discrete(build):
        net = observation_net(build, int(build.action_space.n), s["hidden_sizes"], s["activation"])
        return {"q_network": q_value_actor(net, build.action_space, keys).to(build.device)}
    action_size = int(np.prod(build.action_space.shape))
    actor = tanh_normal_actor(observation_net(build, 2 * action_size, s["hidden_sizes"], s["activation"]), build.action_space, keys)
    critics = [
        q_value_operator(observation_net(build, 1, s["hidden_sizes"], s["activation"], action_size), keys) for _ in range(2)
    ]
    return {"actor": actor.to(build.device), "critics": [c.to(build.device) for c in critics]}


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> TensorDictReplayBuffer:
    """The whole dataset in a uniform ``TensorDictReplayBuffer`` (``batch_size`` per sample)."""
    return dataset_buffer(build)


# ---- loss ---------------------------------------------------------------------------------------


class BatchedCQLLoss(CQLLoss):
    """``CQLLoss`` whose conservative penalty skips upstream's ``[B, B * num_random]`` broadcast.

    Upstream's ``cql_loss`` ends with ``mean(lse.flatten() - w * Q(s, a_data))`` where ``lse`` has
    ``B * num_random`` entries and ``Q(s, a_data)`` is ``[B, 1]``; the mean of that broadcast is
    ``mean(lse) - w * mean(Q(s, a_data))``, which this computes per state (``lse`` averaged over
    its ``num_random`` rows). Everything before it (the three proposals, their order of random
    draws, the importance weights, both Q networks in one call) is upstream's code.
    """

    def cql_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        pred_q1 = tensordict.get(self.tensor_keys.pred_q1)
        pred_q2 = tensordict.get(self.tensor_keys.pred_q2)
        if pred_q1 is None or pred_q2 is None:
            raise KeyError("cql_loss needs the predicted Q values q_loss writes: call q_loss first")
        n = self.num_random
        action = tensordict[self.tensor_keys.action]
        random_actions = pred_q1.new_empty((*tensordict.shape[:-1], tensordict.shape[-1] * n, action.shape[-1])).uniform_(-1, 1)
        curr_actions_td, curr_log_pis = self._get_policy_actions(tensordict.copy(), self.actor_network_params, num_actions=n)
        new_curr_actions_td, new_log_pis = self._get_policy_actions(
            tensordict.get("next").copy(), self.actor_network_params, num_actions=n
        )
        # the three proposals for both Q networks in one call: [random | current policy | next policy]
        qvalue_params = torch.cat([self.qvalue_network_params] * 3, 0)
        in_keys = [unravel_key(key) for key in self.actor_network.in_keys]
        random_td = tensordict.select(*self.actor_network.in_keys, strict=False)
        random_td = random_td.named_apply(
            lambda name, x: x.repeat_interleave(n, dim=random_td.ndim - 1) if name in in_keys else None,
            batch_size=[*random_td.batch_size[:-1], random_td.batch_size[-1] * n],
            filter_empty=True,
        )
        random_td.set(self.tensor_keys.action, random_actions)
        expanded = [td.expand(self.num_qvalue_nets, *curr_actions_td.batch_size) for td in (random_td, curr_actions_td, new_curr_actions_td)]
        values = self._vmap_qvalue_network00(torch.cat(expanded, 0).contiguous(), qvalue_params)
        q_random, q_curr, q_new = values.get(self.tensor_keys.state_action_value).split([self.num_qvalue_nets] * 3, dim=0)

        random_density = np.log(0.5 ** curr_actions_td[self.tensor_keys.action].shape[-1])
        losses = []
        for i, pred_q in enumerate((pred_q1, pred_q2)):
            proposals = torch.cat(
                [q_random[i] - random_density, q_new[i] - new_log_pis.detach().unsqueeze(-1), q_curr[i] - curr_log_pis.detach().unsqueeze(-1)],
                -1,
            )
            logsumexp = torch.logsumexp(proposals / self.temperature, dim=-1) * self.min_q_weight * self.temperature
            # per state: mean of its num_random rows (upstream's broadcast mean, without the broadcast)
            logsumexp = logsumexp.reshape(*tensordict.shape, n).mean(-1)
            losses.append(logsumexp - pred_q.squeeze(-1) * self.min_q_weight)
        tensordict.set(self.tensor_keys.cql_q1_loss, losses[0])
        tensordict.set(self.tensor_keys.cql_q2_loss, losses[1])
        cql_q_loss = self._reduce_loss(losses[0] + losses[1], tensordict=tensordict)
        self._clear_weakrefs(
            tensordict, "actor_network_params", "qvalue_network_params", "target_actor_network_params", "target_qvalue_network_params"
        )
        return cql_q_loss, {}


class LeanCQLLoss(LeanActorCritic, BatchedCQLLoss):
    """``BatchedCQLLoss`` computed from plain tensors (``NetworkCall``): upstream's terms (the per-state
    penalty of ``BatchedCQLLoss``), parameters, keys and random draws in upstream's order (the
    next action, the uniform proposals, the current and next policy proposals, the BC sample, the
    actor sample). Each Q network evaluates its three proposals in one call; the actor's distribution
    on the batch is built once for the BC and actor terms (upstream builds the same one twice).
    ``max_q_backup``, the Lagrange variant, a multi-step estimator, priority weights or a loss mask fall
    back to ``BatchedCQLLoss.forward``.
    """

    def critic_distance(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Each Q network's per-sample TD loss against the target (``[N, B]``: the recipe's ``loss_function``)."""
        return distance_loss(prediction, target, loss_function=self.loss_function)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self.max_q_backup or self.with_lagrange or not lean_applies(self, tensordict):
            return super().forward(tensordict)
        keys, in_keys, n = self.tensor_keys, self.actor_network.in_keys, self.num_random
        obs = [tensordict.get(k) for k in in_keys]
        next_obs = [tensordict.get(("next", k)) for k in in_keys]
        action = tensordict.get(keys.action)
        alpha = self.entropy_coefficient
        # TD target: the next action from the current policy, the target Q networks (no gradient)
        with torch.no_grad():
            next_action, next_log_prob = rsample_and_log_prob(self.actor_distribution(next_obs, detach=True))
            next_value = self.qvalues(self.target_qvalue_network_params, next_obs, next_action).min(0)[0]
            if not self.deterministic_backup:
                next_value = next_value - alpha * next_log_prob.unsqueeze(-1)
            target = td0_target(
                self, tensordict.get(("next", keys.reward)), tensordict.get(("next", keys.terminated)), next_value
            ).squeeze(-1)
        q_pred = self.qvalues(self.qvalue_network_params, obs, action)
        loss_qvalue = self.critic_distance(q_pred.squeeze(-1), target.expand_as(q_pred.squeeze(-1))).sum(0).mean()
        # conservative penalty: uniform, current-policy and next-policy proposals, num_random per state
        random_actions = q_pred.new_empty((action.shape[0] * n, action.shape[-1])).uniform_(-1, 1)
        obs_rep = [o.repeat_interleave(n, dim=0) for o in obs]
        next_rep = [o.repeat_interleave(n, dim=0) for o in next_obs]
        with torch.no_grad():
            curr_actions, curr_log_pis = rsample_and_log_prob(self.actor_distribution(obs_rep, detach=True))
            new_actions, new_log_pis = rsample_and_log_prob(self.actor_distribution(next_rep, detach=True))
        proposal_obs = [torch.cat([o, o, x], 0) for o, x in zip(obs_rep, next_rep)]
        values = self.qvalues(self.qvalue_network_params, proposal_obs, torch.cat([random_actions, curr_actions, new_actions], 0))
        q_random, q_curr, q_new = values.split(action.shape[0] * n, dim=1)
        random_density = np.log(0.5 ** action.shape[-1])
        penalty = 0
        for i in range(self.num_qvalue_nets):
            proposals = torch.cat(
                [q_random[i] - random_density, q_new[i] - new_log_pis.unsqueeze(-1), q_curr[i] - curr_log_pis.unsqueeze(-1)], -1
            )
            logsumexp = torch.logsumexp(proposals / self.temperature, dim=-1) * self.min_q_weight * self.temperature
            penalty = penalty + logsumexp.reshape(-1, n).mean(-1) - q_pred[i].squeeze(-1) * self.min_q_weight
        loss_cql = penalty.mean()
        # behaviour cloning (reported) and actor terms: one distribution, two samples, as upstream draws them
        dist = self.actor_distribution(obs)
        _, bc_sample_log_prob = rsample_and_log_prob(dist)
        loss_actor_bc = (alpha * bc_sample_log_prob - dist.log_prob(action)).mean()
        new_action, log_prob = rsample_and_log_prob(dist)
        q_actor = self.qvalues(self.qvalue_network_params, obs, new_action, detach=True).min(0)[0].squeeze(-1)
        loss_actor = (alpha * log_prob - q_actor).mean()
        loss_alpha = (-self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        return loss_output(
            {"loss_actor": loss_actor, "loss_actor_bc": loss_actor_bc, "loss_qvalue": loss_qvalue, "loss_cql": loss_cql,
             "loss_alpha": loss_alpha, "alpha": alpha, "entropy": -log_prob.detach().mean()}  # fmt: skip
        )


class PatchedDiscreteCQLLoss(DiscreteCQLLoss):
    """``DiscreteCQLLoss`` with its target network in the TD target, and ``min_q_weight``.

    Upstream's ``value_loss`` hands the target parameters to ``value_estimate(..., params=...)``,
    a keyword the estimator ignores (it takes ``target_params``), and the estimator's copy of the
    Q network is bound to the online parameters: the TD target bootstraps from the online network
    and the soft-updated target parameters are never read. ``make_value_estimator`` here binds the
    target parameters to that copy instead (updated in place by the target updater, so it follows
    them). Upstream also fixes the penalty's weight at 1; ``min_q_weight`` multiplies it here.
    """

    def __init__(self, *args: Any, min_q_weight: float = 1.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.min_q_weight = min_q_weight

    def make_value_estimator(self, value_type: Any = None, **hyperparams: Any) -> None:
        super().make_value_estimator(value_type, **hyperparams)
        if self.delay_value:
            with warnings.catch_warnings():  # the updater attaches later, in the target-updater stage
                warnings.filterwarnings("ignore", message="No target network updater")
                target_params = self.target_value_network_params
            target_params.to_module(self.value_estimator.value_network, return_swap=False, preserve_module_state=False)

    def cql_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        loss, metadata = super().cql_loss(tensordict)
        return loss * self.min_q_weight, metadata


class LeanDiscreteCQLLoss(LeanQNetwork, PatchedDiscreteCQLLoss):
    """``PatchedDiscreteCQLLoss`` computed from plain tensors (``NetworkCall``): one Q(s, .) call on the
    batch for both the TD term and the penalty, the TD(0) target from the target parameters (the max of
    Q_target(s', .), what the estimator's ``QValueActor`` copy picks), the same terms and reported
    values (``loss_qvalue``, ``loss_cql`` with ``min_q_weight``, ``td_error``, ``pred_value``,
    ``target_value``), parameters and keys, without cloning the batch or running ``QValueModule``. It
    does not write ``td_error`` / ``pred_val`` into the batch (rlplug's replay is uniform). A multi-step
    estimator, priority weights or a loss mask fall back to ``PatchedDiscreteCQLLoss.forward``.
    """

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not self.delay_value or not lean_applies(self, tensordict):
            return super().forward(tensordict)
        keys, in_keys = self.tensor_keys, self.value_network.in_keys
        action = tensordict.get(keys.action)
        q = self.q_call(self.value_network_params, *[tensordict.get(k) for k in in_keys])
        q_a = chosen_q(q, action, self.action_space)
        with torch.no_grad():
            next_q = self.q_call(self.target_value_network_params, *[tensordict.get(("next", k)) for k in in_keys])
            target = td0_target(
                self, tensordict.get(("next", keys.reward)), tensordict.get(("next", keys.terminated)), next_q.max(-1, keepdim=True)[0]
            ).squeeze(-1)
        loss_qvalue = (0.5 * distance_loss(q_a, target, self.loss_function)).mean()
        loss_cql = (torch.logsumexp(q, dim=-1) - q_a).mean() * self.min_q_weight
        with torch.no_grad():
            td_error = (q_a - target).pow(2).unsqueeze(-1).mean(0)
        return loss_output(
            {"loss_qvalue": loss_qvalue, "loss_cql": loss_cql, "td_error": td_error, "pred_value": q.detach().mean(),
             "target_value": target.mean()}  # fmt: skip
        )


def make_cql_loss(
    build: Build, box_loss: type[CQLLoss] = BatchedCQLLoss, discrete_loss: type[DiscreteCQLLoss] = PatchedDiscreteCQLLoss
) -> LossModule:
    """The registered default loss ("cql") for cql/torchrl, with a TD(0) value estimator.

    ``target_entropy = "auto"`` is resolved here (``-action_dim``) so the loss needs no action spec.
    """
    s = build.settings
    if is_discrete(build):
        loss = discrete_loss(
            build.models["q_network"], loss_function=s["loss_function"], delay_value=True, min_q_weight=s["min_q_weight"]
        )
    else:
        target_entropy = s["target_entropy"]
        if target_entropy == "auto":
            target_entropy = -float(np.prod(build.action_space.shape))
        loss = box_loss(
            build.models["actor"],
            build.models["critics"],
            loss_function=s["loss_function"],
            alpha_init=s["alpha_init"],
            fixed_alpha=s["fixed_alpha"],
            target_entropy=target_entropy,
            delay_qvalue=True,
            temperature=s["temperature"],
            min_q_weight=s["min_q_weight"],
            num_random=s["num_random"],
            deterministic_backup=s["deterministic_backup"],
            max_q_backup=False,
            with_lagrange=False,
        )
    loss.make_value_estimator(s["value_estimator"], gamma=s["gamma"])
    return loss


def make_lean_cql_loss(build: Build) -> LossModule:
    """The registered "cql-lean" loss: ``LeanCQLLoss`` for Box actions, ``LeanDiscreteCQLLoss`` for Discrete,
    each constructed as "cql" constructs its upstream class."""
    return make_cql_loss(build, LeanCQLLoss, LeanDiscreteCQLLoss)


def describe_cql_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts (Box and Discrete) and the estimator."""
    return describe_loss(CQLLoss, DiscreteCQLLoss, value_estimator="td0")


# ---- target networks ----------------------------------------------------------------------------


def build_target_updater(build: Build) -> LossTargetUpdate:
    """``SoftUpdate(tau)`` (or a hard copy every ``target_update_period`` steps) of the target Q parameters."""
    return loss_target_update(build, build.loss)


# ---- optimiser ----------------------------------------------------------------------------------


def make_optimizer(loss: LossModule, settings: dict[str, Any]) -> torch.optim.Adam:
    """Box: one Adam with three parameter groups (actor, critics, log alpha), each with its own
    learning rate (the loss detaches what each term must not train, so one backward of the sum
    gives each group its own term's gradient). Discrete: one Adam on the Q network."""
    if isinstance(loss, DiscreteCQLLoss):
        return adam(list(loss.value_network_params.values(True, True)), settings["optimizer_impl"], lr=settings["critic_lr"])
    groups = [
        {"params": list(loss.actor_network_params.values(True, True)), "lr": settings["actor_lr"]},
        {"params": list(loss.qvalue_network_params.values(True, True)), "lr": settings["critic_lr"]},
    ]
    if not settings["fixed_alpha"]:
        groups.append({"params": [loss.log_alpha], "lr": settings["alpha_lr"]})
    return adam(groups, settings["optimizer_impl"])


# ---- trainer ------------------------------------------------------------------------------------


class TorchRLCQLTrainer(TorchRLOfflineTrainer):
    """The core's offline step (sample the dataset, sum the loss's optimised terms, clip the policy and
    Q gradients, never log alpha's, step Adam, then the target updater); evaluation acts with the
    squashed Gaussian mean (Box) or the argmax of Q (Discrete)."""

    update_stages = (UpdateStage("update", clip_groups=2),)  # actor and critics (Discrete: the Q network)

    def make_optimizers(self, build: Build) -> dict[str, torch.optim.Adam]:
        return {"update": make_optimizer(build.loss, build.settings)}

    def policy_module(self, build: Build) -> nn.Module:
        return build.models["q_network" if is_discrete(build) else "actor"]


build_trainer = TorchRLCQLTrainer
