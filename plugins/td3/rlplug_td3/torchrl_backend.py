"""TD3 on TorchRL: models, replay buffer, ``TD3Loss``, the target updater, and rlplug's off-policy loop.

Reads top to bottom like a single-file TD3 on TorchRL 0.14: a deterministic tanh-bounded actor and
a Q(s, a) network (``TD3Loss`` makes the twin copies and the targets), a ``TensorDictReplayBuffer``,
``TD3Loss`` with its value estimator. Exploration is the actor followed by ``AdditiveGaussianModule``
or ``OrnsteinUhlenbeckProcessModule``, their scale annealed by a ``LinearSchedule``. Each gradient step
is TorchRL's own TD3 recipe: the critic steps on ``value_loss``; every ``policy_delay``-th step the
actor steps on ``actor_loss`` and the target networks move.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from rlplug import Build
from rlplug.backends.torchrl import (
    LeanLoss,
    LossTargetUpdate,
    NetworkCall,
    TorchRLOffPolicyTrainer,
    UpdateStage,
    action_bounds_spec,
    adam,
    configure_threads,
    describe_loss,
    deterministic_actor,
    lean_applies,
    loss_target_update,
    observation_keys,
    observation_net,
    ou_noise,
    q_value_operator,
    replay_buffer,
    seed_everything,
    set_value_estimator,
    stacked_q,
    td0_target,
)
from rlplug.families import LinearSchedule
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn
from torchrl.data import TensorDictReplayBuffer
from torchrl.modules import AdditiveGaussianModule, OrnsteinUhlenbeckProcessModule
from torchrl.objectives import TD3Loss
from torchrl.objectives.utils import distance_loss

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, TensorDictModule]:
    """The actor ``tanh(net(obs))`` scaled into the action bounds, and one Q(s, a) network; each reads
    the observation through its own copy of the cell's encoder (``mlp``: the observation vector)."""
    configure_threads()
    seed_everything(build.seed)
    s = build.settings
    keys = observation_keys(build)
    action_size = int(np.prod(build.action_space.shape))
    actor = deterministic_actor(observation_net(build, action_size, s["hidden_sizes"], s["activation"]), build.action_space, keys)
    qvalue = q_value_operator(observation_net(build, 1, s["hidden_sizes"], s["activation"], action_size), keys)
    return {"actor": actor.to(build.device), "qvalue": qvalue.to(build.device)}


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> TensorDictReplayBuffer:
    return replay_buffer(build)


# ---- loss ---------------------------------------------------------------------------------------


def make_td3_loss(build: Build, loss_class: type[TD3Loss] = TD3Loss) -> TD3Loss:
    """The registered default loss ("td3") for td3/torchrl: ``TD3Loss`` with two Q-networks (copies
    of ``build.models["qvalue"]``, independently initialised), target smoothing and its estimator."""
    s = build.settings
    space = build.action_space
    loss = loss_class(
        build.models["actor"],
        build.models["qvalue"],
        bounds=(torch.as_tensor(space.low, dtype=torch.float32), torch.as_tensor(space.high, dtype=torch.float32)),
        num_qvalue_nets=2,
        policy_noise=s["policy_noise"],
        noise_clip=s["noise_clip"],
        loss_function=s["loss_function"],
    )
    set_value_estimator(loss, s)
    return loss


