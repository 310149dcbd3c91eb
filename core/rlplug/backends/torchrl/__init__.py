"""The TorchRL backend API for plugin authors: everything a cell's ``torchrl_backend`` module may import.

Names are grouped by concern (env, modules, buffers, losses, on-policy, off-policy, multi-agent,
offline, shared); docs/plugins.md has one line on each. Imports torch, tensordict and torchrl.
"""

from __future__ import annotations

from . import _pandas  # noqa: F401 - before tensordict writes its first output
from ...multiagent_training import MultiAgentTrainerBase
from ...envstate import deep_restore, deep_snapshot
from ...rng import capture_rng_state, restore_rng_state
from ...trainer import EpisodeTracker, TrainerBase
from ..common.export import ExportedPolicy, policy_signature
from ..common.encoders import (
    ConvEncoder,
    FlatEncoder,
    MultiInputEncoder,
    compact_dtype,
    observation_encoder,
    standardised_observations,
    unflatten_observations,
)
from ..common.nets import ACTIVATIONS, mlp
from ..common.optim import adam
from ..common.parallel import mean_over_ranks, sync_gradients
from ..common.seeding import configure_threads, seed_everything
from ..common.terms import TermMeans
from .acting import egreedy_step
from .buffers import extend_quietly
from .export import torchrl_policy_export
from .env import ClampAction, collector_state, load_collector_state, make_collector, make_env, quiet_torchrl_info
from .lean import LeanLoss, LeanQNetwork, NetworkCall, chosen_q, lean_applies, loss_output, td0_target
from .losses import describe_loss
from .modules import (
    EncodedNet,
    RunningNormalizer,
    categorical_actor,
    deterministic_actions,
    deterministic_actor,
    find_module,
    gaussian_actor,
    observation_batch,
    observation_keys,
    observation_net,
    q_value_actor,
    q_value_operator,
    stochastic_actor,
    tanh_normal_actor,
    value_operator,
)
from .multiagent import (
    AGENT_GROUPS,
    TorchRLMultiAgentRolloutTrainer,
    agent_group,
    done_keys,
    group_observation_batch,
    library_envs,
    make_multiagent_env,
    multiagent_actor,
    multiagent_critic,
)
from ..common.offline import ObservationStandardizer
from ..common.stages import UpdateStage
from .offline import TorchRLOfflineTrainer, dataset_buffer, dataset_tensordict
from .offpolicy import (
    TRANSITION_KEYS,
    LossTargetUpdate,
    OrnsteinUhlenbeckNoise,
    TorchRLOffPolicyTrainer,
    action_bounds_spec,
    loss_target_update,
    ou_noise,
    replay_buffer,
    set_value_estimator,
    transition_keys,
)
from .onpolicy import (
    LR_SCHEDULES,
    LearningRateSchedule,
    TorchRLRolloutTrainer,
    actor_critic_modules,
    rollout_buffer,
)

__all__ = [
    # shared with the skrl package (the same objects)
    "ACTIVATIONS",
    "EpisodeTracker",
    "MultiAgentTrainerBase",
    "TermMeans",
    "TrainerBase",
    "adam",
    "capture_rng_state",
    "configure_threads",
    "deep_restore",
    "deep_snapshot",
    "mean_over_ranks",
    "mlp",
    "restore_rng_state",
    "sync_gradients",
    "UpdateStage",
    # observation encoders (the same objects in both packages)
    "ConvEncoder",
    "FlatEncoder",
    "MultiInputEncoder",
    "compact_dtype",
    "observation_encoder",
    "standardised_observations",
    "unflatten_observations",
    # policy export (ExportedPolicy and policy_signature are the same objects in both packages)
    "ExportedPolicy",
    "policy_signature",
    "torchrl_policy_export",
    # env
    "ClampAction",
    "collector_state",
    "load_collector_state",
    "make_collector",
    "make_env",
    "quiet_torchrl_info",
    "seed_everything",
    # modules
    "EncodedNet",
    "RunningNormalizer",
    "categorical_actor",
    "deterministic_actions",
    "deterministic_actor",
    "find_module",
    "gaussian_actor",
    "observation_batch",
    "observation_keys",
    "observation_net",
    "q_value_actor",
    "q_value_operator",
    "stochastic_actor",
    "tanh_normal_actor",
    "value_operator",
    # buffers and losses
    "extend_quietly",
    "describe_loss",
    "NetworkCall",
    "LeanLoss",
    "LeanQNetwork",
    "chosen_q",
    "lean_applies",
    "loss_output",
    "td0_target",
    # on-policy
    "LR_SCHEDULES",
    "LearningRateSchedule",
    "TorchRLRolloutTrainer",
    "actor_critic_modules",
    "rollout_buffer",
    # off-policy
    "TRANSITION_KEYS",
    "LossTargetUpdate",
    "OrnsteinUhlenbeckNoise",
    "TorchRLOffPolicyTrainer",
    "action_bounds_spec",
    "egreedy_step",
    "loss_target_update",
    "ou_noise",
    "replay_buffer",
    "set_value_estimator",
    "transition_keys",
    # multi-agent
    "AGENT_GROUPS",
    "TorchRLMultiAgentRolloutTrainer",
    "agent_group",
    "done_keys",
    "group_observation_batch",
    "library_envs",
    "make_multiagent_env",
    "multiagent_actor",
    "multiagent_critic",
    # offline
    "ObservationStandardizer",
    "TorchRLOfflineTrainer",
    "dataset_buffer",
    "dataset_tensordict",
]
