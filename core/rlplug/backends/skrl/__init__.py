"""The skrl backend API for plugin authors: everything a cell's ``skrl_backend`` module may import.

Names are grouped by concern (env, models, settings, on-policy, off-policy, multi-agent, offline,
shared); docs/plugins.md has one line on each. Imports torch and skrl.
"""

from __future__ import annotations

from ...contract.multiagent_trainer import MultiAgentTrainerBase
from ...contract.trainer import TrainerBase
from ..common.encoders import observation_encoder, standardised_observations
from ..common.nets import BatchRenorm, mlp, with_batch_renorm
from ..common.gsde import StateDependentHead, StateDependentNoise, collecting, state_dependent_noise
from ..common.optim import adam
from ..common.parallel import sync_gradients
from ..common.seeding import configure_threads
from ..common.trust_region import TrustRegion, trust_region_step
from .env import seed_skrl
from .memory import nstep_transitions, replay_memory
from .models import (
    DeterministicModel,
    critic_values,
    DeterministicPolicy,
    EncodedModel,
    GaussianPolicy,
    q_model,
    register_action_bounds,
    stochastic_policy,
    tanh_log_det,
    value_model,
)
from .multiagent import SkrlMultiAgentRolloutTrainer, agent_models
from .team import SkrlTeamOffPolicyTrainer
from ..common.team import team_spaces
from ..common.offline import ObservationStandardizer
from ..common.sequence import (
    ContextActing,
    DecisionTransformer,
    OnlineFineTuning,
    OnlineSegments,
    ReturnConditionedActing,
    SquashedGaussian,
    TrajectorySegments,
    linear_warmup,
    make_decision_transformer,
    online_segments,
    target_return,
    trajectory_segments,
)
from ..common.imitation import (
    AdversarialImitation,
    AdversarialImitationTrainer,
    Discriminator,
    discriminator_terms,
    make_discriminator,
)
from .offline import OfflineLoopAgent, SkrlOfflineTrainer, dataset_memory
from .offpolicy import ModuleTargetUpdate, SkrlOffPolicyTrainer, hard_copy, module_target_update
from .staged import StagedLossAgent
from ..common.stages import UpdateStage
from .onpolicy import SkrlRolloutTrainer, actor_critic_models, rollout_memory
from .ppo_loss import clipped_ppo_terms
from .recurrent import RecurrentSpec, model_inputs
from .recurrent_agent import RecurrentOnPolicyAgent
from .rollout_agent import (
    OnPolicyAgent,
    compute_returns_and_advantages,
    rollout_agent_arguments,
    rollout_config,
    rollout_epochs,
    rollout_learner,
)
from .settings import resolve_class

__all__ = [
    # shared: a name both packages list is the same object in both
    "MultiAgentTrainerBase",
    "TrainerBase",
    "adam",
    "configure_threads",
    "StateDependentHead",
    "StateDependentNoise",
    "collecting",
    "state_dependent_noise",
    "mlp",
    "BatchRenorm",
    "with_batch_renorm",
    "TrustRegion",
    "trust_region_step",
    "UpdateStage",
    "sync_gradients",
    # observation encoders
    "observation_encoder",
    "standardised_observations",
    # env
    "seed_skrl",
    # memory
    "nstep_transitions",
    "replay_memory",
    # models
    "DeterministicPolicy",
    "EncodedModel",
    "DeterministicModel",
    "GaussianPolicy",
    "critic_values",
    "q_model",
    "register_action_bounds",
    "stochastic_policy",
    "tanh_log_det",
    "value_model",
    # settings
    "resolve_class",
    # on-policy
    "OnPolicyAgent",
    "RecurrentOnPolicyAgent",
    "RecurrentSpec",
    "SkrlRolloutTrainer",
    "actor_critic_models",
    "clipped_ppo_terms",
    "compute_returns_and_advantages",
    "model_inputs",
    "rollout_agent_arguments",
    "rollout_config",
    "rollout_epochs",
    "rollout_learner",
    "rollout_memory",
    # imitation (GAIL)
    "AdversarialImitation",
    "AdversarialImitationTrainer",
    "Discriminator",
    "discriminator_terms",
    "make_discriminator",
    # off-policy
    "ModuleTargetUpdate",
    "SkrlOffPolicyTrainer",
    "StagedLossAgent",
    "hard_copy",
    "module_target_update",
    # multi-agent
    "SkrlMultiAgentRolloutTrainer",
    "SkrlTeamOffPolicyTrainer",
    "agent_models",
    "team_spaces",
    # offline
    "ObservationStandardizer",
    "ContextActing",
    "DecisionTransformer",
    "OnlineFineTuning",
    "OnlineSegments",
    "ReturnConditionedActing",
    "SquashedGaussian",
    "TrajectorySegments",
    "linear_warmup",
    "make_decision_transformer",
    "target_return",
    "online_segments",
    "trajectory_segments",
    "OfflineLoopAgent",
    "SkrlOfflineTrainer",
    "dataset_memory",
]
