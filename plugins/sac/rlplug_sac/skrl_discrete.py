"""SAC for Discrete actions on skrl, and the skrl backend module sac's declaration names: a Box build goes to
``skrl_backend`` unchanged, a Discrete one gets the cell below (issue 48).

Discrete SAC (Christodoulou 2019) is TorchRL's ``DiscreteSACLoss`` maths on ``skrl_backend``'s agent (same roles,
stages and optimisers): the policy is categorical and the critics are Q(s, .) networks, so every expectation over
the policy's actions is exact: the target ``r + gamma * not_terminated * sum_a pi(a|s') (min_i Q'_i(s', a) - alpha
log pi(a|s'))``, the policy's ``sum_a pi(a|s) (alpha log pi(a|s) - min_i Q_i(s, a))`` and alpha's entropy
``-sum_a pi log pi``, tuned towards ``0.98 log |A|`` by default (TorchRL's ``target_entropy_weight``). Evaluation
acts with the argmax of the policy's logits.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import configure_threads, observation_encoder, q_model, seed_skrl, stochastic_policy
from skrl.agents.torch.sac import SAC_CFG

from . import skrl_backend as box
from .settings import refuse_discrete_noise

TARGET_ENTROPY_WEIGHT = 0.98
"""``target_entropy = "auto"`` on Discrete actions: this fraction of the uniform policy's entropy ``log |A|``."""


def is_discrete(build: Build) -> bool:
    return isinstance(build.action_space, gym.spaces.Discrete)


def discrete_models(build: Build) -> dict[str, Any]:
    """A categorical policy, the twin Q(s, .) critics and a target of each, from ``build.seed`` in that order."""
    refuse_discrete_noise(build.settings)
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    roles = (*box.CRITICS, *(f"target_{role}" for role in box.CRITICS))
    return {"policy": stochastic_policy(*args, encoder=observation_encoder(build)),
            **{role: q_model(*args, encoder=observation_encoder(build)) for role in roles}}  # fmt: skip


def policy_distribution(agent: Any, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The categorical policy's probabilities and their logarithms at ``observations``, ``[B, |A|]`` each."""
    logits, _ = agent.policy.compute({"observations": observations}, role="policy")
    return F.softmax(logits, -1), F.log_softmax(logits, -1)


def action_values(agent: Any, roles: Any, observations: torch.Tensor) -> list[torch.Tensor]:
    """Q(s, .) of each critic in ``roles``, ``[B, |A|]`` each."""
    return [getattr(agent, role).compute({"observations": observations}, role=role)[0] for role in roles]


class DiscreteSACLoss(box.SACLoss):
    """``box.SACLoss``'s three stages over Discrete actions (``DiscreteSACLoss``'s maths): exact expectations over the
    categorical policy's actions instead of a sampled action, Q values gathered at the taken action."""

    def critic_target(self, agent: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        with torch.no_grad():
            probs, _ = policy_distribution(agent, batch["next_observations"])
            log_probs = torch.log(torch.where(probs == 0, 1e-8, probs))  # TorchRL's: no -inf from a vanished action
            target_q = self.target_q(action_values(agent, self.target_critics(agent), batch["next_observations"]))
            value = (probs * (target_q - box.entropy_coefficient(agent) * log_probs)).sum(-1, keepdim=True)
            return batch["rewards"] + agent.cfg.discount_factor * batch["terminated"].logical_not() * value

    def critic(self, agent: Any, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        target = self.critic_target(agent, batch)
        taken = batch["actions"].long().reshape(-1, 1)
        qs = [q.gather(-1, taken) for q in action_values(agent, box.critic_roles(agent), batch["observations"])]
        return {"loss_critic": sum(self.critic_distance(q, target) for q in qs) / len(qs)}

    def policy(self, agent: Any, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        probs, log_probs = policy_distribution(agent, batch["observations"])
        with torch.no_grad():  # as upstream's detached critic parameters: the policy step moves the policy only
            q = self.policy_q(action_values(agent, box.critic_roles(agent), batch["observations"]))
        batch["log_prob"] = (probs * log_probs).sum(-1, keepdim=True)  # minus the policy's entropy, for alpha
        return {"loss_policy": (probs * (box.entropy_coefficient(agent) * log_probs - q)).sum(-1).mean()}


def make_sac_loss(build: Build) -> box.SACLoss:
    """The registered default loss ("sac") for sac/skrl: Box or Discrete."""
    return DiscreteSACLoss() if is_discrete(build) else box.make_sac_loss(build)


def discrete_sac_cfg(build: Build) -> SAC_CFG:
    """SAC's config with the entropy target of a Discrete space (skrl's own default there is ``-|A|``, a target
    no categorical policy's entropy can fall to)."""
    cfg = box.sac_cfg(build)
    if cfg.target_entropy is None:
        cfg.target_entropy = TARGET_ENTROPY_WEIGHT * math.log(build.action_space.n)
    return cfg


class SkrlDiscreteSACTrainer(box.SkrlSACTrainer):
    """``box.SkrlSACTrainer`` with the Discrete entropy target; evaluation (``policy_output = "mean_or_argmax"``)
    acts with the argmax of the logits."""

    agent_config = staticmethod(discrete_sac_cfg)


# ---- what the plugin dispatches to: Box builds to skrl_backend, Discrete ones to the cell above ----------


def build_models(build: Build) -> dict[str, Any]:
    return discrete_models(build) if is_discrete(build) else box.build_models(build)


build_memory = box.build_memory
build_target_updater = box.build_target_updater  # the same roles: critic_1/2 and their targets


def build_trainer(build: Build) -> box.SkrlSACTrainer:
    return SkrlDiscreteSACTrainer(build) if is_discrete(build) else box.build_trainer(build)


