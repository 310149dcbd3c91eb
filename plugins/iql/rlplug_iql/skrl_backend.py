"""IQL on skrl: models, the dataset memory, the staged loss, target updates, the agent, the trainer.

Reads top to bottom like a single-file Implicit Q-Learning (Kostrikov et al. 2021) on skrl 2.1, which
has no IQL and no offline path (reference §11): the agent is written on skrl's ``Agent`` base with
skrl's models, memory and optimiser step, and each gradient step asks the registered loss object
(``build.loss``) for the terms of three stages, one optimiser each:

* ``value``: expectile regression of V(s) towards min over the two *target* Q(s, a) of dataset actions;
* ``critic``: both Q(s, a) towards ``r + gamma * (1 - terminated) * V(s')`` (squared error, summed over
  the two networks, as TorchRL's ``IQLLoss`` with ``loss_function="l2"``);
* ``policy``: advantage-weighted regression, ``-mean(min(exp(beta * (Q_target - V)), 100) * log pi(a|s))``.

That is ``torchrl.objectives.IQLLoss``'s math with the same hyperparameters; the target critics then
move through the updater the target-updater hook built. The policy is the IQL paper's Gaussian: a
tanh-bounded mean and a state-independent log std.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import (
    GaussianPolicy,
    ModuleTargetUpdate,
    SkrlOfflineTrainer,
    StagedLossAgent,
    agent_arguments,
    configure_threads,
    dataset_memory,
    hard_copy,
    module_target_update,
    observation_encoder,
    q_model,
    register_action_bounds,
    seed_skrl,
    skrl_policy_export,
    use_adam_impl,
    value_model,
)
from skrl.agents.torch import Agent, AgentCfg
from skrl.memories.torch import RandomMemory

# ---- models -------------------------------------------------------------------------------------


class BoundedMeanGaussianPolicy(GaussianPolicy):
    """skrl's Gaussian policy with its mean squashed into the action bounds (``center + half_range *
    tanh(net(s))``), the IQL paper's policy: the log-prob of a dataset action stays an ordinary Gaussian
    one even on the bounds, and the deterministic action (the mean) never leaves them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        register_action_bounds(self, self.action_space, self.device)

    def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        mean = self.action_center + self.action_half_range * torch.tanh(self.net(self.encode(inputs["observations"])))
        return mean, {"log_std": self.log_std_parameter}


def build_models(build: Build) -> dict[str, Any]:
    """The policy, V(s), two Q(s, a) critics and their targets (started equal to the critics),
    initialised from ``build.seed``."""
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    encoder = lambda: observation_encoder(build)  # noqa: E731 - each network gets its own copy
    models = {
        "policy": BoundedMeanGaussianPolicy(*args, encoder=encoder()),
        "value": value_model(*args, encoder=encoder()),
        "critic_1": q_model(*args, encoder=encoder()),
        "critic_2": q_model(*args, encoder=encoder()),
        "target_critic_1": q_model(*args, encoder=encoder()),
        "target_critic_2": q_model(*args, encoder=encoder()),
    }
    hard_copy(models["target_critic_1"], models["critic_1"])
    hard_copy(models["target_critic_2"], models["critic_2"])
    return models


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> RandomMemory:
    """The whole dataset in one ``RandomMemory(N, num_envs=1)``, sampled uniformly with replacement."""
    return dataset_memory(build)


# ---- loss ---------------------------------------------------------------------------------------


