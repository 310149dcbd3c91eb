"""SAC on skrl: models, replay memory, the staged loss, target updates, the agent that delegates, the trainer.

Reads top to bottom like a single-file SAC on skrl 2.1. The agent is skrl's own ``SAC`` with one
change: each gradient step asks the registered loss object (``build.loss``) for the terms of each of
upstream's three optimiser stages (critic, policy, entropy) instead of computing them inline, and the
target networks move through the updater the target-updater hook built. The default loss,
``SACLoss``, is skrl's math line for line, so one gradient step equals upstream's ``update()``.
``squash_actions`` swaps skrl's unsquashed Gaussian policy for SAC's tanh-squashed one.
With ``exploration_noise = "ou"`` the actions sent to the env while collecting also carry skrl's
``OrnsteinUhlenbeckNoise`` and are clamped into the bounds (as skrl's TD3 does with its noise).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import (
    GaussianPolicy,
    ModuleTargetUpdate,
    SkrlOffPolicyTrainer,
    StagedLossAgent,
    UpdateStage,
    configure_threads,
    module_target_update,
    observation_encoder,
    q_model,
    register_action_bounds,
    replay_memory,
    seed_skrl,
    tanh_log_det,
)
from skrl.agents.torch.sac import SAC, SAC_CFG
from skrl.memories.torch import RandomMemory
from skrl.resources.noises.torch import OrnsteinUhlenbeckNoise
from torch.distributions import Normal

# ---- models -------------------------------------------------------------------------------------


class SquashedGaussianPolicy(GaussianPolicy):
    """SAC's squashed Gaussian (Haarnoja et al. 2018, appendix C) on skrl: ``u ~ N(mean, std)``, the
    action ``center + half_range * tanh(u)`` stays inside the bounds, and the log-probability carries
    the change-of-variables term, like TorchRL's ``TanhNormal`` actor. The deterministic action is
    the squashed mean. skrl's plain Gaussian instead leaves clipping to the env, so the critic is
    asked about actions it never saw."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        register_action_bounds(self, self.action_space, self.device)

    def act(self, inputs: dict[str, Any], *, role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        mean, outputs = self.compute(inputs, role)
        log_std = torch.clamp(outputs["log_std"], min=self._g_min_log_std, max=self._g_max_log_std)
        distribution = Normal(mean, log_std.exp())
        u = distribution.rsample()
        log_det = tanh_log_det(u, self.action_half_range)
        log_prob = (distribution.log_prob(u) - log_det).sum(dim=-1, keepdim=True)
        actions = self.action_center + self.action_half_range * torch.tanh(u)
        return actions, {"log_prob": log_prob, "log_std": log_std, "mean_actions": self.deterministic_actions(mean)}

    def deterministic_actions(self, mean: torch.Tensor) -> torch.Tensor:
        return self.action_center + self.action_half_range * torch.tanh(mean)


def build_models(build: Build) -> dict[str, Any]:
    """A Gaussian policy (state-independent log std, as skrl's SAC examples; optionally tanh-squashed)
    and two Q(s, a) critics with their targets, initialised from ``build.seed``. skrl's SAC
    hard-copies the targets itself."""
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    policy_class = SquashedGaussianPolicy if s["squash_actions"] else GaussianPolicy
    return {  # each network reads through its own copy of the cell's encoder
        "policy": policy_class(*args, encoder=observation_encoder(build)),
        "critic_1": q_model(*args, encoder=observation_encoder(build)),
        "critic_2": q_model(*args, encoder=observation_encoder(build)),
        "target_critic_1": q_model(*args, encoder=observation_encoder(build)),
        "target_critic_2": q_model(*args, encoder=observation_encoder(build)),
    }


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> RandomMemory:
    """The replay memory: ``buffer_size`` transitions over the vector env's columns."""
    return replay_memory(build)


# ---- loss ---------------------------------------------------------------------------------------


class SACLoss:
    """skrl's SAC loss, one stage per optimiser: called as ``loss(agent, batch, stage)``.

    ``critic``: ``(MSE(Q1, y) + MSE(Q2, y)) / 2`` with ``y = r + gamma * not_terminated * (min target
    Q(s', a') - alpha * log pi(a'|s'))``; ``policy``: ``mean(alpha * log pi(a|s) - min Q(s, a))`` (stashes
    ``log_prob`` in ``batch``); ``entropy``: ``-mean(log_alpha * (log_prob + target_entropy))``. The
    order of policy samples is upstream's, so the same seed draws the same actions.
    """

    def __call__(self, agent: SAC, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        return getattr(self, stage)(agent, batch)

    def critic(self, agent: SAC, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        next_inputs = {"observations": batch["next_observations"], "states": batch["next_states"]}
        with torch.no_grad():
            next_actions, outputs = agent.policy.act(next_inputs, role="policy")
            target_q1, _ = agent.target_critic_1.act({**next_inputs, "taken_actions": next_actions}, role="target_critic_1")
            target_q2, _ = agent.target_critic_2.act({**next_inputs, "taken_actions": next_actions}, role="target_critic_2")
            target_q = torch.min(target_q1, target_q2) - agent._entropy_coefficient * outputs["log_prob"]
            target = batch["rewards"] + agent.cfg.discount_factor * batch["terminated"].logical_not() * target_q
        q1, _ = agent.critic_1.act({**inputs, "taken_actions": batch["actions"]}, role="critic_1")
        q2, _ = agent.critic_2.act({**inputs, "taken_actions": batch["actions"]}, role="critic_2")
        return {"loss_critic": (F.mse_loss(q1, target) + F.mse_loss(q2, target)) / 2}

    def policy(self, agent: SAC, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        actions, outputs = agent.policy.act(inputs, role="policy")
        batch["log_prob"] = outputs["log_prob"]
        q1, _ = agent.critic_1.act({**inputs, "taken_actions": actions}, role="critic_1")
        q2, _ = agent.critic_2.act({**inputs, "taken_actions": actions}, role="critic_2")
        return {"loss_policy": (agent._entropy_coefficient * outputs["log_prob"] - torch.min(q1, q2)).mean()}

    def entropy(self, agent: SAC, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        log_prob = batch["log_prob"].detach()
        return {"loss_entropy": -(agent.log_entropy_coefficient * (log_prob + agent._target_entropy)).mean()}


def make_sac_loss(build: Build) -> SACLoss:
    """The registered default loss ("sac") for sac/skrl."""
    return SACLoss()


# ---- target networks ----------------------------------------------------------------------------


def build_target_updater(build: Build) -> ModuleTargetUpdate:
    """Soft (Polyak, ``tau``) or hard (every ``target_update_period`` steps) updates of both target critics."""
    m = build.models
    return module_target_update(build, [(m["target_critic_1"], m["critic_1"]), (m["target_critic_2"], m["critic_2"])])


# ---- agent --------------------------------------------------------------------------------------


class LossDelegatingSAC(StagedLossAgent, SAC):
    """skrl's ``SAC`` whose gradient step takes its terms from a registered staged loss.

    Stages "critic", "policy" and (with ``learn_entropy``) "entropy", in upstream's order; upstream never
    clips the entropy step. Upstream does not checkpoint ``log_entropy_coefficient`` (reference §14.6):
    it is ``checkpointed`` here. ``exploration_noise`` (optional) is added to the sampled actions ``act()``
    returns.
    """

    update_stages = (UpdateStage("critic"), UpdateStage("policy"), UpdateStage("entropy", only_if="learn_entropy", clip_groups=0))
    checkpointed = ("log_entropy_coefficient", "_entropy_coefficient", "exploration_noise.state")

    def __init__(self, *, exploration_noise: OrnsteinUhlenbeckNoise | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.exploration_noise = exploration_noise
        space = self.action_space
        self._action_low = torch.as_tensor(space.low, dtype=torch.float32, device=self.device)
        self._action_high = torch.as_tensor(space.high, dtype=torch.float32, device=self.device)

    def act(self, observations: torch.Tensor, states: torch.Tensor | None, *, timestep: int, timesteps: int) -> tuple[torch.Tensor, dict[str, Any]]:
        """Upstream's sampled action, plus the exploration noise (clamped into the bounds) when configured."""
        actions, outputs = super().act(observations, states, timestep=timestep, timesteps=timesteps)
        if self.exploration_noise is not None:
            noise = self.exploration_noise.sample(actions.shape)
            actions = torch.clamp(actions + noise, min=self._action_low, max=self._action_high)
        return actions, outputs

    def after_stage(self, stage: str) -> None:
        if stage == "entropy":
            self._entropy_coefficient = torch.exp(self.log_entropy_coefficient.detach())

    def extra_metrics(self) -> dict[str, float]:
        return {"train/alpha": float(self._entropy_coefficient)}


def exploration_noise(build: Build) -> OrnsteinUhlenbeckNoise | None:
    """skrl's OU noise (``state -= theta * state; state += sigma * N(0, 1)`` per env step), or none."""
    s = build.settings
    if s["exploration_noise"] is None:
        return None
    return OrnsteinUhlenbeckNoise(theta=s["ou_theta"], sigma=s["exploration_std"], base_scale=1.0, device=build.device)


def sac_cfg(build: Build) -> SAC_CFG:
    """skrl's ``SAC_CFG`` from the settings; rlplug's trainer owns warm-up and update cadence."""
    s = build.settings
    return SAC_CFG(
        gradient_steps=1,
        batch_size=s["batch_size"],
        discount_factor=s["discount_factor"],
        polyak=s["tau"],
        learning_rate=tuple(s["learning_rate"]),
        grad_norm_clip=s["grad_norm_clip"],
        learn_entropy=s["learn_entropy"],
        initial_entropy_value=s["initial_entropy_value"],
        target_entropy=s["target_entropy"],
        random_timesteps=0,
        learning_starts=0,
        experiment={"write_interval": 0, "checkpoint_interval": 0},
    )


# ---- trainer ------------------------------------------------------------------------------------


class SkrlSACTrainer(SkrlOffPolicyTrainer):
    """rlplug's off-policy loop around ``LossDelegatingSAC``; evaluation acts with the Gaussian mean
    (squashed into the bounds with ``squash_actions``, clipped to them otherwise)."""

    agent_class = LossDelegatingSAC
    agent_config = staticmethod(sac_cfg)

    def agent_kwargs(self, build: Build) -> dict[str, Any]:
        return {"exploration_noise": exploration_noise(build)}


build_trainer = SkrlSACTrainer
