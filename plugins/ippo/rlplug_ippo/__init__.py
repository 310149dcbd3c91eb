"""rlplug-ippo: Independent PPO (IPPO) on skrl and TorchRL, derived from rlplug-mappo.

IPPO (de Witt et al., 2020) is MAPPO without the centralised critic: every agent's critic reads only that
agent's own observation, so no global state is needed. The declaration is MAPPO's less
``centralised_critic``; the backends reuse MAPPO's cells on each library's own IPPO (skrl's ``IPPO``
agent, TorchRL's ``IPPOLoss``). Environments are MAPPO's multi-agent ids. Cheap: no torch.
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin
from rlplug.families import clipped_family
from rlplug_mappo import MAPPO
from rlplug_mappo import PARAMS as MAPPO_PARAMS

from .settings import skrl_settings, torchrl_settings

PARAMS = tuple(p for p in MAPPO_PARAMS if p.name != "centralised_critic")

SKRL_DOC = "per-agent clipped surrogate + (clipped) MSE value loss + entropy bonus on local critics; skrl's own IPPO math"
TORCHRL_DOC = "torchrl.objectives.multiagent.IPPOLoss with the multi-agent keys set and a MAGAE estimator"

IPPO = replace(
    MAPPO,
    name="ippo",
    summary="Independent PPO: decentralised actors and per-agent critics on local observations (no global state)",
    params=PARAMS,
    # both backends (discrete and continuous actions, data-parallel), the rollout rules, the "ippo" loss
    **clipped_family("rlplug_ippo", skrl_settings, torchrl_settings, loss="ippo", skrl_doc=SKRL_DOC, torchrl_doc=TORCHRL_DOC,
                     action_masks=True),
)

plugin = AlgorithmPlugin(IPPO, source="rlplug-ippo")
