"""Neutral hyperparameter families: what a family of algorithms shares before torch is imported.

Torch-free by design (a test imports it and checks ``sys.modules``): ``rlplug show`` and plugin
declarations read these without a backend. Each family declares its ``Param`` tuples once and the
translation of their values into the settings both backends read, with each value's domain and the
rules between values (``*_RULES``, for ``AlgorithmSpec(rules=...)``).
"""

from __future__ import annotations

from .exploration import SDE_PARAMS, SDE_WARMUP_PARAMS, sde_settings
from .offline import OFFLINE_PARAMS, offline_settings
from .offpolicy import (
    CRITIC_PARAMS,
    critic_settings,
    ESTIMATOR_PARAMS,
    ESTIMATOR_RULES,
    REPLAY_PARAMS,
    REPLAY_RULES,
    TARGET_PARAMS,
    LinearSchedule,
    replay_settings,
    skrl_estimator_check,
    target_settings,
    torchrl_estimator_settings,
)
from .onpolicy import (
    CLIP_PARAMS,
    GYMNASIUM_PARAMS,
    NETWORK_PARAMS,
    ONPOLICY_PARAMS,
    OPTIMIZER_CHOICE_PARAMS,
    RECURRENT_PARAMS,
    RECURRENT_RULES,
    ROLLOUT_RULES,
    SCHEDULE_PARAMS,
    SDE_RULES,
    ClipSchedule,
    adjusted,
    clipped_family,
    skrl_onpolicy_settings,
    torchrl_onpolicy_settings,
)
from .optim import OPTIMIZER_PARAMS, optimizer_settings

__all__ = [
    # on-policy
    "CLIP_PARAMS",
    "ClipSchedule",
    "GYMNASIUM_PARAMS",
    "NETWORK_PARAMS",
    "ONPOLICY_PARAMS",
    "OPTIMIZER_CHOICE_PARAMS",
    "RECURRENT_PARAMS",
    "RECURRENT_RULES",
    "ROLLOUT_RULES",
    "SCHEDULE_PARAMS",
    "adjusted",
    "clipped_family",
    "skrl_onpolicy_settings",
    "torchrl_onpolicy_settings",
    # off-policy, offline, optimiser
    "ESTIMATOR_PARAMS",
    "ESTIMATOR_RULES",
    "OFFLINE_PARAMS",
    "OPTIMIZER_PARAMS",
    "REPLAY_PARAMS",
    "REPLAY_RULES",
    "TARGET_PARAMS",
    "target_settings",
    "LinearSchedule",
    "offline_settings",
    "optimizer_settings",
    "replay_settings",
    "skrl_estimator_check",
    "torchrl_estimator_settings",
    "CRITIC_PARAMS",
    "critic_settings",
    # exploration (gSDE)
    "SDE_PARAMS",
    "SDE_WARMUP_PARAMS",
    "SDE_RULES",
    "sde_settings",
]