def describe_td3_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimators."""
    return describe_loss(TD3Loss, value_estimator="td0 | td1 | td_lambda (hp value_estimator)")


class LeanTD3Critic(LeanLoss):
    """What a lean loss with TD3's critic term has (``LeanTD3Loss``, td3bc's), placed before the upstream
    class: ``actor_call`` and ``q_call`` (``NetworkCall``s of the actor and the Q stack), and the hooks
    ``lean_critic_loss`` calls: ``critic_distance`` (each critic's per-sample loss against the target, the
    recipe's ``loss_function``) and ``target_q`` (the target critics' values ``[N, B]`` combined: the minimum)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.actor_call = NetworkCall(self.actor_network)
        self.q_call = NetworkCall(self.qvalue_network)

    def critic_distance(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return distance_loss(prediction, target, loss_function=self.loss_function)

    def target_q(self, target_qs: torch.Tensor) -> torch.Tensor:
        return target_qs.min(0)[0]


class LeanTD3Loss(LeanTD3Critic, TD3Loss):
    """``TD3Loss`` whose ``value_loss`` and ``actor_loss`` compute from plain tensors (``NetworkCall``):
    upstream's terms, parameters, keys and draws (the smoothing noise first), without tensordict
    plumbing or ``vmap``. The actor term reads Q1 only (upstream evaluates both and keeps Q1). A
    multi-step estimator, priority weights or a loss mask fall back to upstream's methods."""

    def value_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        if not lean_applies(self, tensordict):
            return super().value_loss(tensordict)
        return lean_critic_loss(self, tensordict)

    def actor_loss(self, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
        if not lean_applies(self, tensordict):
            return super().actor_loss(tensordict)
        _, q1 = lean_policy_q1(self, tensordict)
        return -q1.mean(), {"state_action_value_actor": q1.detach().unsqueeze(0)}


def _q(loss: Any, params: Any, observations: list[torch.Tensor], action: torch.Tensor, indices: range, detach: bool = False) -> torch.Tensor:
    return stacked_q(loss, params, observations, action, indices, detach).squeeze(-1)


def lean_critic_loss(loss: Any, tensordict: TensorDictBase) -> tuple[torch.Tensor, dict]:
    """TD3's critic term (``TD3Loss.value_loss``, ``TD3BCLoss.qvalue_loss``) on plain tensors: the smoothing noise
    drawn first, the clipped double-Q TD(0) target from the target networks, both critics' errors summed."""
    keys, in_keys = loss.tensor_keys, loss.actor_network.in_keys
    act = tensordict.get(keys.action)
    noise = (torch.randn_like(act) * loss.policy_noise).clamp(-loss.noise_clip, loss.noise_clip)
    nets = range(loss.num_qvalue_nets)
    with torch.no_grad():
        next_obs = [tensordict.get(("next", k)) for k in in_keys]
        next_action = (loss.actor_call(loss.target_actor_network_params, *next_obs) + noise).clamp(loss.min_action, loss.max_action)
        next_q = loss.target_q(_q(loss, loss.target_qvalue_network_params, next_obs, next_action, nets))
        target = td0_target(
            loss, tensordict.get(("next", keys.reward)), tensordict.get(("next", keys.terminated)), next_q.unsqueeze(-1)
        ).squeeze(-1)
    current = _q(loss, loss.qvalue_network_params, [tensordict.get(k) for k in in_keys], act, nets)
    value = loss.critic_distance(current, target.expand_as(current)).sum(0).mean()
    return value, {"next_state_value": next_q, "pred_value": current.detach(), "target_value": target}


def lean_policy_q1(loss: Any, tensordict: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
    """The policy's action on the batch's observations and Q1 of it (the critic's parameters detached)."""
    obs = [tensordict.get(k) for k in loss.actor_network.in_keys]
    action = loss.actor_call(loss.actor_network_params, *obs)
    return action, _q(loss, loss.qvalue_network_params, obs, action, range(1), detach=True)[0]


def make_lean_td3_loss(build: Build) -> LeanTD3Loss:
    """The registered "td3-lean" loss: ``LeanTD3Loss``, constructed as "td3"."""
    return make_td3_loss(build, LeanTD3Loss)


# ---- target networks ----------------------------------------------------------------------------


def build_target_updater(build: Build) -> LossTargetUpdate:
    """Target actor and target critics move together, after each (delayed) actor step."""
    return loss_target_update(build, build.loss)


# ---- exploration --------------------------------------------------------------------------------


def exploration_noise(build: Build) -> nn.Module:
    """Gaussian (std ``exploration_std``) or OU (sigma ``exploration_std``, theta ``ou_theta``, dt 1,
    skrl's discretisation) noise added to the action and projected into the bounds. Its scale
    (``sigma`` / ``eps``) is set from the schedule by the trainer, not by the modules' own annealing."""
    s = build.settings
    if s["exploration_noise"] == "ou":
        return ou_noise(build, sigma=s["exploration_std"], theta=s["ou_theta"])
    spec = action_bounds_spec(build)
    return AdditiveGaussianModule(spec, sigma_init=1.0, sigma_end=0.0, mean=0.0, std=s["exploration_std"], device=build.device)


def noise_scale(noise: nn.Module) -> torch.Tensor:
    """The buffer that scales the noise: ``sigma`` (Gaussian) or ``eps`` (OU)."""
    return noise.eps if isinstance(noise, OrnsteinUhlenbeckProcessModule) else noise.sigma


# ---- trainer ------------------------------------------------------------------------------------


class TorchRLTD3Trainer(TorchRLOffPolicyTrainer):
    """rlplug's TorchRL off-policy loop with TorchRL's TD3 update: separate Adam optimisers for the
    actor and the critics, the critic stepped every gradient step, the actor and the targets every
    ``policy_delay``-th; the collector runs the actor plus the annealed exploration noise."""

    update_stages = (UpdateStage("critic"), UpdateStage("actor", every="policy_delay"))
    target_every = "policy_delay"
    checkpointed = ("noise",)

    def make_optimizers(self, build: Build) -> dict[str, torch.optim.Adam]:
        s, loss = build.settings, build.loss
        groups = {"actor": (loss.actor_network_params, s["actor_lr"]), "critic": (loss.qvalue_network_params, s["critic_lr"])}
        return {name: adam(list(params.values(True, True)), s["optimizer_impl"], lr=lr) for name, (params, lr) in groups.items()}

    def stage_terms(self, stage: str, sample: TensorDict) -> dict[str, torch.Tensor]:
        if stage == "critic":
            return {"loss_qvalue": self.loss.value_loss(sample)[0]}
        return {"loss_actor": self.loss.actor_loss(sample)[0]}

    def make_exploration_policy(self, build: Build) -> nn.Module:
        s = build.settings
        self.noise = exploration_noise(build)
        self.schedule = LinearSchedule(s["exploration_scale_start"], s["exploration_scale_end"], s["exploration_decay_steps"])
        noise_scale(self.noise).fill_(self.schedule(0))
        return TensorDictSequential(self.policy, self.noise)

    def after_batch(self, frames: int) -> None:
        noise_scale(self.noise).fill_(self.schedule(self.env_steps))

    def extra_metrics(self) -> dict[str, float]:
        return {"train/exploration_scale": float(noise_scale(self.noise)), "train/policy_updates": float(self.target_updater.steps)}


build_trainer = TorchRLTD3Trainer
