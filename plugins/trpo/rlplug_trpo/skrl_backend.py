"""TRPO on skrl: models, rollout memory, the TRPO loss, skrl's own ``TRPO`` agent delegating to it, the trainer.

The agent is skrl's ``TRPO`` (its rollout storage, acting, checkpointed modules, value optimiser, the ``backup_policy``
the KL is measured from) with the on-policy family's ``OnPolicyAgent`` mixed in. Its ``update()``: GAE as upstream's,
one trust-region step of the policy on the whole rollout through the registered loss (``trust_region_step``), then
``epochs`` passes of value minibatches stepped with the value optimiser (the family's ``rollout_epochs`` on the loss's
value term). Upstream's update differs in its line search only: each try's target improvement is the product of the
step fractions tried so far rather than the fraction itself (so from the third try on it accepts smaller gains).
With ``normalize_observations`` the running statistics take the rollout twice, in the policy step and in the first
value epoch, as upstream's update does (the TorchRL cell: once, after the update).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import (
    OnPolicyAgent,
    SkrlRolloutTrainer,
    TrustRegion,
    actor_critic_models,
    compute_returns_and_advantages,
    rollout_epochs,
    rollout_learner,
    rollout_memory,
    trust_region_step,
)
from skrl.agents.torch import trpo

build_models = actor_critic_models  # policy (Categorical or Gaussian) and value MLPs
build_memory = rollout_memory  # one rollout


def mean_kl(old: torch.distributions.Distribution, new: torch.distributions.Distribution) -> torch.Tensor:
    """Mean over the batch of KL(old || new); a Gaussian's summed over its action dimensions."""
    kl = torch.distributions.kl_divergence(old, new)
    return (kl.sum(-1) if isinstance(old, torch.distributions.Normal) else kl).mean()


class TRPOLoss:
    """skrl's TRPO terms: ``loss_policy = -mean(A exp(log pi - log pi_old))`` (the surrogate the trust-region step
    raises), ``loss_value = MSE(V, returns)`` and ``kl``, the mean KL from the agent's ``backup_policy`` (the policy
    that collected the rollout), with its gradient: the step's Fisher products and its bound read it."""

    def __call__(self, agent: trpo.TRPO, batch: dict[str, torch.Tensor], epoch: int) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        with torch.no_grad():
            agent.backup_policy.act(inputs, role="policy")
        old = agent.backup_policy.distribution(role="policy")
        _, outputs = agent.policy.act({**inputs, "taken_actions": batch["actions"]}, role="policy")
        ratio = torch.exp(outputs["log_prob"] - batch["log_prob"])
        kl = mean_kl(old, agent.policy.distribution(role="policy"))
        values, _ = agent.value.act(inputs, role="value")
        loss_value = F.mse_loss(batch["returns"], values)
        return {"loss_policy": -(batch["advantages"] * ratio).mean(), "loss_value": loss_value, "kl": kl}


def make_trpo_loss(build: Build) -> TRPOLoss:
    """The registered default loss ("trpo") for trpo/skrl."""
    return TRPOLoss()


class LossDelegatingTRPO(OnPolicyAgent, trpo.TRPO):
    """skrl's TRPO whose ``update()`` asks the registered loss for its terms: the policy's natural-gradient step,
    then the value epochs."""

    normalize_advantage = True
    region = TrustRegion()

    # the family's update and rlplug's checkpoints read the optimiser and scheduler by these names
    optimizer = property(lambda self: self.value_optimizer)
    scheduler = property(lambda self: self.value_scheduler)

    rollout_tensor_names = ["observations", "states", "actions", "log_prob", "values", "returns", "advantages"]

    def update(self, *, timestep: int, timesteps: int) -> None:
        own = rollout_learner(self)
        compute_returns_and_advantages(self, own, *self.rollout_end())
        names = self.rollout_tensor_names
        rollout = dict(zip(names, self.memory.sample_all(names=names)[0]))
        rollout["observations"] = own.observation_preprocessor(rollout["observations"], train=True)
        rollout["states"] = own.state_preprocessor(rollout["states"], train=True)
        self.backup_policy.update_parameters(self.policy)  # the KL's reference: the policy that collected the rollout

        def policy_terms() -> tuple[torch.Tensor, torch.Tensor]:
            terms = self.loss(self, rollout, 0)
            return terms["loss_policy"], terms["kl"]

        step = trust_region_step(self.policy.parameters(), policy_terms, self.region)
        value_means = rollout_epochs(self, own, lambda batch, epoch: self.loss(self, batch, epoch), only_terms=("loss_value",))
        for name, value in {"loss_policy": step.loss, "kl": step.kl, **value_means}.items():
            self.track_data(f"Loss / {name}", value)
        self.track_data("Policy / Step fraction", step.step_fraction)
        self.track_data("Policy / Standard deviation", self.policy.distribution(role="policy").stddev.mean().item())


class SkrlTRPOTrainer(SkrlRolloutTrainer):
    """One ``step()`` = one rollout of ``rollouts`` vector steps + the update; ``TRPO_CFG`` from the settings."""

    agent_class = LossDelegatingTRPO
    config_class = trpo.TRPO_CFG

    def make_agent(self, build: Build) -> Any:
        agent = super().make_agent(build)
        s = build.settings
        agent.normalize_advantage = s["normalize_advantage"]
        agent.region = TrustRegion(s["max_kl_divergence"], s["damping"], s["conjugate_gradient_steps"],
                                   s["max_backtrack_steps"], s["line_search_shrink"], s["accept_ratio"])  # fmt: skip
        return agent

    def logged_metrics(self) -> frozenset[str]:
        gaussian = not hasattr(self.build.action_space, "n")
        return super().logged_metrics() | {"train/step_fraction", *(("train/policy_std",) if gaussian else ())}

    def update_metrics(self, tracked: Any) -> dict[str, float]:
        return {**super().update_metrics(tracked), "train/step_fraction": tracked["Policy / Step fraction"][-1]}


build_trainer = SkrlTRPOTrainer
