"""The skrl backend API for plugin authors: everything a cell's ``skrl_backend`` module may import.

Names are grouped by concern (env, models, settings, on-policy, off-policy, multi-agent, offline,
shared); docs/plugins.md has one line on each. Imports torch and skrl.
"""

from __future__ import annotations

from ...contract.multiagent_trainer import MultiAgentTrainerBase
from ...envs.state import deep_restore, deep_snapshot
from ...util.rng import capture_rng_state, restore_rng_state
from ...contract.trainer import EpisodeTracker, TrainerBase
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
from ..common.optim import adam, use_adam_impl
from ..common.parallel import mean_over_ranks, sync_gradients
from ..common.seeding import configure_threads
from ..common.terms import TermMeans
from .export import skrl_joint_policy_export, skrl_policy_export
from .env import env_state, load_env_state, make_vector_env, seed_skrl, true_next_observations
from .memory import SKRL_NAMES, CompactMemory, load_memory_state, memory_state, observation_memory, replay_memory
from .models import (
    CategoricalPolicy,
    DeterministicModel,
    DeterministicPolicy,
    EncodedModel,
    GaussianPolicy,
    flat_observations,
    policy_mean_or_argmax,
    q_model,
    register_action_bounds,
    stochastic_policy,
    tanh_log_det,
    value_model,
)
from .multiagent import (
    AgentValue,
    SkrlMultiAgentRolloutTrainer,
    agent_models,
    joint_deterministic_actions,
    make_multiagent_vector_env,
)
from ..common.offline import ObservationStandardizer
from .offline import SkrlOfflineTrainer, dataset_memory
from .offpolicy import ModuleTargetUpdate, SkrlOffPolicyTrainer, hard_copy, module_target_update
from .staged import StagedLossAgent, agent_arguments, optimise
from ..common.stages import UpdateStage
from .onpolicy import SkrlRolloutTrainer, actor_critic_models, rollout_memory
from .ppo_loss import clipped_ppo_terms
from .rollout_agent import (
    OnPolicyAgent,
    RolloutLearner,
    compute_returns_and_advantages,
    rollout_agent_arguments,
    rollout_config,
    rollout_epochs,
    rollout_learner,
)
from .settings import PooledRunningStandardScaler, preprocessor, resolve_class

__all__ = [
    # shared with the TorchRL package (the same objects)
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
    "skrl_policy_export",
    "skrl_joint_policy_export",
    # env
    "env_state",
    "load_env_state",
    "make_vector_env",
    "seed_skrl",
    "true_next_observations",
    # memory
    "SKRL_NAMES",
    "CompactMemory",
    "load_memory_state",
    "memory_state",
    "observation_memory",
    "replay_memory",
    # models
    "CategoricalPolicy",
    "DeterministicModel",
    "DeterministicPolicy",
    "EncodedModel",
    "GaussianPolicy",
    "flat_observations",
    "policy_mean_or_argmax",
    "q_model",
    "register_action_bounds",
    "stochastic_policy",
    "tanh_log_det",
    "value_model",
    # settings
    "PooledRunningStandardScaler",
    "preprocessor",
    "resolve_class",
    # on-policy
    "OnPolicyAgent",
    "RolloutLearner",
    "SkrlRolloutTrainer",
    "actor_critic_models",
    "clipped_ppo_terms",
    "compute_returns_and_advantages",
    "rollout_agent_arguments",
    "rollout_config",
    "rollout_epochs",
    "rollout_learner",
    "rollout_memory",
    # off-policy
    "ModuleTargetUpdate",
    "SkrlOffPolicyTrainer",
    "StagedLossAgent",
    "agent_arguments",
    "hard_copy",
    "module_target_update",
    "optimise",
    "use_adam_impl",
    # multi-agent
    "AgentValue",
    "SkrlMultiAgentRolloutTrainer",
    "agent_models",
    "joint_deterministic_actions",
    "make_multiagent_vector_env",
    # offline
    "ObservationStandardizer",
    "SkrlOfflineTrainer",
    "dataset_memory",
]
