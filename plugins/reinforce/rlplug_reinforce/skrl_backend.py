"""REINFORCE on skrl: A2C's cell (``rlplug_a2c.skrl_backend``) with lambda = 1, one minibatch and no entropy term.

skrl has no REINFORCE agent; its ``A2C`` agent is the parts: the rollout, ``compute_gae`` (with lambda = 1 the
Monte-Carlo return, bootstrapped from the critic where a rollout cuts an episode), one gradient step on A2C's loss.
Overridden: ``baseline = false`` makes the returns themselves the advantages (``advantage_baseline``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rlplug import Build
from rlplug_a2c import skrl_backend as a2c
from rlplug_a2c.skrl_backend import build_memory, build_models  # noqa: F401 -- A2C's, unchanged
from skrl.agents.torch.a2c import A2C_CFG


@dataclasses.dataclass(kw_only=True)
class REINFORCE_CFG(A2C_CFG):  # noqa: N801 -- skrl's naming
    """skrl's ``A2C_CFG`` under REINFORCE's name: the same fields, ``gae_lambda`` fixed at 1 by the settings."""


def make_reinforce_loss(build: Build) -> a2c.A2CLoss:
    """The registered default loss ("reinforce") for reinforce/skrl: A2C's with no entropy bonus and the value loss unscaled."""
    return a2c.A2CLoss(entropy_loss_scale=0.0, value_loss_scale=1.0)


class SkrlReinforceTrainer(a2c.SkrlA2CTrainer):
    config_class = REINFORCE_CFG

    def make_agent(self, build: Build) -> Any:
        agent = super().make_agent(build)
        agent.advantage_baseline = build.settings["baseline"]
        return agent


build_trainer = SkrlReinforceTrainer
