"""IPPO on skrl: MAPPO's cell (``rlplug_mappo.skrl_backend``) on skrl's own ``IPPO`` agent.

Overridden: the agent (skrl's ``IPPO`` with MAPPO's per-agent loss delegation and shared-model update) and
its config class ``IPPO_CFG``. The models are MAPPO's with ``centralised_critic = false`` (settings), so each
critic reads only its agent's observation; memories and the clipped loss are MAPPO's.
"""

from __future__ import annotations

from rlplug import Build
from rlplug_mappo import skrl_backend as mappo
from rlplug_mappo.skrl_backend import build_memory, build_models  # noqa: F401 -- MAPPO's, local critics by settings
from skrl.multi_agents.torch.ippo import IPPO, IPPO_CFG


def make_ippo_loss(build: Build) -> mappo.MAPPOClipLoss:
    """The registered default loss ("ippo") for ippo/skrl: MAPPO's clipped loss, which on local critics is
    skrl's IPPO math."""
    return mappo.make_mappo_loss(build)


class LossDelegatingIPPO(mappo.PerAgentLossDelegation, IPPO):
    """skrl's IPPO with rlplug's per-agent loss delegation (MAPPO's ``PerAgentLossDelegation``)."""


class SkrlIPPOTrainer(mappo.SkrlMAPPOTrainer):
    """One ``step()`` = one rollout of ``rollouts`` vector steps + every agent's update, on an MPE / VMAS env."""

    agent_class = LossDelegatingIPPO
    config_class = IPPO_CFG


build_trainer = SkrlIPPOTrainer
