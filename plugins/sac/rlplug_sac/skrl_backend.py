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

import functools
import itertools
import operator
from collections.abc import Sequence
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
    collecting,
    configure_threads,
    critic_values,
    module_target_update,
    observation_encoder,
    q_model,
    register_action_bounds,
    replay_memory,
    seed_skrl,
    state_dependent_noise,
    tanh_log_det,
)
from skrl import config
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
        if self.sde is not None and self.sde.active:  # gSDE collecting: the env's exploration matrix, no fresh draw
            mean, u, log_std = self.explore(inputs)
            distribution = Normal(mean, log_std.exp())
        else:
            mean, outputs = self.compute(inputs, role)
            log_std = self.clamp_log_std(outputs["log_std"])
            distribution = Normal(mean, log_std.exp())
            u = distribution.rsample()
        log_det = tanh_log_det(u, self.action_half_range)
        log_prob = (distribution.log_prob(u) - log_det).sum(dim=-1, keepdim=True)
        actions = self.action_center + self.action_half_range * torch.tanh(u)
        return actions, {"log_prob": log_prob, "log_std": log_std, "mean_actions": self.deterministic_actions(mean)}

    def deterministic_actions(self, mean: torch.Tensor) -> torch.Tensor:
        return self.action_center + self.action_half_range * torch.tanh(mean)


SDE_CLIP_MEAN = 2.0
"""SB3's SAC clamps its pre-tanh mean to [-2, 2] under gSDE (``clip_mean``), so a saturated mean stays where noise moves it."""

CRITICS = ("critic_1", "critic_2")
"""The critics' model roles (skrl's twin Q-networks); a derived cell names its own (an ensemble: N of them)."""


def build_models(build: Build, critics: Sequence[str] = CRITICS, critic_outputs: int = 1, targets: bool = True) -> dict[str, Any]:
    """A Gaussian policy (state-independent log std, as skrl's SAC examples, or gSDE's with ``use_sde``; optionally
    tanh-squashed, the mean clamped to [-2, 2] under gSDE as SB3's),
    the Q(s, a) ``critics`` and a target of each (``target_<role>``), initialised from ``build.seed`` in
    that order. The agent hard-copies the targets. ``critic_outputs``: each critic's outputs (a
    distributional critic's quantiles); ``targets = False``: no target critics (CrossQ)."""
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    policy_class = SquashedGaussianPolicy if s["squash_actions"] else GaussianPolicy
    noise = state_dependent_noise(build, s["train_every"])
    clip_mean = SDE_CLIP_MEAN if noise is not None and s["squash_actions"] else 0.0
    return {  # each network reads through its own copy of the cell's encoder
        "policy": policy_class(*args, encoder=observation_encoder(build), state_dependent=noise, clip_mean=clip_mean),
        **{role: q_model(*args, encoder=observation_encoder(build), quantiles=critic_outputs) for role in critics},
        **{f"target_{role}": q_model(*args, encoder=observation_encoder(build), quantiles=critic_outputs) for role in critics if targets},
    }


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> RandomMemory:
    """The replay memory: ``buffer_size`` transitions over the vector env's columns."""
    return replay_memory(build)


# ---- loss ---------------------------------------------------------------------------------------


def critic_roles(agent: SAC) -> Sequence[str]:
    """The agent's critic roles: ``LossDelegatingSAC.critic_roles``, or skrl's twin ones on a plain ``SAC``."""
    return getattr(agent, "critic_roles", CRITICS)


def entropy_coefficient(agent: SAC) -> Any:
    """alpha: ``LossDelegatingSAC.entropy_coefficient``, or the attribute skrl's plain ``SAC`` keeps it in."""
    return agent.entropy_coefficient if hasattr(agent, "entropy_coefficient") else agent._entropy_coefficient


def target_entropy(agent: SAC) -> Any:
    """The entropy target: ``LossDelegatingSAC.target_entropy``, or skrl's plain ``SAC``'s attribute."""
    return agent.target_entropy if hasattr(agent, "target_entropy") else agent._target_entropy


def q_values(agent: SAC, roles: Sequence[str], inputs: dict[str, torch.Tensor], actions: torch.Tensor) -> list[torch.Tensor]:
    """Q(s, a) of each critic in ``roles`` (an agent's roles, ``target_`` ones too), in that order (one batched call
    with ``batched_critics``)."""
    return critic_values(agent, roles, inputs, actions)


