"""TorchRL config parity: the table of every constructor argument of the TorchRL classes rlplug's cells build.

Each class a first-party TorchRL cell constructs (its loss, the loss's value estimator, the target
updater, the replay buffer with its storage, sampler and writer, the collector, the exploration
modules) has a table here, keyed by the class's name: per argument, the recipe setting that feeds it
(``Setting``, same default as TorchRL's unless ``differs`` says why) or why it is not one
(``Excluded``). ``constructed(build)`` finds those objects on a built cell, so a class a cell starts
using without a table fails the check (``rlplug.backends.common.parity``; tests/test_parity.py).

A plugin author keeps it green by giving each new class a table and each new argument an entry; a
TorchRL upgrade that adds or removes an argument, or moves a default, names it. Subclasses (rlplug's
lean losses, ``BatchedCQLLoss``) are checked as the TorchRL class whose ``__init__`` they inherit.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from ..common.parity import KNOWN_DIFFERENCE, REQUIRED, Excluded, Setting, Table, counts, differences, problems

# ---- reasons shared by several classes ---------------------------------------------------------

MODEL = Excluded("the cell's network, built by its models stage")
DEVICE = Excluded("device: from the build (its networks' device)")
LOSS_GAMMA = Excluded("deprecated in TorchRL 0.14 (a value raises); the discount goes to the value estimator")
NO_PRIORITIES = Excluded("rlplug's replay is uniform: prioritized replay is broken on this torch pin (reference §13.3)")
REDUCTION = Excluded("library default kept: terms are batch means, which the trainers sum")
VMAP = Excluded("library default kept: vmap over the Q networks (the lean losses bypass it on their own path)")
SEPARATE = Excluded("library default kept: actor and critics share no parameters in rlplug's networks")
SCALAR_OUTPUT = Excluded("library default kept: the loss's reduced terms are scalars")
ACTION_SPEC = Excluded("not needed: the cell resolves target entropy and bounds from the build's action space")
KEYS = Excluded("a tensordict key: the library's, or set through set_keys by the cell")
ESTIMATOR_SET = Excluded("set by the loss's make_value_estimator")
CHUNKS = Excluded("library default kept: chunking only matters for trajectories far longer than a rollout")
L2_LOSS = ("both backends fit the critics with a mean squared TD error, skrl's F.mse_loss (the skrl cells' "
           "critic loss); TorchRL defaults to smooth_l1")  # fmt: skip
NO_DEFAULT = "TorchRL has no default value here (None: the caller must give one)"

# ---- losses ---------------------------------------------------------------------------------------

_PPO_COMMON: Table = {
    "actor_network": MODEL,
    "critic_network": MODEL,
    "clip_epsilon": Setting("clip_epsilon"),
    "entropy_bonus": Excluded("library default kept: on; entropy_coeff = 0 removes the bonus"),
    "samples_mc_entropy": Excluded("library default kept: rlplug's distributions have a closed-form entropy"),
    "normalize_advantage_exclude_dims": Excluded("library default kept"),
    "advantage_norm": Excluded("library default kept: advantages standardised by mean and std"),
    "gamma": LOSS_GAMMA,
    "separate_losses": SEPARATE,
    "reduction": REDUCTION,
    "clip_value": Setting("clip_value"),
    "delay_actor": Excluded("library default kept: PPO has no target actor"),
    "max_importance_ratio": Excluded("library default kept: the clipped objective bounds the ratio"),
    "device": DEVICE,
    "log_explained_variance": Excluded("a reported metric only"),
    "advantage_key": KEYS,
    "value_target_key": KEYS,
    "value_key": KEYS,
    "functional": Excluded("fixed by the cell: False, the modules themselves instead of parameter copies (~12 % of a PPO step)"),
    "actor": Excluded("deprecated alias of actor_network"),
    "critic": Excluded("deprecated alias of critic_network"),
    "loss_critic_type": Setting("loss_critic_type", differs="the neutral value_coef weighs a mean squared error (skrl's value "
                                "loss, families/onpolicy.py); TorchRL defaults to smooth_l1"),
    "critic_coeff": Setting("critic_coeff", differs="TorchRL's None drops the critic term (PPOLoss: no critic loss when None); "
                            "rlplug always trains the critic, weighted by value_coef"),
}

LOSSES: dict[str, Table] = {
    "ClipPPOLoss": {
        **_PPO_COMMON,
        "entropy_coeff": Setting("entropy_coeff", differs=KNOWN_DIFFERENCE),
        "normalize_advantage": Setting("normalize_advantage", differs="skrl's PPO standardises advantages too (reference §5.1): "
                                       "one recipe trains the same on both backends; with advantage_norm_scope = 'rollout' "
                                       "(skrl's) rlplug's loop does it once per rollout and the loss gets False"),
    },
    "PPOLoss": {  # TRPO's: the unclipped surrogate and the critic loss (rlplug_trpo.torchrl_backend.TRPOLoss)
        **{name: entry for name, entry in _PPO_COMMON.items() if name not in ("clip_epsilon", "clip_value", "critic_coeff")},
        "entropy_bonus": Excluded("fixed by the cell: False, TRPO has no entropy bonus"),
        "entropy_coeff": Excluded("not used: TRPO has no entropy bonus"),
        "critic_coeff": Excluded("fixed by the cell: 1.0, the critic's loss is stepped by its own Adam (sb3-contrib's TRPO)"),
        "clip_value": Excluded("library default kept: TRPO does not clip the value change"),
        "max_importance_ratio": Excluded("library default kept: the KL bound of the natural-gradient step limits the ratio"),
        "normalize_advantage": Excluded("library default kept: rlplug's loop standardises the rollout's advantages "
                                        "(normalize_advantage, advantage_norm_scope = 'rollout')"),
        "loss_critic_type": Setting("loss_critic_type", differs="a mean squared error, sb3-contrib's and skrl's TRPO value "
                                    "loss; TorchRL defaults to smooth_l1"),
    },
    "MAPPOLoss": {
        **_PPO_COMMON,
        "value_norm": Excluded("rlplug standardises values itself (normalize_values: the trainer's RunningNormalizer)"),
        "entropy_coeff": Setting("entropy_coeff"),
        "normalize_advantage": Excluded("library default kept: per minibatch, over all but the agent dimension"),
    },
    "A2CLoss": {
        "actor_network": MODEL,
        "critic_network": MODEL,
        "entropy_bonus": Excluded("fixed by the cell: True (A2CLoss drops the term at a zero coefficient; the cell declares it "
                                  "optimised), entropy_coeff = 0 removes the bonus"),
        "samples_mc_entropy": Excluded("library default kept: rlplug's distributions have a closed-form entropy"),
        "entropy_coeff": Setting("entropy_coeff", differs="SB3's A2C ent_coef 0.0 (skrl's A2C entropy_loss_scale 0.0); "
                                 "TorchRL's None stands for its 0.01"),
        "critic_coeff": Setting("critic_coeff", differs="SB3's A2C vf_coef 0.5; TorchRL weighs the critic by 1.0"),
        "loss_critic_type": Setting("loss_critic_type", differs="the neutral value_coef weighs a mean squared error (skrl's "
                                    "and SB3's A2C value loss); TorchRL defaults to smooth_l1"),
        "advantage_norm": Excluded("library default kept: rlplug's loop standardises the rollout's advantages "
                                   "(normalize_advantage, advantage_norm_scope = 'rollout', as skrl's compute_gae)"),
        "gamma": LOSS_GAMMA,
        "separate_losses": SEPARATE,
        "advantage_key": KEYS,
        "value_target_key": KEYS,
        "functional": Excluded("fixed by the cell: False, the modules themselves instead of parameter copies (as PPO's)"),
        "actor": Excluded("deprecated alias of actor_network"),
        "critic": Excluded("deprecated alias of critic_network"),
        "reduction": REDUCTION,
        "clip_value": Excluded("library default kept: A2C does not clip the value change (neither skrl's nor SB3's)"),
    },
    "ReinforceLoss": {
        "actor_network": MODEL,
        "critic_network": MODEL,
        "delay_value": Excluded("library default kept: no target critic; TD(1) targets bootstrap from the critic itself"),
        "loss_critic_type": Setting("loss_critic_type", differs="a mean squared error, as the skrl cell's (A2C's value loss); "
                                    "TorchRL defaults to smooth_l1"),
        "gamma": LOSS_GAMMA,
        "advantage_key": KEYS,
        "value_target_key": KEYS,
        "separate_losses": SEPARATE,
        "functional": Excluded("fixed by the cell: False, the modules themselves instead of parameter copies"),
        "actor": Excluded("deprecated alias of actor_network"),
        "critic": Excluded("deprecated alias of critic_network"),
        "reduction": REDUCTION,
        "clip_value": Excluded("library default kept: REINFORCE does not clip the value change"),
    },
    "SACLoss": {
        "actor_network": MODEL,
        "qvalue_network": MODEL,
        "value_network": Excluded("library default kept: SAC v2, no state-value network"),
        "num_qvalue_nets": Setting("num_qvalue_nets"),
        "loss_function": Setting("loss_function", differs=L2_LOSS),
        "alpha_init": Setting("alpha_init"),
        "min_alpha": Excluded("library default kept: alpha is not clamped (skrl's SAC does not clamp it either)"),
        "max_alpha": Excluded("library default kept: alpha is not clamped (skrl's SAC does not clamp it either)"),
        "action_spec": ACTION_SPEC,
        "fixed_alpha": Setting("fixed_alpha"),
        "target_entropy": Setting("target_entropy"),
        "delay_actor": Excluded("library default kept: SAC has no target actor"),
        "delay_qvalue": Excluded("library default kept: target Q networks, moved by the cell's target updater"),
        "delay_value": Excluded("library default kept: SAC v2 has no value network"),
        "gamma": LOSS_GAMMA,
        "priority_key": NO_PRIORITIES,
        "separate_losses": SEPARATE,
        "reduction": REDUCTION,
        "skip_done_states": Excluded("library default kept: the actor loss reads every sampled state"),
        "deactivate_vmap": VMAP,
        "use_prioritized_weights": NO_PRIORITIES,
        "scalar_output_mode": SCALAR_OUTPUT,
    },
    "TD3Loss": {
        "actor_network": MODEL,
        "qvalue_network": MODEL,
        "action_spec": Excluded("the cell passes bounds instead"),
        "bounds": Excluded("set by the cell from the build's Box action space"),
        "num_qvalue_nets": Excluded("fixed by the cell: 2, TD3's twin critics (the library default)"),
        "policy_noise": Setting("policy_noise"),
        "noise_clip": Setting("noise_clip"),
        "loss_function": Setting("loss_function", differs=L2_LOSS + " (rlplug_td3.settings)"),
        "delay_actor": Excluded("library default kept: TD3's target actor"),
        "delay_qvalue": Excluded("library default kept: TD3's target critics"),
        "gamma": LOSS_GAMMA,
        "priority_key": NO_PRIORITIES,
        "separate_losses": SEPARATE,
        "reduction": REDUCTION,
        "deactivate_vmap": VMAP,
        "use_prioritized_weights": NO_PRIORITIES,
    },
    "DDPGLoss": {
        "actor_network": MODEL,
        "value_network": MODEL,
        "loss_function": Setting("loss_function"),
        "delay_actor": Excluded("fixed by the cell: True (TorchRL's default False keeps no target actor); DDPG's target "
                                "actor, as skrl's and SB3's DDPG have"),
        "delay_value": Excluded("library default kept: DDPG's target critic"),
        "gamma": LOSS_GAMMA,
        "separate_losses": SEPARATE,
        "reduction": REDUCTION,
        "use_prioritized_weights": NO_PRIORITIES,
    },
    # a loss of a plugin's own on TorchRL's base (qrdqn's QRDQNLoss): the base takes no argument, the loss's
    # own arguments are the plugin's settings
    "LossModule": {},
    "DQNLoss": {
        "value_network": MODEL,
        "loss_function": Setting("loss_function"),
        "delay_value": Excluded("fixed by the cell: True (the library default), DQN's target network"),
        "double_dqn": Setting("double_dqn"),
        "gamma": LOSS_GAMMA,
        "action_space": Excluded("read by the loss from the Q actor's spec"),
        "priority_key": NO_PRIORITIES,
        "reduction": REDUCTION,
        "use_prioritized_weights": NO_PRIORITIES,
    },
    "QMixerLoss": {
        "local_value_network": MODEL,
        "mixer_network": MODEL,
        "loss_function": Setting("loss_function"),
        "delay_value": Excluded("fixed by the cell: True (the library default), QMIX's target networks"),
        "gamma": LOSS_GAMMA,
        "action_space": Excluded("fixed by the cell: 'categorical', the agents' action indices"),
        "priority_key": NO_PRIORITIES,
    },
    "DistributionalDQNLoss": {
        "value_network": MODEL,
        "gamma": Setting("gamma"),  # its only discount: the loss takes no value estimator
        "delay_value": Excluded("fixed by the cell: True (the library default), C51's target network"),
        "priority_key": NO_PRIORITIES,
        "reduction": REDUCTION,
        "use_prioritized_weights": NO_PRIORITIES,
    },
    "IQLLoss": {
        "actor_network": MODEL,
        "qvalue_network": MODEL,
        "value_network": MODEL,
        "num_qvalue_nets": Setting("num_qvalue_nets"),
        "loss_function": Setting("loss_function", differs=L2_LOSS),
        "temperature": Setting("temperature", differs="the IQL paper's value; IQLLoss's own defaults are not the paper's "
                               "(rlplug_iql.torchrl_backend.make_iql_loss)"),
        "expectile": Setting("expectile", differs="the IQL paper's value; IQLLoss's own defaults are not the paper's "
                             "(rlplug_iql.torchrl_backend.make_iql_loss)"),
        "gamma": LOSS_GAMMA,
        "priority_key": NO_PRIORITIES,
        "separate_losses": SEPARATE,
        "reduction": REDUCTION,
        "deactivate_vmap": VMAP,
        "scalar_output_mode": SCALAR_OUTPUT,
    },
    "BCLoss": {
        "actor_network": MODEL,
        "loss_function": Setting("loss_function", differs="named, not inferred: BCLoss's None picks MSE for a deterministic "
                                 "actor's Box actions (the recipe's 'l2') and cross-entropy for Discrete ones (the cell "
                                 "passes 'cross_entropy' there)"),
        "reduction": REDUCTION,
    },
    "DTLoss": {
        "actor_network": MODEL,
        "loss_function": Setting("loss_function"),
        "reduction": REDUCTION,
        "device": DEVICE,
    },
    "OnlineDTLoss": {
        "actor_network": MODEL,
        "alpha_init": Setting("initial_alpha", differs="Online DT's init_temperature 0.1; TorchRL defaults to 1.0"),
        "min_alpha": Excluded("library default kept: the temperature is not clamped (Online DT's is not)"),
        "max_alpha": Excluded("library default kept: the temperature is not clamped (Online DT's is not)"),
        "fixed_alpha": Excluded("library default kept: the temperature is tuned, as Online DT's"),
        "target_entropy": Excluded("resolved by the cell: 'auto' is -action_dim of the build's action space (the actor "
                                   "carries no spec to infer it from)"),
        "samples_mc_entropy": Excluded("library default kept: one sample per step, as the skrl cell draws"),
        "reduction": REDUCTION,
        "scalar_output_mode": SCALAR_OUTPUT,
    },
    "GAILLoss": {
        "discriminator_network": Excluded("the cell's discriminator, built by its models stage"),
        "use_grad_penalty": Setting("use_grad_penalty"),
        "gp_lambda": Setting("gp_lambda"),
        "reduction": REDUCTION,
    },
    "DiscreteIQLLoss": {
        "actor_network": MODEL,
        "qvalue_network": MODEL,
        "value_network": MODEL,
        "action_space": Excluded("fixed by the cell: 'categorical', the index actions datasets store (the library's None "
                                 "warns and means one-hot)"),
        "num_qvalue_nets": Setting("num_qvalue_nets"),
        "loss_function": Setting("loss_function", differs=L2_LOSS),
        "temperature": Setting("temperature", differs="the IQL paper's value; IQLLoss's own defaults are not the paper's "
                               "(rlplug_iql.torchrl_discrete.make_discrete_iql_loss)"),
        "expectile": Setting("expectile", differs="the IQL paper's value; IQLLoss's own defaults are not the paper's "
                             "(rlplug_iql.torchrl_discrete.make_discrete_iql_loss)"),
        "gamma": LOSS_GAMMA,
        "priority_key": NO_PRIORITIES,
        "separate_losses": SEPARATE,
        "reduction": REDUCTION,
        "scalar_output_mode": SCALAR_OUTPUT,
    },
    "CQLLoss": {
        "actor_network": MODEL,
        "qvalue_network": MODEL,
        "loss_function": Setting("loss_function", differs=L2_LOSS + " (td_loss = 'l2', rlplug_cql)"),
        "alpha_init": Setting("alpha_init"),
        "min_alpha": Excluded("library default kept: alpha is not clamped"),
        "max_alpha": Excluded("library default kept: alpha is not clamped"),
        "action_spec": ACTION_SPEC,
        "fixed_alpha": Setting("fixed_alpha"),
        "target_entropy": Setting("target_entropy"),
        "delay_actor": Excluded("library default kept: no target actor"),
        "delay_qvalue": Excluded("fixed by the cell: True (the library default), the target Q networks of the TD target"),
        "gamma": LOSS_GAMMA,
        "temperature": Setting("temperature"),
        "min_q_weight": Setting("min_q_weight"),
        "max_q_backup": Excluded("fixed by the cell: False (the library default); rlplug's CQL backs up the policy's action"),
        "deterministic_backup": Setting("deterministic_backup"),
        "num_random": Setting("num_random"),
        "with_lagrange": Excluded("fixed by the cell: False (the library default); the Lagrange variant is not offered"),
        "lagrange_thresh": Excluded("read only with with_lagrange"),
        "reduction": REDUCTION,
        "deactivate_vmap": VMAP,
        "scalar_output_mode": SCALAR_OUTPUT,
    },
    "DiscreteCQLLoss": {
        "value_network": MODEL,
        "loss_function": Setting("loss_function"),
        "delay_value": Excluded("fixed by the cell: True (the library default); PatchedDiscreteCQLLoss binds the target to the TD target"),
        "gamma": LOSS_GAMMA,
        "action_space": Excluded("read by the loss from the Q actor's spec"),
        "reduction": REDUCTION,
    },
}
# TD3+BC is TD3's loss with a behaviour-cloning actor term (and no gamma argument: its estimator has it)
LOSSES["TD3BCLoss"] = {
    **{k: v for k, v in LOSSES["TD3Loss"].items() if k != "gamma"},
    "alpha": Setting("alpha"),
    "loss_function": Setting("loss_function", differs="the paper's mean squared TD error, as TD3's cells (rlplug_td3bc.settings); "
                             "TorchRL defaults to smooth_l1"),
}
# TQCLoss is SACLoss with quantile critics: no loss_function (its quantile Huber loss is fixed), no delay_actor,
# a truncation per critic
LOSSES["TQCLoss"] = {
    **{k: v for k, v in LOSSES["SACLoss"].items() if k not in ("loss_function", "value_network", "delay_actor", "delay_value", "gamma", "priority_key")},
    "top_quantiles_to_drop_per_net": Setting("top_quantiles_to_drop_per_net"),
}
# REDQLoss is SACLoss over an ensemble: a random subset of the target critics, alpha clamped by default
LOSSES["REDQLoss"] = {
    **{k: v for k, v in LOSSES["SACLoss"].items() if k not in ("value_network", "delay_actor", "delay_value", "skip_done_states",
                                                               "use_prioritized_weights")},
    "sub_sample_len": Setting("critic_subset"),
    "min_alpha": Excluded("fixed by the cell: 1e-30 (alpha unclamped, as SAC's on both backends); the library clamps at 0.1"),
    "max_alpha": Excluded("fixed by the cell: 1e30 (alpha unclamped, as SAC's on both backends); the library clamps at 10"),
    "gSDE": Excluded("library default kept: no gSDE"),
}
# DiscreteSACLoss: SACLoss over a categorical actor and Q(s, .) critics (sac on Discrete actions)
LOSSES["DiscreteSACLoss"] = {
    **{k: v for k, v in LOSSES["SACLoss"].items() if k not in ("value_network", "delay_actor", "delay_value", "gamma", "action_spec")},
    "action_space": Excluded("fixed by the cell: 'categorical', the index actions the env and replay hold (the library's "
                             "None warns and means one-hot)"),
    "num_actions": Excluded("the build's action space's n (what target_entropy 'auto' reads)"),
    "target_entropy_weight": Excluded("library default kept: 0.98, read by target_entropy = 'auto' (skrl's discrete cell "
                                      "uses the same, rlplug_sac.skrl_discrete.TARGET_ENTROPY_WEIGHT)"),
    "delay_qvalue": Excluded("library default kept: target Q networks, moved by the cell's target updater"),
}
# CrossQLoss is SACLoss without target networks: no delay flags, no value network
LOSSES["CrossQLoss"] = {
    **{k: v for k, v in LOSSES["SACLoss"].items() if k not in ("value_network", "delay_actor", "delay_qvalue", "delay_value", "gamma",
                                                               "skip_done_states", "use_prioritized_weights")},
}
# IPPOLoss is MAPPOLoss for a per-agent critic on local observations (TorchRL: "structurally identical")
LOSSES["IPPOLoss"] = LOSSES["MAPPOLoss"]

# ---- value estimators ------------------------------------------------------------------------------

_ESTIMATOR: Table = {
    "gamma": Setting("gamma"),
    "value_network": ESTIMATOR_SET,
    "shifted": Excluded("library default kept"),
    "differentiable": Excluded("set by the loss's make_value_estimator (True); targets are detached where the loss needs it"),
    "advantage_key": ESTIMATOR_SET,
    "value_target_key": ESTIMATOR_SET,
    "value_key": ESTIMATOR_SET,
    "skip_existing": Excluded("library default kept; the on-policy trainer sets it per call (values computed once per batch)"),
    "device": DEVICE,
    "deactivate_vmap": ESTIMATOR_SET,
    "value_chunk_size": CHUNKS,
    "num_chunks": CHUNKS,
    "num_chunk": CHUNKS,
    "value_chunk_dim": CHUNKS,
    "shifted_budget": CHUNKS,
    "group_key": Excluded("library default kept: rewards and values come with the agent dimension (MAPPO sets its keys)"),
}
_AVERAGE_REWARDS = Excluded("library default kept: rewards as the env gives them (normalisation is a recipe wrapper)")
_TIME_DIM = Excluded("library default kept: time is the batch's last dimension ([num_envs, steps])")
_VECTORIZED = Excluded("library default kept")
_GAE: Table = {
    **_ESTIMATOR,
    "time_dim": _TIME_DIM,
    "lmbda": Setting("lmbda"),
    "vectorized": _VECTORIZED,
    "auto_reset_env": Excluded("library default kept: the env resets itself (SAME_STEP autoreset)"),
    "average_gae": Excluded("library default kept: advantages are standardised by the loss per minibatch"),
}

ESTIMATORS: dict[str, Table] = {
    "TD0Estimator": {**_ESTIMATOR, "average_rewards": _AVERAGE_REWARDS},
    "TD1Estimator": {**_ESTIMATOR, "average_rewards": _AVERAGE_REWARDS, "time_dim": _TIME_DIM},
    "TDLambdaEstimator": {**_ESTIMATOR, "average_rewards": _AVERAGE_REWARDS, "time_dim": _TIME_DIM, "lmbda": Setting("lmbda"),
                          "vectorized": _VECTORIZED},
    "GAE": _GAE,
    "MultiAgentGAE": {**_GAE, "agent_dim": Excluded("library default kept: agents are dimension -2 of rlplug's group keys")},
}

# ---- target updaters -------------------------------------------------------------------------------

TARGET_UPDATERS: dict[str, Table] = {
    "SoftUpdate": {
        "loss_module": Excluded("the cell's loss"),
        "eps": Excluded("the same rate as tau (eps = 1 - tau); the cell passes tau"),
        "tau": Setting("tau", differs=NO_DEFAULT + " (SoftUpdate needs tau or eps)"),
    },
    "HardUpdate": {
        "loss_module": Excluded("the cell's loss"),
        # HardUpdate copies every interval + 1 steps (reference §3.2)
        "value_network_update_interval": Setting(
            "target_update_period", convert=lambda period: period - 1,
            differs="a copy every target_update_period updater steps, 1 with the default soft update (TARGET_PARAMS); "
                    "TorchRL's 1000 is a hard-update-only default",
        ),  # fmt: skip
    },
}

# ---- replay buffers, storages, samplers, writers ----------------------------------------------------

_BUFFER: Table = {
    "storage": Excluded("built by the cell (checked on its own)"),
    "sampler": Excluded("built by the cell (checked on its own)"),
    "sample_unit": Excluded("library default kept: transitions"),
    "writer": Excluded("library default kept: a round-robin writer (checked on its own)"),
    "collate_fn": Excluded("library default kept"),
    "pin_memory": Excluded("library default kept: CPU training"),
    "prefetch": Excluded("library default kept: sampling is synchronous with the update"),
    "transform": Excluded("library default kept: the trainer selects the transition keys before extending"),
    "transform_factory": Excluded("library default kept"),
    "batch_size": {
        "on-policy": Setting("minibatch_size", differs=NO_DEFAULT + " (sample() would need it)"),
        "off-policy": Setting("batch_size", differs=NO_DEFAULT + " (sample() would need it)"),
        "offline": Setting("batch_size", differs=NO_DEFAULT + " (sample() would need it)"),
    },
    "dim_extend": Excluded("library default kept: batches are flattened before extending"),
    "checkpointer": Excluded("the buffer's state_dict goes into rlplug's own checkpoint"),
    "generator": Excluded("library default kept: seeded through torch's global RNG (seed_everything)"),
    "consume_after_n_samples": Excluded("library default kept: replay keeps what it sampled"),
    "shared": Excluded("library default kept: one process per buffer"),
    "compilable": Excluded("library default kept"),
    "delayed_init": Excluded("library default kept"),
    "service_backend": Excluded("library default kept: an in-process buffer"),
    "service_backend_options": Excluded("library default kept: an in-process buffer"),
    "transport": Excluded("library default kept: an in-process buffer"),
    "transport_options": Excluded("library default kept: an in-process buffer"),
}

_STORAGE_COMMON: Table = {
    "device": DEVICE,
    "ndim": Excluded("library default kept: one dimension of transitions"),
    "compilable": Excluded("library default kept"),
    "shared_init": Excluded("library default kept: one process per buffer"),
}
_WRITER: Table = {
    "compilable": Excluded("built by the buffer with the library defaults"),
    "track_generations": Excluded("built by the buffer with the library defaults"),
}

BUFFERS: dict[str, Table] = {
    "ReplayBuffer": _BUFFER,
    "TensorDictReplayBuffer": {**_BUFFER, "priority_key": NO_PRIORITIES},
    "LazyTensorStorage": {
        **_STORAGE_COMMON,
        "max_size": {
            "on-policy": Setting("frames_per_batch"),
            "off-policy": Setting("buffer_size"),
            "offline": Excluded("set by the cell from the dataset's length"),
        },
        "consolidated": Excluded("library default kept"),
        "cleanup_memmap": Excluded("library default kept"),
    },
    "LazyMemmapStorage": {
        **_STORAGE_COMMON,
        "max_size": {"off-policy": Setting("buffer_size")},
        "scratch_dir": Excluded("library default kept: a fresh temporary directory"),
        "existsok": Excluded("library default kept"),
        "auto_cleanup": Excluded("library default kept: the directory goes with the buffer"),
    },
    "SamplerWithoutReplacement": {
        "drop_last": Excluded("library default kept: a smaller last minibatch (rlplug.families.onpolicy)"),
        "shuffle": Excluded("library default kept: a fresh permutation each epoch"),
    },
    "RandomSampler": {},
    "SliceSampler": {
        "num_slices": Excluded("slice_len is given instead"),
        "slice_len": Setting("trajectory_slice", differs=NO_DEFAULT + " (num_slices or slice_len)"),
        "end_key": Excluded("fixed by the cell: ('next', 'done'), slices end with their episode"),
        "end_keys": Excluded("end_key is given instead"),
        "traj_key": Excluded("library default kept: trajectories from end_key"),
        "step_key": Excluded("library default kept"),
        "fragmented": Excluded("library default kept"),
        "ends": Excluded("library default kept: read from the storage"),
        "trajectories": Excluded("library default kept: read from the storage"),
        "cache_values": Excluded("library default kept: the buffer grows between samples"),
        "truncated_key": Excluded("library default kept"),
        "init_key": Excluded("library default kept"),
        "strict_length": Excluded("fixed by the cell: False, a slice may stop short at an episode's end"),
        "pad_output": Excluded("library default kept"),
        "compile": Excluded("library default kept"),
        "span": Excluded("library default kept"),
        "use_gpu": Excluded("library default kept: CPU sampling"),
    },
    "RoundRobinWriter": _WRITER,
    "TensorDictRoundRobinWriter": _WRITER,
}

# ---- collector ------------------------------------------------------------------------------------

_IN_PROCESS = Excluded("library default kept: rlplug collects in-process (data-parallel runs use torch.distributed)")
_LOOP = Excluded("library default kept: rlplug's trainer owns the loop around the collector")

COLLECTORS: dict[str, Table] = {
    "Collector": {
        "create_env_fn": Excluded("the cell's env, built from the recipe's env and wrappers"),
        "policy": Excluded("the cell's actor or exploration policy"),
        "policy_factory": _IN_PROCESS,
        "backend": _IN_PROCESS,
        "backend_options": _IN_PROCESS,
        "num_collectors": _IN_PROCESS,
        "sync": _IN_PROCESS,
        "frames_per_batch": {
            "on-policy": Setting("frames_per_batch"),
            "off-policy": Excluded("set by the cell: num_envs x train_every, one round of gradient steps per batch"),
        },
        "total_frames": Excluded("library default kept (-1, endless): rlplug's trainer owns the step budget"),
        "device": DEVICE,
        "storing_device": DEVICE,
        "policy_device": DEVICE,
        "env_device": DEVICE,
        "create_env_kwargs": Excluded("the env is built by the cell, not by the collector"),
        "max_frames_per_traj": Excluded("library default kept: episode limits are the env's own time limits"),
        "init_random_frames": {
            "on-policy": Excluded("library default kept: on-policy collection has no random warm-up"),
            "off-policy": Setting("learning_starts", differs="TorchRL's None is no warm-up; rlplug's off-policy family collects "
                                  "learning_starts random transitions first (REPLAY_PARAMS); set after construction"),
        },
        "reset_at_each_iter": Excluded("library default kept: episodes run on across batches"),
        "postproc": _LOOP,
        "split_trajs": _LOOP,
        "track_traj_ids": _LOOP,
        "exploration_type": Excluded("library default kept (RANDOM); evaluation acts deterministically outside the collector"),
        "return_same_td": _LOOP,
        "reset_when_done": Excluded("library default kept: ended episodes reset"),
        "interruptor": _IN_PROCESS,
        "set_truncated": Excluded("library default kept: truncation comes from the env's time limit"),
        "use_buffers": _LOOP,
        "replay_buffer": Excluded("library default kept: the trainer extends its own buffer with selected keys"),
        "extend_buffer": Excluded("library default kept: the trainer extends its own buffer with selected keys"),
        "trust_policy": _LOOP,
        "compile_policy": Excluded("library default kept: the compile setting compiles the update, not collection"),
        "cudagraph_policy": Excluded("library default kept: CPU-first"),
        "no_cuda_sync": Excluded("library default kept: CPU-first"),
        "weight_updater": _IN_PROCESS,
        "weight_sync_schemes": _IN_PROCESS,
        "weight_recv_schemes": _IN_PROCESS,
        "track_policy_version": _IN_PROCESS,
        "worker_idx": _IN_PROCESS,
        "trajs_per_batch": Excluded("library default kept: fixed-size batches of frames, not of trajectories"),
        "trajs_per_write": Excluded("library default kept: fixed-size batches of frames, not of trajectories"),
        "traj_format": Excluded("library default kept: fixed-size batches of frames, not of trajectories"),
        "auto_register_policy_transforms": Excluded("fixed by the cell: False, no InitTracker appended (reference §13.5)"),
        "pre_collect_hook": Excluded("library default kept: rlplug's trainer hooks run around its own step"),
        "post_collect_hook": Excluded("library default kept: rlplug's trainer hooks run around its own step"),
        "compact_obs": Excluded("library default kept"),
    },
}

# ---- exploration ------------------------------------------------------------------------------------

_SCALED_BY_TRAINER = Excluded("fixed by the cell: the trainer sets the noise scale from its own schedule each batch")
_EXPLORATION_COMMON: Table = {
    "spec": Excluded("set by the cell from the build's action space"),
    "action_key": KEYS,
    "device": DEVICE,
}

EXPLORATION: dict[str, Table] = {
    "EGreedyModule": {
        **_EXPLORATION_COMMON,
        "eps_init": Setting("eps_init"),
        "eps_end": Setting("eps_end", differs=KNOWN_DIFFERENCE),
        "annealing_num_steps": Setting("annealing_num_steps", differs=KNOWN_DIFFERENCE),
        "action_mask_key": Excluded("set by the cell from the env: 'action_mask' where its observations carry an action mask "
                                    "(rlplug.envs.masks), else the library default (none)"),
    },
    "AdditiveGaussianModule": {
        **_EXPLORATION_COMMON,
        "sigma_init": _SCALED_BY_TRAINER,
        "sigma_end": _SCALED_BY_TRAINER,
        "annealing_num_steps": _SCALED_BY_TRAINER,
        "mean": Excluded("fixed by the cell: 0, zero-mean noise"),
        "std": Setting("exploration_std", differs=KNOWN_DIFFERENCE),
        "safe": Excluded("library default kept: the env clamps actions to the bounds (ClampAction / clip_actions)"),
    },
    "OrnsteinUhlenbeckProcessModule": {
        **_EXPLORATION_COMMON,
        "eps_init": _SCALED_BY_TRAINER,
        "eps_end": _SCALED_BY_TRAINER,
        "annealing_num_steps": _SCALED_BY_TRAINER,
        "theta": Setting("ou_theta"),
        "mu": Excluded("library default kept: the process reverts to 0"),
        "sigma": Setting("exploration_std", differs=KNOWN_DIFFERENCE),
        "dt": Excluded("fixed by the cell: 1 per env step, skrl's discretisation, so both backends run one process"),
        "x0": Excluded("library default kept: the process starts at 0"),
        "sigma_min": Excluded("library default kept"),
        "n_steps_annealing": Excluded("library default kept: sigma is not annealed"),
        "is_init_key": Excluded("library default kept; rlplug's subclass lets the process run on across episodes"),
        "safe": Excluded("library default kept: the noisy action is projected into the bounds"),
    },
}

TABLES: dict[str, Table] = {**LOSSES, **ESTIMATORS, **TARGET_UPDATERS, **BUFFERS, **COLLECTORS, **EXPLORATION}
"""Every TorchRL class a first-party cell constructs, by class name."""

FAMILIES = {"TorchRLRolloutTrainer": "on-policy", "TorchRLOffPolicyTrainer": "off-policy", "TorchRLOfflineTrainer": "offline"}
"""The building-block family of a cell, from its trainer's base (a table entry may differ by family)."""

