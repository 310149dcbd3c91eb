"""The TorchRL backend API for plugin authors: everything a cell's ``torchrl_backend`` module may import.

Names are grouped by concern (env, modules, buffers, losses, on-policy, off-policy, multi-agent,
offline, shared); docs/plugins.md has one line on each. Imports torch, tensordict and torchrl.
"""

from __future__ import annotations

from . import _pandas  # noqa: F401 - before tensordict writes its first output
from ...contract.multiagent_trainer import MultiAgentTrainerBase
from ...contract.trainer import TrainerBase
from ..common.encoders import standardised_observations
from ..common.nets import BatchRenorm, with_batch_renorm
from ..common.gsde import StateDependentHead, StateDependentNoise, collecting, state_dependent_noise
from ..common.optim import adam
from ..common.parallel import sync_gradients
from ..common.seeding import configure_threads, seed_everything
from ..common.trust_region import TrustRegion, trust_region_step
from .acting import egreedy_step
from .buffers import STEPS_TO_NEXT_OBS, nstep_batch
from .lean import (
    LeanActorCritic,
    LeanLoss,
    LeanQNetwork,
    NetworkCall,
    actor_distribution,
    chosen_q,
    lean_applies,
    loss_output,
    rsample_log_prob,
    stacked_q,
    td0_target,
)
from .lean_ppo import LeanClipPPOLoss, lean_ppo_obstacle
from .losses import describe_loss
from .modules import (
    categorical_actor,
    action_mask_key,
    deterministic_actor,
    observation_keys,
    observation_net,
    q_value_actor,
    q_value_operator,
    state_dependent_exploration,
    state_dependent_head,
    tanh_normal_actor,
    value_operator,
)
from .multiagent import (
    TorchRLMultiAgentRolloutTrainer,
    agent_group,
    agent_mlp,
    done_keys,
    group_observation_key,
    multiagent_actor,
    multiagent_critic,
)
from .team import TorchRLTeamOffPolicyTrainer, team_mask_key
from ..common.team import team_spaces
from ..common.offline import ObservationStandardizer
from ..common.sequence import (
    ContextActing,
    DecisionTransformer,
    OnlineFineTuning,
    OnlineSegments,
    ReturnConditionedActing,
    SquashedGaussian,
    SEGMENT_KEYS,
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
    make_discriminator,
)
from .imitation import GAILLossTerms, gail_loss_terms
from ..common.stages import UpdateStage
from .offline import TorchRLOfflineTrainer, dataset_buffer
from .offpolicy import (
    LossTargetUpdate,
    TorchRLOffPolicyTrainer,
    action_bounds_spec,
    loss_target_update,
    ou_noise,
    replay_buffer,
    set_value_estimator,
)
from .onpolicy import TorchRLRolloutTrainer, actor_critic_modules, rollout_buffer

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
    "UpdateStage",
    "sync_gradients",
    "BatchRenorm",
    "with_batch_renorm",
    "TrustRegion",
    "trust_region_step",
    # observation encoders
    "standardised_observations",
    # env
    "seed_everything",
    # modules
    "action_mask_key",
    "categorical_actor",
    "deterministic_actor",
    "observation_keys",
    "observation_net",
    "q_value_actor",
    "q_value_operator",
    "tanh_normal_actor",
    "state_dependent_exploration",
    "state_dependent_head",
    "value_operator",
    # buffers and losses
    "describe_loss",
    "NetworkCall",
    "LeanLoss",
    "LeanQNetwork",
    "LeanActorCritic",
    "actor_distribution",
    "rsample_log_prob",
    "chosen_q",
    "lean_applies",
    "loss_output",
    "td0_target",
    "stacked_q",
    "LeanClipPPOLoss",
    "lean_ppo_obstacle",
    # on-policy
    "TorchRLRolloutTrainer",
    "actor_critic_modules",
    "rollout_buffer",
    # off-policy
    "LossTargetUpdate",
    "TorchRLOffPolicyTrainer",
    "action_bounds_spec",
    "egreedy_step",
    "loss_target_update",
    "ou_noise",
    "replay_buffer",
    "nstep_batch",
    "STEPS_TO_NEXT_OBS",
    "set_value_estimator",
    # multi-agent
    "TorchRLMultiAgentRolloutTrainer",
    "TorchRLTeamOffPolicyTrainer",
    "agent_group",
    "agent_mlp",
    "done_keys",
    "group_observation_key",
    "multiagent_actor",
    "multiagent_critic",
    "team_spaces",
    "team_mask_key",
    # imitation (GAIL)
    "AdversarialImitation",
    "AdversarialImitationTrainer",
    "Discriminator",
    "GAILLossTerms",
    "gail_loss_terms",
    "make_discriminator",
    # offline
    "ObservationStandardizer",
    "ContextActing",
    "DecisionTransformer",
    "OnlineFineTuning",
    "OnlineSegments",
    "ReturnConditionedActing",
    "SquashedGaussian",
    "SEGMENT_KEYS",
    "TrajectorySegments",
    "linear_warmup",
    "make_decision_transformer",
    "target_return",
    "online_segments",
    "trajectory_segments",
    "TorchRLOfflineTrainer",
    "dataset_buffer",
]
