"""SAC on TorchRL: models, replay buffer, ``SACLoss`` + value estimator, target updates, the trainer.

Reads top to bottom like a single-file SAC on TorchRL 0.14: a squashed-Gaussian (``TanhNormal``)
actor and two Q(s, a) networks go into ``SACLoss`` (v2: no state-value network) with a TD(0) value
estimator by default; a ``SoftUpdate`` moves the target Q parameters after every gradient step. The
registered loss's optimised terms (``loss_actor + loss_qvalue + loss_alpha``) are summed and stepped
by one Adam with three parameter groups (actor, critics, log alpha), each with its own learning rate.
With ``exploration_noise = "ou"`` the collector runs the actor followed by Ornstein-Uhlenbeck noise
(projected into the action bounds), the same process as the skrl backend's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from rlplug import Build
from rlplug.backends.torchrl import (
    LeanActorCritic,
    LossTargetUpdate,
    TorchRLOffPolicyTrainer,
    UpdateStage,
    adam,
    configure_threads,
    describe_loss,
    lean_applies,
    loss_output,
    loss_target_update,
    observation_keys,
    observation_net,
    ou_noise,
    q_value_operator,
    replay_buffer,
    rsample_log_prob,
    seed_everything,
    set_value_estimator,
    state_dependent_exploration,
    state_dependent_head,
    state_dependent_noise,
    tanh_normal_actor,
    td0_target,
)
from tensordict import TensorDictBase
from tensordict.nn import TensorDictSequential
from torch import nn
from torchrl.data import TensorDictReplayBuffer
from torchrl.objectives import SACLoss
from torchrl.objectives.utils import distance_loss

# ---- models -------------------------------------------------------------------------------------


SDE_CLIP_MEAN = 2.0
"""SB3's SAC clamps its pre-tanh mean to [-2, 2] under gSDE (``clip_mean``), so a saturated mean stays where noise moves it."""


def build_models(build: Build, critic_outputs: int = 1) -> dict[str, Any]:
    """A ``TanhNormal`` actor over the action bounds (its scale gSDE's with ``use_sde``) and ``num_qvalue_nets`` (two) independently initialised
    Q(s, a) networks, each reading the observation through its own copy of the cell's encoder.
    ``critic_outputs``: each critic's outputs (a distributional critic's quantiles)."""
    configure_threads()
    seed_everything(build.seed)
    s = build.settings
    keys = observation_keys(build)
    action_size = int(np.prod(build.action_space.shape))
    noise = state_dependent_noise(build, s["train_every"])
    if noise is None:
        actor_net = observation_net(build, 2 * action_size, s["hidden_sizes"], s["activation"])
    else:  # gSDE: the scale from the last hidden features, the mean clamped to [-2, 2] as SB3's SAC
        actor_net = state_dependent_head(build, noise, clip_mean=SDE_CLIP_MEAN)
    actor = tanh_normal_actor(actor_net, build.action_space, keys)
    critics = [
        q_value_operator(observation_net(build, critic_outputs, s["hidden_sizes"], s["activation"], action_size), keys)
        for _ in range(s["num_qvalue_nets"])
    ]
    return {"actor": actor.to(build.device), "critics": [c.to(build.device) for c in critics]}


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> TensorDictReplayBuffer:
    """Uniform replay for TD(0); trajectory slices for TD(1) / TD(lambda) (``replay_buffer``)."""
    return replay_buffer(build)


# ---- loss ---------------------------------------------------------------------------------------


def sac_loss_arguments(build: Build) -> dict[str, Any]:
    """The arguments every SAC-family loss takes (``SACLoss``, ``TQCLoss``, ``REDQLoss``): the actor, the critics
    and the entropy tuning. ``target_entropy = "auto"`` is resolved here (``-action_dim``) so the loss needs no
    action spec."""
    s = build.settings
    target_entropy = s["target_entropy"]
    if target_entropy == "auto":
        target_entropy = -float(np.prod(build.action_space.shape))
    return {"actor_network": build.models["actor"], "qvalue_network": build.models["critics"],
            "num_qvalue_nets": s["num_qvalue_nets"], "alpha_init": s["alpha_init"], "fixed_alpha": s["fixed_alpha"],
            "target_entropy": target_entropy}  # fmt: skip