_EXPLORATION_MODULE = "torchrl.modules.tensordict_module.exploration"


# ---- what a built cell constructed -------------------------------------------------------------------


def library_class(cls: type) -> type:
    """The first TorchRL class of ``cls``'s MRO: what a subclass (a lean loss) is constructed as."""
    for base in cls.__mro__:
        if base.__module__.split(".")[0] == "torchrl":
            return base
    raise TypeError(f"{cls.__name__} is not a TorchRL class")


def constructed(build: Any) -> dict[str, Any]:
    """The TorchRL objects a built TorchRL cell holds, by role: loss, value estimator, target updater,
    buffer, storage, sampler, writer, collector, exploration modules and a discriminator's loss (those it uses)."""
    found: dict[str, Any] = {"loss": build.loss}
    estimator = getattr(build.loss, "_value_estimator", None)
    if estimator is not None:
        found["value_estimator"] = estimator
    updater = build.target_updater
    if updater is not None:
        found["target_updater"] = getattr(updater, "updater", updater)  # LossTargetUpdate wraps TorchRL's
    memory = build.memory
    if hasattr(memory, "_storage"):  # a TorchRL replay buffer (a Decision Transformer's segments are rlplug's)
        found.update(buffer=memory, storage=memory._storage, sampler=memory._sampler, writer=memory._writer)
    trainer = build.trainer
    discriminator_loss = getattr(getattr(getattr(trainer, "imitation", None), "loss", None), "module", None)
    if discriminator_loss is not None:  # GAIL's GAILLoss (GAILLossTerms.module)
        found["discriminator_loss"] = discriminator_loss
    if getattr(trainer, "collector", None) is not None:
        found["collector"] = trainer.collector
    policy = getattr(trainer, "exploration_policy", None)
    if policy is not None:
        for i, module in enumerate(policy.modules()):
            # private classes (the OU module's process) are TorchRL's own parts, not built by the cell
            cls = type(module)
            if not cls.__name__.startswith("_") and any(base.__module__ == _EXPLORATION_MODULE for base in cls.__mro__):
                found[f"exploration[{i}]"] = module
    return found