class SACLoss:
    """skrl's SAC loss, one stage per optimiser: called as ``loss(agent, batch, stage)``.

    ``critic``: the mean over the agent's ``critic_roles`` of ``critic_distance(Q_i, y)`` (MSE) with
    ``y = critic_target(...) = r + gamma * not_terminated * (target_q(target Q_i(s', a')) - alpha * log
    pi(a'|s'))``, ``target_q`` the minimum; ``policy``: ``mean(alpha * log pi(a|s) - policy_q(Q_i(s, a)))``,
    ``policy_q`` the minimum (stashes ``log_prob`` in ``batch``); ``entropy``: ``-mean(log_alpha *
    (log_prob + target_entropy))``. With the twin critics that is upstream's math, operation for operation;
    the order of policy samples is upstream's, so the same seed draws the same actions.

    A derived loss overrides the piece that differs: ``critic_distance`` (a Huber critic), ``target_critics``
    (an ensemble's random subset), ``target_q``, ``policy_q``, or the whole ``critic_target`` (a distributional target).
    """

    def __call__(self, agent: SAC, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        return getattr(self, stage)(agent, batch)

    def critic_distance(self, q: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """One critic's loss against the target, reduced to a scalar (mean squared error)."""
        return F.mse_loss(q, target)

    def target_q(self, target_qs: list[torch.Tensor]) -> torch.Tensor:
        """The target critics' values at (s', a') combined into one (the minimum)."""
        return functools.reduce(torch.min, target_qs)

    def policy_q(self, qs: list[torch.Tensor]) -> torch.Tensor:
        """The critics' values at (s, pi(s)) combined into the one the policy ascends (the minimum)."""
        return functools.reduce(torch.min, qs)

    def target_critics(self, agent: SAC) -> Sequence[str]:
        """The target critics' roles the Bellman target reads (every ``target_<role>``; an ensemble's subset)."""
        return [f"target_{role}" for role in critic_roles(agent)]

    def critic_target(self, agent: SAC, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """``y``, out of autograd: the soft Bellman target from the next observations."""
        next_inputs = {"observations": batch["next_observations"], "states": batch["next_states"]}
        with torch.no_grad():
            next_actions, outputs = agent.policy.act(next_inputs, role="policy")
            target_qs = q_values(agent, self.target_critics(agent), next_inputs, next_actions)
            target_q = self.target_q(target_qs) - entropy_coefficient(agent) * outputs["log_prob"]
            return batch["rewards"] + agent.cfg.discount_factor * batch["terminated"].logical_not() * target_q

    def critic(self, agent: SAC, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        target = self.critic_target(agent, batch)
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        qs = q_values(agent, critic_roles(agent), inputs, batch["actions"])
        return {"loss_critic": functools.reduce(operator.add, [self.critic_distance(q, target) for q in qs]) / len(qs)}

    def policy(self, agent: SAC, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        actions, outputs = agent.policy.act(inputs, role="policy")
        batch["log_prob"] = outputs["log_prob"]
        qs = q_values(agent, critic_roles(agent), inputs, actions)
        return {"loss_policy": (entropy_coefficient(agent) * outputs["log_prob"] - self.policy_q(qs)).mean()}

    def entropy(self, agent: SAC, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        log_prob = batch["log_prob"].detach()
        return {"loss_entropy": -(agent.log_entropy_coefficient * (log_prob + target_entropy(agent))).mean()}


def make_sac_loss(build: Build) -> SACLoss:
    """The registered default loss ("sac") for sac/skrl."""
    return SACLoss()


# ---- target networks ----------------------------------------------------------------------------


def target_pairs(models: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(target, online) for every ``target_<role>`` model: the target set, whatever the critics' roles."""
    return [(models[name], models[name.removeprefix("target_")]) for name in models if name.startswith("target_")]


def build_target_updater(build: Build) -> ModuleTargetUpdate:
    """Soft (Polyak, ``tau``) or hard (every ``target_update_period`` steps) updates of every target critic."""
    return module_target_update(build, target_pairs(build.models))


# ---- agent --------------------------------------------------------------------------------------


class LossDelegatingSAC(StagedLossAgent, SAC):
    """skrl's ``SAC`` whose gradient step takes its terms from a registered staged loss.

    Stages "critic", "policy" and (with ``learn_entropy``) "entropy", in upstream's order; upstream never
    clips the entropy step. Upstream does not checkpoint ``log_entropy_coefficient`` (reference §14.6):
    it is ``checkpointed`` here. ``exploration_noise`` (optional) is added to the sampled actions ``act()``
    returns.

    Open where a derived algorithm differs: ``critic_roles`` (any number of critics, each with a
    ``target_<role>``; skrl's own ``SAC`` knows two), and ``optimizer_groups()`` (each stage optimiser's
    roles and learning rate), which the constructor builds the policy and critic Adams from.
    ``entropy_coefficient`` (alpha), ``target_entropy`` and skrl's ``log_entropy_coefficient`` /
    ``entropy_optimizer`` are the entropy tuning's public names.
    """

    critic_roles: tuple[str, ...] = CRITICS
    adam_kwargs: dict[str, Any] = {}
    """Keyword arguments of the policy's and the critics' Adams besides the learning rate (CrossQ's ``betas``)."""
    update_stages = (UpdateStage("critic"), UpdateStage("policy"), UpdateStage("entropy", only_if="learn_entropy", clip_groups=0))
    checkpointed = ("log_entropy_coefficient", "entropy_coefficient", "exploration_noise.state")

    def __init__(
        self, *, exploration_noise: OrnsteinUhlenbeckNoise | None = None, critic_roles: Sequence[str] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        if critic_roles is not None:
            self.critic_roles = tuple(critic_roles)
        self.setup_critics()
        self.exploration_noise = exploration_noise
        space = self.action_space
        if hasattr(space, "low"):  # Box actions (the noise's bounds); a Discrete space's SAC has no noise
            self._action_low = torch.as_tensor(space.low, dtype=torch.float32, device=self.device)
            self._action_high = torch.as_tensor(space.high, dtype=torch.float32, device=self.device)

    def act(self, observations: torch.Tensor, states: torch.Tensor | None, *, timestep: int, timesteps: int) -> tuple[torch.Tensor, dict[str, Any]]:
        """Upstream's sampled action (gSDE's, with ``use_sde``), plus the exploration noise (clamped into the bounds)
        when configured."""
        with collecting(self.policy):
            actions, outputs = super().act(observations, states, timestep=timestep, timesteps=timesteps)
        if self.exploration_noise is not None:
            noise = self.exploration_noise.sample(actions.shape)
            actions = torch.clamp(actions + noise, min=self._action_low, max=self._action_high)
        return actions, outputs

    def setup_critics(self) -> None:
        """Every critic role and its target as an attribute and a checkpointed module, targets frozen and
        equal to their critics, and the Adams of ``optimizer_groups()`` in place of skrl's two-critic ones
        (with the twin critics: the same parameters in the same order, so the same optimisers)."""
        for name in [name for name, module in self.checkpoint_modules.items() if module is None]:
            del self.checkpoint_modules[name]  # skrl's twin roles, when the critics are named otherwise
        targets = [f"target_{role}" for role in self.critic_roles if f"target_{role}" in self.models]  # none: CrossQ
        for role in (*self.critic_roles, *targets):
            setattr(self, role, self.models[role])
            self.checkpoint_modules[role] = self.models[role]
        for role in self.critic_roles:
            if config.torch.is_distributed and role not in CRITICS:  # skrl broadcasts its twin critics itself
                getattr(self, role).broadcast_parameters()
            if f"target_{role}" not in targets:
                continue
            target = getattr(self, f"target_{role}")
            target.freeze_parameters(True)
            target.update_parameters(getattr(self, role), polyak=1)
        schedulers = dict(zip(("policy_optimizer", "critic_optimizer"), self.cfg.learning_rate_scheduler))
        scheduler_kwargs = dict(zip(("policy_optimizer", "critic_optimizer"), self.cfg.learning_rate_scheduler_kwargs))
        for name, (roles, lr) in self.optimizer_groups().items():
            optimizer = torch.optim.Adam(itertools.chain(*(getattr(self, role).parameters() for role in roles)), lr=lr, **self.adam_kwargs)
            setattr(self, name, optimizer)
            self.checkpoint_modules[name] = optimizer
            scheduler = schedulers.get(name)
            scheduler_name = name.replace("optimizer", "scheduler")
            setattr(self, scheduler_name, scheduler(optimizer, **scheduler_kwargs[name]) if scheduler is not None else None)

    def optimizer_groups(self) -> dict[str, tuple[Sequence[str], float]]:
        """Each stage optimiser's name (skrl's: ``<stage>_optimizer``), the roles it steps and its learning
        rate (``learning_rate``: policy, critics, entropy); skrl's own ``entropy_optimizer`` is kept."""
        return {
            "policy_optimizer": (("policy",), self.cfg.learning_rate[0]),
            "critic_optimizer": (self.critic_roles, self.cfg.learning_rate[1]),
        }

    @property
    def entropy_coefficient(self) -> Any:
        """alpha: the entropy term's weight (a float until the first entropy step, then a tensor)."""
        return self._entropy_coefficient

    @entropy_coefficient.setter
    def entropy_coefficient(self, value: Any) -> None:
        self._entropy_coefficient = value

    @property
    def target_entropy(self) -> float:
        """The entropy the "entropy" stage tunes alpha towards (skrl's ``target_entropy``, ``-|A|`` by default)."""
        return self._target_entropy

    def after_stage(self, stage: str) -> None:
        if stage == "entropy":
            self.entropy_coefficient = torch.exp(self.log_entropy_coefficient.detach())

    def extra_metrics(self) -> dict[str, float]:
        return {"train/alpha": float(self.entropy_coefficient)}


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
    (squashed into the bounds with ``squash_actions``, clipped to them otherwise). A derived cell with
    other critics names them in ``critics(build)`` (the roles its ``build_models`` made)."""

    agent_class = LossDelegatingSAC
    agent_config = staticmethod(sac_cfg)

    def critics(self, build: Build) -> Sequence[str]:
        """The agent's critic roles for this build (the class's ``critic_roles``: SAC's twin critics)."""
        return self.agent_class.critic_roles

    def agent_kwargs(self, build: Build) -> dict[str, Any]:
        return {"exploration_noise": exploration_noise(build), "critic_roles": self.critics(build)}

    def random_warmup_steps(self, build: Build) -> int:
        """``learning_starts``, or none with ``use_sde_at_warmup`` (the gSDE policy collects from the first step)."""
        s = build.settings
        return 0 if s.get("use_sde") and s.get("use_sde_at_warmup") else super().random_warmup_steps(build)


build_trainer = SkrlSACTrainer
