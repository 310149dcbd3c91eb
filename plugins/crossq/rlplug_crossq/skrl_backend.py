"""CrossQ on skrl: SAC's cell (``rlplug_sac.skrl_backend``) with batch-renormalised critics, no targets, CrossQ's loss.

Overridden: the models (SAC's policy and ``n_critics`` critics, each MLP with a ``BatchRenorm`` before every linear
layer, and no target critics), the loss (``CrossQLoss``: SAC's critic stage on the joint batch), the update stages
(the policy and alpha every ``policy_delay`` critic steps) and the critics the trainer names. Memory, the
loss-delegating agent, the entropy tuning and the off-policy loop are SAC's; there is no target updater.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch
from rlplug import Build
from rlplug.backends.skrl import UpdateStage, with_batch_renorm
from rlplug_sac import skrl_backend as sac
from rlplug_sac.skrl_backend import build_memory  # noqa: F401 -- SAC's


def critic_roles(build: Build) -> tuple[str, ...]:
    return tuple(f"critic_{i + 1}" for i in range(build.settings["n_critics"]))


def build_models(build: Build) -> dict[str, Any]:
    """SAC's policy and ``n_critics`` Q(s, a) critics with batch renormalisation, without targets."""
    models = sac.build_models(build, critic_roles(build), targets=False)
    for role in critic_roles(build):
        models[role].net = with_batch_renorm(models[role].net, **build.settings["batch_renorm"])
    return models


class CrossQLoss(sac.SACLoss):
    """SAC's staged loss, ``CrossQLoss``'s math: the critics (in training mode, so their normalisation takes the
    joint batch's statistics) compute Q(s, a) and Q(s', a') in one pass; the target ``r + gamma * not_terminated *
    (min_i Q_i(s', a') - alpha * log pi(a'|s'))`` is that pass's second half, detached. The policy stage reads the
    critics in evaluation mode (their running statistics), as do the stages of SAC it keeps."""

    def critic(self, agent: Any, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        next_inputs = {"observations": batch["next_observations"], "states": batch["next_states"]}
        with torch.no_grad():
            next_actions, outputs = agent.policy.act(next_inputs, role="policy")
        joint = {key: None if batch[key] is None else torch.cat([batch[key], batch[f"next_{key}"]]) for key in ("observations", "states")}
        critics = [getattr(agent, role) for role in sac.critic_roles(agent)]
        for critic in critics:
            critic.train()
        qs = sac.q_values(agent, sac.critic_roles(agent), joint, torch.cat([batch["actions"], next_actions]))
        for critic in critics:
            critic.eval()
        size = batch["actions"].shape[0]
        next_q = functools.reduce(torch.min, [q[size:].detach() for q in qs]) - sac.entropy_coefficient(agent) * outputs["log_prob"]
        target = batch["rewards"] + agent.cfg.discount_factor * batch["terminated"].logical_not() * next_q
        return {"loss_critic": sum(self.critic_distance(q[:size], target) for q in qs) / len(qs)}


def make_crossq_loss(build: Build) -> CrossQLoss:
    """The registered default loss ("crossq") for crossq/skrl."""
    return CrossQLoss()


class LossDelegatingCrossQ(sac.LossDelegatingSAC):
    """SAC's agent whose policy and entropy stages come every ``policy_delay`` critic steps, and whose policy and
    critic Adams take ``adam_betas``."""

    update_stages = (
        UpdateStage("critic"),
        UpdateStage("policy", every="policy_delay"),
        UpdateStage("entropy", every="policy_delay", only_if="learn_entropy", clip_groups=0),
    )

    def __init__(self, *, policy_delay: int, adam_betas: Sequence[float], **kwargs: Any) -> None:
        self.policy_delay, self.adam_kwargs = policy_delay, {"betas": tuple(adam_betas)}
        super().__init__(**kwargs)


class SkrlCrossQTrainer(sac.SkrlSACTrainer):
    """SAC's trainer around ``LossDelegatingCrossQ`` over the build's ``n_critics`` critic roles."""

    agent_class = LossDelegatingCrossQ

    def critics(self, build: Build) -> Sequence[str]:
        return critic_roles(build)

    def agent_kwargs(self, build: Build) -> dict[str, Any]:
        s = build.settings
        return {**super().agent_kwargs(build), "policy_delay": s["policy_delay"], "adam_betas": s["adam_betas"]}


build_trainer = SkrlCrossQTrainer