def make_sac_loss(build: Build, loss_class: type[SACLoss] = SACLoss) -> SACLoss:
    """The registered loss "sac" for sac/torchrl: upstream's ``SACLoss`` over the two critics."""
    loss = loss_class(**sac_loss_arguments(build), loss_function=build.settings["loss_function"])
    set_value_estimator(loss, build.settings)
    return loss


def describe_sac_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimators."""
    return describe_loss(SACLoss, value_estimator="td0 | td1 | td_lambda")


class LeanSACLoss(LeanActorCritic, SACLoss):
    """``SACLoss`` (v2) computed from plain tensors: the same terms, parameters, keys and random draws.

    Upstream's forward spends as long in tensordict plumbing (``to_module``, ``vmap`` over the stacked
    Q parameters, copies) as in arithmetic at rlplug's sizes; this one calls each network through
    ``NetworkCall`` (the inner ``nn.Module`` with its slice of the loss's parameters). Order of draws
    as upstream: the next action (target), then the current one (actor). A multi-step estimator,
    priority weights or a loss mask fall back to ``SACLoss.forward``.

    A derived loss overrides the piece that differs, as on skrl: ``critic_distance`` (per sample; the
    recipe's ``loss_function`` by default, so a Huber critic is ``loss_function = "smooth_l1"``),
    ``target_q`` (the target Q networks' soft values, ``[N, B, 1]``, combined: the minimum), ``policy_q``
    (the online ones at the actor's action: the minimum) or the whole ``critic_target``; it reads the
    networks through ``LeanActorCritic``'s ``qvalues``, ``actor_distribution`` and ``policy_sample``.
    """

    def policy_sample(self, observations: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action of the actor at ``observations`` and its log-probability (``[B]``)."""
        return rsample_log_prob(self.actor_distribution(observations))

    def critic_distance(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Each Q network's per-sample loss against the target (``[N, B]``; summed over N, averaged over B)."""
        return distance_loss(prediction, target, loss_function=self.loss_function)

    def target_q(self, soft_values: torch.Tensor) -> torch.Tensor:
        """The target networks' soft values ``Q'_i(s', a') - alpha * log pi(a'|s')`` (``[N, B, 1]``) combined."""
        return soft_values.min(0)[0]

    def policy_q(self, qvalues: torch.Tensor) -> torch.Tensor:
        """The Q networks' values at the actor's action (``[N, B, 1]``, detached) combined into what it ascends."""
        return qvalues.min(0)[0]

    def critic_target(self, tensordict: TensorDictBase, next_obs: list[torch.Tensor], alpha: torch.Tensor) -> torch.Tensor:
        """The TD(0) soft Bellman target ``[B]``, out of autograd (the next action is the first draw)."""
        keys = self.tensor_keys
        with torch.no_grad():
            next_action, next_log_prob = self.policy_sample(next_obs)
            q_next = self.qvalues(self.target_qvalue_network_params, next_obs, next_action)
            next_value = self.target_q(q_next - alpha * next_log_prob.unsqueeze(-1))
            return td0_target(
                self, tensordict.get(("next", keys.reward)), tensordict.get(("next", keys.terminated)), next_value
            ).squeeze(-1)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._version != 2 or not lean_applies(self, tensordict):
            return super().forward(tensordict)
        keys = self.tensor_keys
        in_keys = self.actor_network.in_keys
        obs = [tensordict.get(k) for k in in_keys]
        next_obs = [tensordict.get(("next", k)) for k in in_keys]
        alpha = self.entropy_coefficient
        target = self.critic_target(tensordict, next_obs, alpha)
        pred = self.qvalues(self.qvalue_network_params, obs, tensordict.get(keys.action)).squeeze(-1)
        loss_qvalue = self.critic_distance(pred, target.expand_as(pred)).sum(0).mean()
        action, log_prob = self.policy_sample(obs)
        q_new = self.policy_q(self.qvalues(self.qvalue_network_params, obs, action, detach=True)).squeeze(-1)
        loss_actor = (alpha * log_prob - q_new).mean()
        loss_alpha = self.entropy_loss(log_prob.detach()).mean()
        return loss_output(
            {"loss_actor": loss_actor, "loss_qvalue": loss_qvalue, "loss_alpha": loss_alpha, "alpha": alpha,
             "entropy": -log_prob.detach().mean()}  # fmt: skip
        )


def make_lean_sac_loss(build: Build) -> LeanSACLoss:
    """The registered "sac-lean" loss (sac/torchrl's default): ``LeanSACLoss``, constructed as "sac"."""
    return make_sac_loss(build, LeanSACLoss)


# ---- target networks ----------------------------------------------------------------------------


def build_target_updater(build: Build) -> LossTargetUpdate:
    """``SoftUpdate(tau)`` (or a hard copy every ``target_update_period`` steps) of the target Q parameters."""
    return loss_target_update(build, build.loss)


# ---- optimiser ----------------------------------------------------------------------------------


def make_optimizer(loss: SACLoss, settings: dict[str, Any]) -> torch.optim.Adam:
    """One Adam, three parameter groups (actor, critics, log alpha), each with its own learning rate.

    Measured against three Adams on the 2-core box (256x256, batch 256, 4 interleaved rounds of 100
    updates): 58.1 vs 57.9 updates per CPU second, the same; one optimiser is one state to checkpoint.
    The loss detaches what each term must not train (Q parameters in the actor loss, log-probs in the
    alpha loss), so one backward of the sum gives each group the gradient of its own term.
    """
    groups = [
        {"params": list(loss.actor_network_params.values(True, True)), "lr": settings["actor_lr"]},
        {"params": list(loss.qvalue_network_params.values(True, True)), "lr": settings["critic_lr"]},
    ]
    if not settings["fixed_alpha"]:
        groups.append({"params": [loss.log_alpha], "lr": settings["alpha_lr"]})
    return adam(groups, settings["optimizer_impl"])


# ---- trainer ------------------------------------------------------------------------------------


class TorchRLSACTrainer(TorchRLOffPolicyTrainer):
    """rlplug's off-policy loop: the collector runs the actor (random samples, plus the optional OU
    noise), each gradient step sums the loss's optimised terms, steps Adam (clipping the actor's and the
    critics' groups, never log alpha's), then the target updater."""

    update_stages = (UpdateStage("update", clip_groups=2),)

    def make_optimizers(self, build: Build) -> dict[str, torch.optim.Adam]:
        return {"update": make_optimizer(build.loss, build.settings)}

    def make_exploration_policy(self, build: Build) -> nn.Module:
        """The actor's samples (gSDE's with ``use_sde``), followed by OU noise when configured."""
        s = build.settings
        policy = state_dependent_exploration(self.policy, build.action_space) or self.policy
        if s["exploration_noise"] is None:
            return policy
        return TensorDictSequential(policy, ou_noise(build, sigma=s["exploration_std"], theta=s["ou_theta"]))

    def random_warmup_frames(self, build: Build) -> int:
        """``learning_starts``, or none with ``use_sde_at_warmup`` (the gSDE policy collects from the first step)."""
        s = build.settings
        return 0 if s.get("use_sde") and s.get("use_sde_at_warmup") else super().random_warmup_frames(build)

    def extra_metrics(self) -> dict[str, float]:
        return {"train/alpha": float(self.loss.log_alpha.detach().exp())}


build_trainer = TorchRLSACTrainer