def family(build: Any) -> str:
    """``on-policy``, ``off-policy`` or ``offline``: the family whose building blocks the cell uses."""
    for base in type(build.trainer).__mro__:
        if base.__name__ in FAMILIES:
            return FAMILIES[base.__name__]
    raise TypeError(f"{type(build.trainer).__name__} derives from none of {', '.join(FAMILIES)}")


def library_arguments(cls: type) -> dict[str, Any]:
    """``{argument: library default or REQUIRED}`` of a TorchRL class's constructor.

    Arguments a class forwards through ``**kwargs`` are its parent's (``ClipPPOLoss`` -> ``PPOLoss``), so
    the walk goes on up the MRO while an ``__init__`` takes ``**kwargs``. A value estimator's defaults
    are those ``make_value_estimator`` fills in (TorchRL's registry: ``gamma=0.99``, ...), over its own.
    """
    arguments: dict[str, Any] = {}
    mro = cls.__mro__
    for base in mro[mro.index(library_class(cls)):]:
        if "__init__" not in vars(base):
            continue
        if base.__module__.split(".")[0] != "torchrl":
            break
        forwards = False
        for name, parameter in list(inspect.signature(base.__init__).parameters.items())[1:]:
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                forwards = True
            elif name not in arguments:
                arguments[name] = REQUIRED if parameter.default is parameter.empty else parameter.default
        if not forwards:
            break
    arguments.update((name, value) for name, value in _estimator_defaults(cls).items() if name in arguments)
    return arguments