class IQLLoss:
    """IQL's loss, one stage per optimiser: called as ``loss(agent, batch, stage)``.

    ``value``: ``mean(|expectile - 1(u < 0)| * u^2)`` with ``u = min target Q(s, a) - V(s)`` (stashes the
    target Q in ``batch``); ``critic``: ``mean((Q1 - y)^2 + (Q2 - y)^2)``, ``y = r + gamma * not_terminated
    * V(s')``; ``policy``: ``-mean(min(exp(temperature * (target Q - V(s))), 100) * log pi(a|s))`` with
    the weights out of autograd (reports ``entropy = -mean log pi(a|s)`` of the dataset actions, as
    TorchRL does).
    """

    max_weight = 100.0  # TorchRL's IQLLoss clamps the advantage weights here

    def __call__(self, agent: IQL, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        return getattr(self, stage)(agent, batch)

    def value(self, agent: IQL, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"], "taken_actions": batch["actions"]}
        with torch.no_grad():
            target_q1, _ = agent.target_critic_1.act(inputs, role="target_critic_1")
            target_q2, _ = agent.target_critic_2.act(inputs, role="target_critic_2")
            batch["target_q"] = torch.min(target_q1, target_q2)
        value, _ = agent.value.act({"observations": batch["observations"]}, role="value")
        difference = batch["target_q"] - value
        weight = torch.where(difference > 0, agent.cfg.expectile, 1.0 - agent.cfg.expectile)
        return {"loss_value": (weight * difference.pow(2)).mean()}

    def critic(self, agent: IQL, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        with torch.no_grad():
            next_value, _ = agent.value.act({"observations": batch["next_observations"]}, role="value")
            target = batch["rewards"] + agent.cfg.discount_factor * batch["terminated"].logical_not() * next_value
        inputs = {"observations": batch["observations"], "taken_actions": batch["actions"]}
        q1, _ = agent.critic_1.act(inputs, role="critic_1")
        q2, _ = agent.critic_2.act(inputs, role="critic_2")
        loss = F.mse_loss(q1, target, reduction="none") + F.mse_loss(q2, target, reduction="none")
        return {"loss_critic": loss.mean()}

    def policy(self, agent: IQL, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        with torch.no_grad():
            value, _ = agent.value.act({"observations": batch["observations"]}, role="value")
            weight = torch.exp(agent.cfg.temperature * (batch["target_q"] - value)).clamp_max(self.max_weight)
        _, outputs = agent.policy.act({"observations": batch["observations"], "taken_actions": batch["actions"]}, role="policy")
        log_prob = outputs["log_prob"]
        return {"loss_policy": -(weight * log_prob).mean(), "entropy": -log_prob.detach().mean()}


def make_iql_loss(build: Build) -> IQLLoss:
    """The registered default loss ("iql") for iql/skrl."""
    return IQLLoss()


# ---- target networks ----------------------------------------------------------------------------


def build_target_updater(build: Build) -> ModuleTargetUpdate:
    """Soft (Polyak, ``tau``) or hard (every ``target_update_period`` steps) updates of both target critics."""
    m = build.models
    return module_target_update(build, [(m["target_critic_1"], m["critic_1"]), (m["target_critic_2"], m["critic_2"])])


# ---- agent --------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class IQL_CFG(AgentCfg):
    """Configuration of rlplug's skrl IQL agent (skrl's ``XXX_CFG`` style)."""

    gradient_steps: int = 1
    batch_size: int = 256
    discount_factor: float = 0.99
    expectile: float = 0.7
    temperature: float = 3.0
    learning_rate: tuple[float, float, float] = (3e-4, 3e-4, 3e-4)  # policy, critics, value
    grad_norm_clip: float = 0.0
    mixed_precision: bool = False


class IQL(StagedLossAgent, Agent):
    """Implicit Q-Learning on skrl's ``Agent`` base, its gradient step delegated to a staged loss.

    Roles: ``policy``, ``value``, ``critic_1/2``, ``target_critic_1/2``. Stages "value", "critic" and
    "policy" (``StagedLossAgent.run_stage``), each stepping its own Adam; then the target updater.
    Everything persistent is in ``checkpoint_modules`` (models and optimisers); ``extra_state`` adds
    the updater's step count. ``init`` is skrl's own: the dataset memory already holds its tensors.
    """

    _tensors_names = ["observations", "actions", "rewards", "next_observations", "terminated"]

    def __init__(self, *, cfg: IQL_CFG, **kwargs: Any) -> None:
        super().__init__(cfg=cfg, **kwargs)
        self.policy = self.models["policy"]
        self.value = self.models["value"]
        self.critic_1, self.critic_2 = self.models["critic_1"], self.models["critic_2"]
        self.target_critic_1, self.target_critic_2 = self.models["target_critic_1"], self.models["target_critic_2"]
        for role, model in self.models.items():
            self.checkpoint_modules[role] = model
        for target in (self.target_critic_1, self.target_critic_2):
            target.freeze_parameters(True)

        policy_lr, critic_lr, value_lr = cfg.learning_rate
        self.policy_optimizer = torch.optim.Adam(self.policy.parameters(), lr=policy_lr)
        self.critic_optimizer = torch.optim.Adam(itertools.chain(self.critic_1.parameters(), self.critic_2.parameters()), lr=critic_lr)
        self.value_optimizer = torch.optim.Adam(self.value.parameters(), lr=value_lr)
        self.checkpoint_modules["policy_optimizer"] = self.policy_optimizer
        self.checkpoint_modules["critic_optimizer"] = self.critic_optimizer
        self.checkpoint_modules["value_optimizer"] = self.value_optimizer

        # what skrl's agents set up and skrl's optimiser step (``optimise``) reads
        self._device_type = torch.device(self.device).type
        self.scaler = torch.amp.GradScaler(device=self._device_type, enabled=cfg.mixed_precision)
        self._observation_preprocessor = self._empty_preprocessor

    def act(self, observations: torch.Tensor, states: torch.Tensor | None, *, timestep: int, timesteps: int) -> tuple[torch.Tensor, dict[str, Any]]:
        """The policy's sample (its ``mean_actions`` output is the deterministic action)."""
        return self.policy.act({"observations": self._observation_preprocessor(observations)}, role="policy")

    def pre_interaction(self, *, timestep: int, timesteps: int) -> None:
        pass

    def post_interaction(self, *, timestep: int, timesteps: int) -> None:
        """skrl's manual offline loop (reference §11): one ``update`` per call while training."""
        if self.training:
            self.update(timestep=timestep, timesteps=timesteps)
        super().post_interaction(timestep=timestep, timesteps=timesteps)

    def sample_batch(self) -> dict[str, torch.Tensor]:
        """One uniform dataset batch by name (no preprocessors: IQL trains on raw observations)."""
        sampled = self.memory.sample(names=self._tensors_names, batch_size=self.cfg.batch_size)[0]
        return self.trainer_hooks.process_optim_batch(dict(zip(self._tensors_names, sampled)))

    def gradient_step(self, *, timestep: int = 0, timesteps: int = 0) -> dict[str, torch.Tensor]:
        batch = self.sample_batch()
        clip = self.cfg.grad_norm_clip
        terms = self.run_stage(batch, "value", self.value_optimizer, (self.value,), clip)
        terms.update(self.run_stage(batch, "critic", self.critic_optimizer, (self.critic_1, self.critic_2), clip))
        terms.update(self.run_stage(batch, "policy", self.policy_optimizer, (self.policy,), clip))
        self.scaler.update()  # once, after all optimisers stepped (as skrl's agents)
        self.target_updater.step()
        return {name: terms[name] for name in self.logged_terms if name in terms}


def iql_cfg(build: Build) -> IQL_CFG:
    """``IQL_CFG`` from the settings; TensorBoard and checkpoint writes are rlplug's, so skrl's are off."""
    s = build.settings
    return IQL_CFG(
        batch_size=s["batch_size"],
        discount_factor=s["discount_factor"],
        expectile=s["expectile"],
        temperature=s["temperature"],
        learning_rate=tuple(s["learning_rate"]),
        grad_norm_clip=s["grad_norm_clip"],
        experiment={"write_interval": 0, "checkpoint_interval": 0},
    )


# ---- trainer ------------------------------------------------------------------------------------


class SkrlIQLTrainer(SkrlOfflineTrainer):
    """rlplug's offline loop around the skrl ``IQL`` agent; evaluation acts with the (bounded) policy mean."""

    def make_agent(self, build: Build) -> IQL:
        agent = IQL(**agent_arguments(build), cfg=iql_cfg(build))
        use_adam_impl(agent, build.settings["optimizer_impl"])
        return agent

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            mean, _ = self.agent.policy.compute({"observations": self.observations(observations)}, role="policy")
            return mean.cpu().numpy()

    def export_policy(self) -> torch.nn.Module:
        """The policy's bounded mean (IQL trains on raw observations: no preprocessor)."""
        return skrl_policy_export(self.build, self.agent.policy, then="output")


def build_trainer(build: Build) -> SkrlIQLTrainer:
    return SkrlIQLTrainer(build)
