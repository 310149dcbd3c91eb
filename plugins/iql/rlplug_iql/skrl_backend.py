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
    OfflineLoopAgent,
    SkrlOfflineTrainer,
    StagedLossAgent,
    UpdateStage,
    configure_threads,
    dataset_memory,
    hard_copy,
    module_target_update,
    observation_encoder,
    q_model,
    register_action_bounds,
    seed_skrl,
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


CRITICS = ("critic_1", "critic_2")
"""The critics' model roles (twin Q-networks); a derived cell names its own."""


def build_models(build: Build, critics: Sequence[str] = CRITICS, value: bool = True) -> dict[str, Any]:
    """The policy, V(s) (``value``: a derived algorithm without one says ``False``), the Q(s, a) ``critics``
    and their targets (started equal to the critics), initialised from ``build.seed`` in that order."""
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    encoder = lambda: observation_encoder(build)  # noqa: E731 - each network gets its own copy
    models = {
        "policy": BoundedMeanGaussianPolicy(*args, encoder=encoder()),
        **({"value": value_model(*args, encoder=encoder())} if value else {}),
        **{role: q_model(*args, encoder=encoder()) for role in critics},
        **{f"target_{role}": q_model(*args, encoder=encoder()) for role in critics},
    }
    for role in critics:
        hard_copy(models[f"target_{role}"], models[role])
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
    TorchRL does). The critics are the agent's ``critic_roles``; ``critic_distance`` is one critic's
    per-sample loss against the target (squared error) and ``critic_target`` the target, for a derived
    loss to override.
    """

    max_weight = 100.0  # TorchRL's IQLLoss clamps the advantage weights here

    def __call__(self, agent: IQL, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        return getattr(self, stage)(agent, batch)

    def value(self, agent: IQL, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"], "taken_actions": batch["actions"]}
        with torch.no_grad():
            target_qs = [getattr(agent, f"target_{r}").act(inputs, role=f"target_{r}")[0] for r in agent.critic_roles]
            batch["target_q"] = functools.reduce(torch.min, target_qs)
        value, _ = agent.value.act({"observations": batch["observations"]}, role="value")
        difference = batch["target_q"] - value
        weight = torch.where(difference > 0, agent.cfg.expectile, 1.0 - agent.cfg.expectile)
        return {"loss_value": (weight * difference.pow(2)).mean()}

    def critic_distance(self, q: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """One critic's per-sample loss against the target (squared error; the critics' sum is averaged)."""
        return F.mse_loss(q, target, reduction="none")

    def critic_target(self, agent: IQL, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """``r + gamma * not_terminated * V(s')``, out of autograd."""
        with torch.no_grad():
            next_value, _ = agent.value.act({"observations": batch["next_observations"]}, role="value")
            return batch["rewards"] + agent.cfg.discount_factor * batch["terminated"].logical_not() * next_value

    def critic(self, agent: IQL, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        target = self.critic_target(agent, batch)
        inputs = {"observations": batch["observations"], "taken_actions": batch["actions"]}
        qs = [getattr(agent, role).act(inputs, role=role)[0] for role in agent.critic_roles]
        loss = functools.reduce(operator.add, [self.critic_distance(q, target) for q in qs])
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
    """Soft (Polyak, ``tau``) or hard (every ``target_update_period`` steps) updates of every target critic."""
    m = build.models
    return module_target_update(build, [(m[name], m[name.removeprefix("target_")]) for name in m if name.startswith("target_")])


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


class IQL(OfflineLoopAgent, StagedLossAgent, Agent):
    """Implicit Q-Learning on skrl's ``Agent`` base, its gradient step delegated to a staged loss.

    Roles: ``policy``, ``value``, the ``critic_roles`` (``critic_1/2``) and a ``target_<role>`` of each.
    Stages "value", "critic" and "policy", each stepping its own Adam; then the target updater.
    Everything persistent is in ``checkpoint_modules`` (models and optimisers) and
    ``StagedLossAgent.extra_state``. ``init`` is skrl's own: the dataset memory already holds its tensors.

    Composable: every model is an attribute of its role name and checkpointed, every ``target_`` model is
    frozen, and the Adams are ``optimizer_groups()``'s (name, roles, learning rate), so an algorithm of
    this shape without V (AWAC) subclasses it with its own ``update_stages`` and ``optimizer_groups`` and
    builds its models with ``build_models(build, value=False)``: nothing of the constructor is copied.
    """

    critic_roles: tuple[str, ...] = CRITICS
    update_stages = (UpdateStage("value"), UpdateStage("critic"), UpdateStage("policy"))
    sampled_names = ("observations", "actions", "rewards", "next_observations", "terminated")

    def __init__(self, *, cfg: IQL_CFG, **kwargs: Any) -> None:
        super().__init__(cfg=cfg, **kwargs)
        for role, model in self.models.items():
            setattr(self, role, model)
            self.checkpoint_modules[role] = model
            if role.startswith("target_"):
                model.freeze_parameters(True)
        for name, (roles, lr) in self.optimizer_groups().items():
            optimizer = torch.optim.Adam(itertools.chain(*(getattr(self, role).parameters() for role in roles)), lr=lr)
            setattr(self, name, optimizer)
            self.checkpoint_modules[name] = optimizer

    def optimizer_groups(self) -> dict[str, tuple[Sequence[str], float]]:
        """Each stage's Adam (``<stage>_optimizer``): the roles it steps and its learning rate
        (``learning_rate``: policy, critics, value)."""
        policy_lr, critic_lr, value_lr = self.cfg.learning_rate
        return {
            "policy_optimizer": (("policy",), policy_lr),
            "critic_optimizer": (self.critic_roles, critic_lr),
            "value_optimizer": (("value",), value_lr),
        }

    def act(self, observations: torch.Tensor, states: torch.Tensor | None, *, timestep: int, timesteps: int) -> tuple[torch.Tensor, dict[str, Any]]:
        """The policy's sample (its ``mean_actions`` output is the deterministic action)."""
        return self.policy.act({"observations": self.observation_preprocessor(observations)}, role="policy")

    def sample_batch(self) -> dict[str, torch.Tensor]:
        """One uniform dataset batch by name (no preprocessors: IQL trains on raw observations)."""
        return self.sampled_transitions()


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

    agent_class = IQL
    agent_config = staticmethod(iql_cfg)
    policy_output = "output"


build_trainer = SkrlIQLTrainer