def _estimator_defaults(cls: type) -> dict[str, Any]:
    from torchrl.objectives import utils

    utils._ensure_builtin_value_estimators_registered()
    for entry in utils._VALUE_ESTIMATOR_REGISTRY.values():
        if entry.cls is cls:
            return dict(entry.default_kwargs)
    return {}


def default_settings(build: Any) -> dict[str, Any]:
    """The cell's backend settings at the algorithm's neutral defaults (the recipe defaults compared)."""
    spec = build.algorithm
    return spec.backends[build.backend].settings(spec.defaults(), build.recipe)


def parity_problems(build: Any, tables: Mapping[str, Table] = TABLES) -> list[str]:
    """Every parity problem of a built TorchRL cell: an argument of a class it constructed that no table
    covers, a stale entry, or a recipe default that differs from TorchRL's without a stated reason."""
    settings, kind = default_settings(build), family(build)
    found = []
    for role, obj in constructed(build).items():
        cls = library_class(type(obj))
        owner = f"{build.algorithm.name}/torchrl {role} {cls.__name__}"
        found += problems(owner, library_arguments(cls), tables.get(cls.__name__), settings, kind)
    return found


def parity_report(build: Any, tables: Mapping[str, Table] = TABLES) -> dict[str, dict[str, Any]]:
    """``{class: {"mapped", "differs", "excluded", "differences"}}`` for a built cell (the counts the docs quote)."""
    kind = family(build)
    report = {}
    for obj in constructed(build).values():
        cls = library_class(type(obj))
        table = tables.get(cls.__name__, {})
        report[cls.__name__] = {**counts(library_arguments(cls), table, kind), "differences": differences(table, kind)}
    return report
