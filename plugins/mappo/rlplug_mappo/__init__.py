"""rlplug-mappo: Multi-Agent PPO (and IPPO) on skrl and TorchRL.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
The backends live in ``skrl_backend`` and ``torchrl_backend`` and are imported only when built.
Environments are multi-agent ids, ``mpe:NAME`` (PettingZoo MPE from ``mpe2``), ``vmas:NAME`` or a user's
PettingZoo ``ParallelEnv`` ``pz:MODULE:FACTORY``, whose per-agent action masks the policy honours.
"""

from __future__ import annotations

from rlplug import AlgorithmPlugin, AlgorithmSpec, Param
from rlplug.families import CLIP_PARAMS, NETWORK_PARAMS, ONPOLICY_PARAMS, adjusted, clipped_family

from .settings import skrl_settings, torchrl_settings

PARAMS = (
    *adjusted(ONPOLICY_PARAMS, entropy_coef=0.01, normalize_values=True),
    *CLIP_PARAMS,
    Param("centralised_critic", True, "critic reads the global state (every agent's observation): MAPPO; false: each agent's own observation, IPPO"),
    Param("share_parameters", True, "one policy and one critic network shared by all agents (false: one per agent)"),
    *NETWORK_PARAMS,
)

SKRL_DOC = "per-agent clipped surrogate + (clipped) MSE value loss + entropy bonus; skrl's own MAPPO math"
TORCHRL_DOC = "torchrl.objectives.multiagent.MAPPOLoss with the multi-agent keys set and a MAGAE estimator"

MAPPO = AlgorithmSpec(
    name="mappo",
    summary="Multi-Agent PPO with a centralised critic (IPPO with centralised_critic = false)",
    kind="multi-agent",
    params=PARAMS,
    api_version=1,
    # both backends (discrete and continuous actions, data-parallel), the rollout rules, the "mappo" loss
    **clipped_family("rlplug_mappo", skrl_settings, torchrl_settings, loss="mappo", skrl_doc=SKRL_DOC, torchrl_doc=TORCHRL_DOC,
                     action_masks=True),
)

plugin = AlgorithmPlugin(MAPPO, source="rlplug-mappo")
