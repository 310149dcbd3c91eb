"""TD3 on skrl: models, replay memory, the staged TD3 loss, the target updater, the agent, the trainer.

Reads top to bottom like a single-file TD3 on skrl 2.1. The agent is skrl's own ``TD3`` with one
change: each gradient step asks the registered loss object (``build.loss``) for the terms of each
stage ("critic" on every step, "policy" on every ``policy_delay``-th) and steps the target networks
with the updater from the target-updater hook where upstream does its polyak update. The default
loss, ``TD3Loss``, is skrl's math line for line; exploration noise is skrl's own ``GaussianNoise`` or
``OrnsteinUhlenbeckNoise`` scaled by a ``LinearSchedule``.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import (
    DeterministicPolicy,
    ModuleTargetUpdate,
    SkrlOffPolicyTrainer,
    StagedLossAgent,
    UpdateStage,
    configure_threads,
    critic_values,
    hard_copy,
    module_target_update,
    observation_encoder,
    q_model,
    replay_memory,
    resolve_class,
    seed_skrl,
)
from rlplug.families import LinearSchedule
from skrl.agents.torch.td3 import TD3, TD3_CFG
from skrl.memories.torch import RandomMemory
from skrl.models.torch import Model
from skrl.resources.noises.torch import GaussianNoise
from skrl.utils.spaces.torch import compute_space_limits

# ---- models -------------------------------------------------------------------------------------


CRITICS = ("critic_1", "critic_2")
"""The critics' model roles (twin Q-networks); a derived cell names its own (DDPG: one, ``critic``)."""


def build_models(build: Build, critics: tuple[str, ...] = CRITICS) -> dict[str, Model]:
    """A tanh-bounded deterministic policy, the Q(s, a) ``critics``, and a target copy of each."""
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    models = {  # each network reads through its own copy of the cell's encoder
        "policy": DeterministicPolicy(*args, encoder=observation_encoder(build)),
        "target_policy": DeterministicPolicy(*args, encoder=observation_encoder(build)),
        **{name: q_model(*args, encoder=observation_encoder(build)) for name in critics},
        **{f"target_{name}": q_model(*args, encoder=observation_encoder(build)) for name in critics},
    }
    for name in ("policy", *critics):
        hard_copy(models[f"target_{name}"], models[name])
    return models


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> RandomMemory:
    return replay_memory(build)


# ---- loss ---------------------------------------------------------------------------------------


