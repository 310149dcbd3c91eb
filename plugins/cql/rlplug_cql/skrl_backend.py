"""CQL on skrl: models, the dataset memory, the staged CQL loss, target updates, the Box agent, the trainer
(the agents' shared base is ``skrl_base``, the Discrete-action agent ``skrl_discrete``).

skrl has no CQL and no offline path (reference §11), so the agents are written on skrl's ``Agent``
base the way skrl writes SAC and DQN (roles, ``checkpoint_modules``, one Adam per role, skrl's
optimiser step), and take their loss terms from the registered staged loss (``build.loss``),
like rlplug's other skrl cells. The maths is TorchRL's ``CQLLoss`` / ``DiscreteCQLLoss`` with the
same neutral hyperparameters, so both backends train the same algorithm:

* Box actions, SAC + CQL(H). Stage ``critic``: the TD loss of both Q networks against
  ``r + gamma * (1 - terminated) * min target Q(s', a'~pi)`` (no entropy bonus with
  ``deterministic_backup``), plus ``min_q_weight`` times the penalty: the log-sum-exp (temperature
  ``T``) over ``num_random`` actions from each of three proposals (uniform in [-1, 1], the policy
  at s, the policy at s'), importance-weighted by their log-densities, minus ``Q(s, a_data)``.
  As in TorchRL, the log-sum-exp runs over the three proposals' values of each sampled row, the
  policy's proposal at s' is valued at s', and the uniform proposal spans [-1, 1] whatever the
  bounds. Stage ``policy``: ``alpha * log pi(a|s) - min Q(s, a)``; stage ``entropy``: SAC's
  temperature loss. The policy is a squashed Gaussian with a state-dependent scale, TorchRL's
  ``TanhNormal`` actor (``NormalParamExtractor``'s biased softplus).
* Discrete actions, stage ``critic``: ``0.5 * TD loss`` against ``r + gamma * (1 - terminated) *
  max_a target Q(s', a)`` plus ``min_q_weight * (logsumexp_a Q(s, a) - Q(s, a_data))``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import (
    EncodedModel,
    ModuleTargetUpdate,
    SkrlOfflineTrainer,
    UpdateStage,
    configure_threads,
    critic_values,
    dataset_memory,
    hard_copy,
    mlp,
    module_target_update,
    observation_encoder,
    q_model,
    register_action_bounds,
    seed_skrl,
    tanh_log_det,
)
from skrl.agents.torch import Agent
from skrl.memories.torch import RandomMemory
from skrl.models.torch import Model

from .skrl_base import OfflineStagedAgent, cql_cfg
from .skrl_discrete import DiscreteCQL


def is_discrete(build: Build) -> bool:
    return isinstance(build.action_space, gym.spaces.Discrete)


# ---- models -------------------------------------------------------------------------------------

CRITICS, TARGET_CRITICS = ("critic_1", "critic_2"), ("target_critic_1", "target_critic_2")

# TorchRL's NormalParamExtractor: scale = softplus(x + bias) + 0.01 with softplus(bias) = 0.99, at least 1e-4
SCALE_MIN = 0.01
SCALE_BIAS = math.log(math.expm1(1.0 - SCALE_MIN))
SCALE_FLOOR = 1e-4
TANH_LIMIT = 1.0 - torch.finfo(torch.float32).resolution  # TorchRL's SafeTanh keeps samples off +-1


class TanhGaussianPolicy(EncodedModel):
    """A squashed Gaussian over Box actions, TorchRL's ``tanh_normal_actor`` on skrl: the MLP outputs
    a mean ``m`` and a raw scale per action dimension; ``u ~ N(m, s)``, the action is
    ``center + half_range * tanh(u)`` and its log-probability carries the change of variables.
    ``act`` returns ``(actions, {"log_prob", "mean_actions"})``; the deterministic action is the
    squashed mean."""

    def __init__(
        self, observation_space: gym.Space, action_space: gym.spaces.Box, device: str, hidden_sizes: list[int], activation: str,
        encoder: torch.nn.Module | None = None,
    ) -> None:
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        self.net = mlp(self.attach_encoder(encoder, observation_space), hidden_sizes, 2 * self.num_actions, activation)
        register_action_bounds(self, action_space)
        self.to(self.device)

    def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        mean, raw_scale = self.net(self.encode(inputs["observations"])).chunk(2, dim=-1)
        scale = (F.softplus(raw_scale + SCALE_BIAS) + SCALE_MIN).clamp_min(SCALE_FLOOR)
        return mean, {"scale": scale}

    def act(self, inputs: dict[str, Any], *, role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        mean, outputs = self.compute(inputs, role)
        scale = outputs["scale"]
        u = mean + scale * torch.randn_like(mean)
        normal_log_prob = -((u - mean) ** 2) / (2 * scale**2) - scale.log() - 0.5 * math.log(2 * math.pi)
        log_det = tanh_log_det(u, self.action_half_range)  # log |d action / du|
        log_prob = (normal_log_prob - log_det).sum(dim=-1, keepdim=True)
        actions = self.squash(u)
        return actions, {"log_prob": log_prob, "mean_actions": self.squash(mean)}

    def squash(self, u: torch.Tensor) -> torch.Tensor:
        return self.action_center + self.action_half_range * torch.tanh(u).clamp(-TANH_LIMIT, TANH_LIMIT)


def build_models(build: Build) -> dict[str, Any]:
    """Box: the squashed Gaussian policy and two Q(s, a) critics with their targets. Discrete: a
    Q(s, .) network and its target. Initialised from ``build.seed``; the agents hard-copy targets."""
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    encoder = lambda: observation_encoder(build)  # noqa: E731 - each network gets its own copy
    if is_discrete(build):
        return {"q_network": q_model(*args, encoder=encoder()), "target_q_network": q_model(*args, encoder=encoder())}
    return {
        "policy": TanhGaussianPolicy(*args, encoder=encoder()),
        "critic_1": q_model(*args, encoder=encoder()),
        "critic_2": q_model(*args, encoder=encoder()),
        "target_critic_1": q_model(*args, encoder=encoder()),
        "target_critic_2": q_model(*args, encoder=encoder()),
    }


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> RandomMemory:
    """The whole dataset in a full ``RandomMemory`` sampled with replacement (``dataset_memory``)."""
    return dataset_memory(build)


# ---- loss ---------------------------------------------------------------------------------------


class CQLLoss:
    """TorchRL's CQL maths as skrl stages: called as ``loss(agent, batch, stage)``.

    Box: ``critic`` -> ``loss_critic`` (TD, summed over both Q networks) and ``loss_cql`` (the
    weighted penalty, summed over both), ``policy`` -> ``loss_policy`` (stashes ``log_prob``),
    ``entropy`` -> ``loss_entropy``. Discrete: ``critic`` (``q``) -> ``loss_critic`` and ``loss_cql``. Reported:
    ``q_data`` (mean Q(s, a_data)), ``alpha`` and ``entropy`` (Box).
    """

    def __init__(
        self,
        discount_factor: float,
        min_q_weight: float = 1.0,
        num_random: int = 10,
        temperature: float = 1.0,
        deterministic_backup: bool = True,
        td_loss: str = "mse",
    ) -> None:
        if td_loss not in ("mse", "huber"):
            raise ValueError(f"td_loss must be 'mse' or 'huber', got '{td_loss}'")
        self.discount_factor = discount_factor
        self.min_q_weight = min_q_weight
        self.num_random = num_random
        self.temperature = temperature
        self.deterministic_backup = deterministic_backup
        self.td_loss = F.mse_loss if td_loss == "mse" else F.smooth_l1_loss

    def __call__(self, agent: Agent, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        if stage == "critic" and isinstance(agent, DiscreteCQL):
            return self.q(agent, batch)
        return getattr(self, stage)(agent, batch)

    # -- Box actions ------------------------------------------------------------------------------

    def critic(self, agent: CQL, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        observations, actions = batch["observations"], batch["actions"]
        next_observations = batch["next_observations"]
        n = self.num_random
        with torch.no_grad():
            next_actions, next_outputs = agent.policy.act({"observations": next_observations}, role="policy")
            target_q = torch.min(*critic_values(agent, TARGET_CRITICS, {"observations": next_observations}, next_actions))
            if not self.deterministic_backup:
                target_q = target_q - agent.entropy_coefficient * next_outputs["log_prob"]
            target = batch["rewards"] + self.discount_factor * batch["terminated"].logical_not() * target_q
            # the penalty's proposals: n rows per state, as TorchRL draws them (uniform, then pi(s), then pi(s'))
            repeated = observations.repeat_interleave(n, dim=0)
            next_repeated = next_observations.repeat_interleave(n, dim=0)
            random_actions = torch.empty(len(repeated), actions.shape[-1], device=actions.device).uniform_(-1, 1)
            current_actions, current = agent.policy.act({"observations": repeated}, role="policy")
            new_actions, new = agent.policy.act({"observations": next_repeated}, role="policy")
        random_log_density = actions.shape[-1] * math.log(0.5)
        # Q(s, a_data) and the three proposals through each critic in one call
        inputs = {"observations": torch.cat([observations, repeated, repeated, next_repeated])}
        proposed = torch.cat([actions, random_actions, current_actions, new_actions])
        td_loss, penalty, q_data = 0.0, 0.0, None
        for q in critic_values(agent, CRITICS, inputs, proposed):
            q_taken, q_random, q_current, q_new = q.split([len(observations), len(repeated), len(repeated), len(repeated)])
            proposals = torch.cat(
                [q_random - random_log_density, q_new - new["log_prob"], q_current - current["log_prob"]], dim=-1
            )
            logsumexp = torch.logsumexp(proposals / self.temperature, dim=-1) * self.temperature
            td_loss = td_loss + self.td_loss(q_taken, target)
            penalty = penalty + self.min_q_weight * (logsumexp.mean() - q_taken.mean())
            q_data = q_taken if q_data is None else q_data
        return {"loss_critic": td_loss, "loss_cql": penalty, "q_data": q_data.detach().mean()}

    def policy(self, agent: CQL, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"]}
        actions, outputs = agent.policy.act(inputs, role="policy")
        batch["log_prob"] = outputs["log_prob"]
        q1, q2 = critic_values(agent, CRITICS, inputs, actions)
        loss = (agent.entropy_coefficient * outputs["log_prob"] - torch.min(q1, q2)).mean()
        return {"loss_policy": loss, "entropy": -outputs["log_prob"].detach().mean(), "alpha": agent.entropy_coefficient.detach().clone()}

    def entropy(self, agent: CQL, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        log_prob = batch["log_prob"].detach()
        return {"loss_entropy": -(agent.log_entropy_coefficient * (log_prob + agent.target_entropy)).mean()}

    # -- Discrete actions -------------------------------------------------------------------------

    def q(self, agent: DiscreteCQL, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        with torch.no_grad():
            next_q = agent.target_q_network.act({"observations": batch["next_observations"]}, role="target_q_network")[0]
            target = batch["rewards"] + self.discount_factor * batch["terminated"].logical_not() * next_q.max(dim=-1, keepdim=True)[0]
        q_values = agent.q_network.act({"observations": batch["observations"]}, role="q_network")[0]
        q_taken = torch.gather(q_values, dim=1, index=batch["actions"].long())
        penalty = (torch.logsumexp(q_values, dim=-1, keepdim=True) - q_taken).mean()
        return {
            "loss_critic": 0.5 * self.td_loss(q_taken, target),
            "loss_cql": self.min_q_weight * penalty,
            "q_data": q_taken.detach().mean(),
        }


def make_cql_loss(build: Build) -> CQLLoss:
    """The registered default loss ("cql") for cql/skrl."""
    s = build.settings
    return CQLLoss(s["discount_factor"], s["min_q_weight"], s["num_random"], s["temperature"], s["deterministic_backup"], s["td_loss"])


# ---- target networks ----------------------------------------------------------------------------


def build_target_updater(build: Build) -> ModuleTargetUpdate:
    """Soft (Polyak, ``tau``) or hard (every ``target_update_period`` steps) updates of the target Q networks."""
    m = build.models
    if is_discrete(build):
        return module_target_update(build, [(m["target_q_network"], m["q_network"])])
    return module_target_update(build, [(m["target_critic_1"], m["critic_1"]), (m["target_critic_2"], m["critic_2"])])


# ---- agents (shared base: skrl_base; Discrete actions: skrl_discrete) ------------------------------


class CQL(OfflineStagedAgent):
    """SAC + CQL(H) on skrl's ``Agent`` base (SAC's roles, optimisers and entropy coefficient).

    Stages "critic", "policy" and (with ``learn_entropy``) "entropy", in SAC's order; the entropy step is
    never clipped. ``log_entropy_coefficient`` is a bare tensor, which skrl's ``checkpoint_modules``
    cannot hold: it is ``checkpointed``.
    """

    update_stages = (UpdateStage("critic"), UpdateStage("policy"), UpdateStage("entropy", only_if="learn_entropy", clip_groups=0))
    checkpointed = ("log_entropy_coefficient", "entropy_coefficient")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.policy = self.models["policy"]
        self.critic_1, self.critic_2 = self.models["critic_1"], self.models["critic_2"]
        self.target_critic_1, self.target_critic_2 = self.models["target_critic_1"], self.models["target_critic_2"]
        hard_copy(self.target_critic_1, self.critic_1)
        hard_copy(self.target_critic_2, self.critic_2)
        cfg = self.cfg
        target_entropy = cfg.target_entropy
        self.target_entropy = -float(np.prod(self.action_space.shape)) if target_entropy is None else float(target_entropy)
        self.log_entropy_coefficient = torch.log(torch.full((1,), float(cfg.initial_entropy_value), device=self.device))
        self.log_entropy_coefficient.requires_grad_(cfg.learn_entropy)
        self.entropy_coefficient = self.log_entropy_coefficient.detach().exp()
        self.policy_optimizer = torch.optim.Adam(self.policy.parameters(), lr=cfg.learning_rate[0])
        self.critic_optimizer = torch.optim.Adam(
            itertools.chain(self.critic_1.parameters(), self.critic_2.parameters()), lr=cfg.learning_rate[1]
        )
        self.entropy_optimizer = torch.optim.Adam([self.log_entropy_coefficient], lr=cfg.learning_rate[2])
        for name in ("policy", "critic_1", "critic_2", "target_critic_1", "target_critic_2"):
            self.checkpoint_modules[name] = self.models[name]
        self.checkpoint_modules["policy_optimizer"] = self.policy_optimizer
        self.checkpoint_modules["critic_optimizer"] = self.critic_optimizer
        self.checkpoint_modules["entropy_optimizer"] = self.entropy_optimizer

    def act(self, observations: torch.Tensor, states: torch.Tensor | None, *, timestep: int, timesteps: int) -> tuple[torch.Tensor, dict[str, Any]]:
        """The squashed mean (what ``trainer.eval()`` would step the env with); no sampling."""
        mean, _ = self.policy.compute({"observations": observations}, role="policy")
        return self.policy.squash(mean), {}

    def after_stage(self, stage: str) -> None:
        if stage == "entropy":
            self.entropy_coefficient = self.log_entropy_coefficient.detach().exp()

    def load_extra_state(self, state: dict[str, Any]) -> None:
        attributes = state["attributes"]
        if "_entropy_coefficient" in attributes:  # a checkpoint written before alpha had its public name
            attributes["entropy_coefficient"] = attributes.pop("_entropy_coefficient")
        super().load_extra_state(state)


# ---- trainer ------------------------------------------------------------------------------------


class SkrlCQLTrainer(SkrlOfflineTrainer):
    """rlplug's offline loop around ``CQL`` / ``DiscreteCQL``; evaluation acts with the squashed
    Gaussian mean or the argmax of Q."""

    agent_config = staticmethod(cql_cfg)

    @property
    def agent_class(self) -> type[OfflineStagedAgent]:
        return DiscreteCQL if is_discrete(self.build) else CQL

    @property
    def policy_role(self) -> str:
        return "q_network" if is_discrete(self.build) else "policy"

    @property
    def policy_output(self) -> str:
        return "argmax" if is_discrete(self.build) else "squash"


build_trainer = SkrlCQLTrainer