class TD3Loss:
    """skrl's TD3 loss in two stages, called as ``loss(agent, batch, stage)``.

    "critic": the target policy's next action plus clipped Gaussian smoothing noise, clamped to the
    action bounds; the minimum of the target critics bootstraps ``r + gamma * (1 - terminated) *
    min Q'``; ``loss_critic`` is the sum of the critics' MSE to it. "policy": ``loss_policy = -Q1(s,
    pi(s))``. The critics are the agent's ``critic_roles``, so one critic and no smoothing noise is
    skrl's DDPG. The operations (and random draws) come in upstream's order, so the result is bitwise
    skrl's.

    A derived loss overrides the piece that differs: ``critic_distance`` (one critic's loss against the
    target: MSE), ``target_q`` (the target critics' values combined: the minimum) or the whole
    ``critic_target``.
    """

    def __init__(self, discount_factor: float, smoothing_noise: GaussianNoise | None, smoothing_clip: float) -> None:
        self.discount_factor = discount_factor
        self.smoothing_noise = smoothing_noise
        self.smoothing_clip = smoothing_clip

    def __call__(self, agent: TD3, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        if stage == "critic":
            return self.critic(agent, batch)
        if stage == "policy":
            return self.policy(agent, batch)
        raise ValueError(f"td3 has stages 'critic' and 'policy', not '{stage}'")

    def critic_distance(self, q: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """One critic's loss against the target, reduced to a scalar (mean squared error)."""
        return F.mse_loss(q, target)

    def target_q(self, target_qs: list[torch.Tensor]) -> torch.Tensor:
        """The target critics' values at (s', a') combined into one (the minimum: clipped double Q)."""
        return functools.reduce(torch.min, target_qs)

    def critic_target(self, agent: TD3, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """``r + gamma * (1 - terminated) * target_q(...)`` at the target policy's smoothed next action, out of autograd."""
        next_inputs = {"observations": batch["next_observations"], "states": batch["next_states"]}
        with torch.no_grad():
            next_actions, _ = agent.target_policy.act(next_inputs, role="target_policy")
            if self.smoothing_noise is not None:
                noises = torch.clamp(
                    self.smoothing_noise.sample(next_actions.shape), min=-self.smoothing_clip, max=self.smoothing_clip
                )
                next_actions.add_(noises)
                next_actions.clamp_(min=agent.action_low, max=agent.action_high)
            target_q = critic_values(agent, [f"target_{r}" for r in agent.critic_roles], next_inputs, next_actions)
            return batch["rewards"] + self.discount_factor * batch["terminated"].logical_not() * self.target_q(target_q)

    def critic(self, agent: TD3, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        target_values = self.critic_target(agent, batch)
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        q = critic_values(agent, agent.critic_roles, inputs, batch["actions"])
        return {"loss_critic": functools.reduce(operator.add, (self.critic_distance(v, target_values) for v in q))}

    def policy(self, agent: TD3, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        actions, _ = agent.policy.act(inputs, role="policy")
        first = agent.critic_roles[0]
        q1, _ = getattr(agent, first).act({**inputs, "taken_actions": actions}, role=first)
        return {"loss_policy": -q1.mean()}


def make_td3_loss(build: Build, loss_class: type[TD3Loss] = TD3Loss) -> TD3Loss:
    """The registered default loss ("td3") for td3/skrl (``loss_class``: a loss derived from it, td3bc's)."""
    s = build.settings
    noise_class = resolve_class("noise", s["smooth_regularization_noise"])
    noise = None if noise_class is None else noise_class(**s["smooth_regularization_noise_kwargs"], device=build.device)
    return loss_class(s["discount_factor"], noise, s["smooth_regularization_clip"])


# ---- target networks ----------------------------------------------------------------------------


def build_target_updater(build: Build) -> ModuleTargetUpdate:
    """Policy and critics move together, on the delayed (policy) steps, like upstream's polyak update."""
    m = build.models
    return module_target_update(build, [(m[name], m[name.removeprefix("target_")]) for name in m if name.startswith("target_")])


# ---- agent --------------------------------------------------------------------------------------


class StagedTD3(StagedLossAgent):
    """TD3's update on a skrl deterministic actor-critic agent, mixed in before skrl's agent class
    (``LossDelegatingTD3(StagedTD3, TD3)``): upstream's update as stages of the registered loss, the
    critic on every gradient step, the policy and the target update on every ``policy_delay``-th. A
    derived agent sets ``critic_roles`` and ``policy_delay`` (DDPG: ``("critic",)`` and 1). ``action_low``
    and ``action_high`` are the action bounds the smoothed target action is clamped to (skrl's limits).
    """

    critic_roles: tuple[str, ...] = CRITICS
    update_stages = (UpdateStage("critic"), UpdateStage("policy", every="policy_delay"))
    target_every = "policy_delay"
    # skrl checkpoints models and optimisers; the OU noise's state and the exploration schedule's clock are ours
    checkpointed = ("_exploration_noise.state", "exploration_timestep")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.exploration_timestep = 0
        self.action_low, self.action_high = compute_space_limits(self.action_space, device=self.device, none_if_unbounded="any")

    @property
    def policy_delay(self) -> int:
        return self.cfg.policy_delay

    def gradient_step(self, *, timestep: int = 0, timesteps: int = 0) -> dict[str, torch.Tensor]:
        self.exploration_timestep = timestep  # the exploration schedule's clock, for the logged scale
        return super().gradient_step(timestep=timestep, timesteps=timesteps)

    def exploration_scale(self) -> float:
        schedule = self.cfg.exploration_scheduler
        return 1.0 if schedule is None else float(schedule(self.exploration_timestep))

    def extra_metrics(self) -> dict[str, float]:
        return {"train/exploration_scale": self.exploration_scale(), "train/policy_updates": float(self.target_updater.steps)}


class LossDelegatingTD3(StagedTD3, TD3):
    """skrl's TD3 with ``StagedTD3``'s gradient step."""


def common_config(build: Build) -> dict[str, Any]:
    """The fields ``TD3_CFG`` shares with ``DDPG_CFG``; rlplug's trainer owns warm-up and the update cadence."""
    s = build.settings
    noise_kwargs = {**s["exploration_noise_kwargs"], "device": build.device}
    # skrl's scheduler sees vector-env timesteps; the settings count transitions over all envs
    decay = s["exploration_decay_steps"] // build.num_envs
    return dict(
        gradient_steps=1,
        batch_size=s["batch_size"],
        discount_factor=s["discount_factor"],
        polyak=s["tau"],  # unused: build.target_updater moves the targets
        learning_rate=tuple(s["learning_rate"]),
        random_timesteps=0,
        learning_starts=0,
        grad_norm_clip=s["grad_norm_clip"],
        exploration_noise=resolve_class("noise", s["exploration_noise"]),
        exploration_noise_kwargs=noise_kwargs,
        exploration_scheduler=LinearSchedule(s["exploration_scale_start"], s["exploration_scale_end"], decay),
        experiment={"write_interval": 0, "checkpoint_interval": 0},
    )


def agent_config(build: Build) -> TD3_CFG:
    """skrl's ``TD3_CFG``: the common fields, the policy delay and the target-policy smoothing."""
    s = build.settings
    return TD3_CFG(
        **common_config(build),
        policy_delay=s["policy_delay"],
        smooth_regularization_noise=resolve_class("noise", s["smooth_regularization_noise"]),
        smooth_regularization_noise_kwargs={**s["smooth_regularization_noise_kwargs"], "device": build.device},
        smooth_regularization_clip=s["smooth_regularization_clip"],
    )


# ---- trainer ------------------------------------------------------------------------------------


class SkrlTD3Trainer(SkrlOffPolicyTrainer):
    """rlplug's off-policy loop around ``LossDelegatingTD3``; evaluation and export use the noiseless
    policy (skrl's ``act`` adds noise even in eval, §14.5). A derived cell names its own ``agent_class``
    and ``agent_config``."""

    agent_class = LossDelegatingTD3
    agent_config = staticmethod(agent_config)
    policy_output = "output"


build_trainer = SkrlTD3Trainer
