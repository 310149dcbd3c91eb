"""skrl config parity: every field of the agent config an skrl cell fills is a recipe setting or excluded.

skrl 2.1 configures an agent with one ``@dataclass`` (``PPO_CFG``, ``SAC_CFG``, ``TD3_CFG``, ``DDPG_CFG``, ``DQN_CFG``,
``MAPPO_CFG``; rlplug's own ``IQL_CFG`` and ``CQL_CFG`` for the offline agents skrl lacks). For each,
the table here names per field the cell's skrl setting that feeds it (``Setting``, with skrl's
default unless ``differs`` says why) or why it is not one (``Excluded``). ``constructed(build)`` reads
the config class off a built cell, so a cell that starts using another config fails the check until
it has a table, and a skrl upgrade that adds or drops a field names it (tests/test_parity.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..common.parity import KNOWN_DIFFERENCE, REQUIRED, Excluded, Setting, Table, counts, differences, problems

EXPERIMENT = Excluded("fixed by the cell: skrl's writers off (write_interval = checkpoint_interval = 0); rlplug's run layer writes")
REWARDS_SHAPER = Excluded("library default kept: reward scaling is a recipe env wrapper, the same on both backends")
MIXED_PRECISION = Excluded("library default kept: CPU-first float32 training")
PREPROCESSOR_KWARGS = Excluded("set by the cell with the preprocessor: the space's size and the build's device")
NO_STATE = Excluded("library default kept: rlplug's single-agent envs have no privileged state apart from the observation")
NO_OBSERVATION_SCALER = Excluded("library default kept: the algorithm has no observation-normalisation parameter")
NO_SCHEDULE = Excluded("library default kept: the algorithm has no learning-rate schedule parameter")
CADENCE = Excluded("fixed by the cell: rlplug's trainer owns warm-up and update cadence (learning_starts, utd_ratio)")
TRAINER_TARGETS = Excluded("unused: the target-updater stage moves the target networks instead of skrl's own update")

_ROLLOUT: Table = {
    "experiment": EXPERIMENT,
    "rollouts": Setting("rollouts", differs=KNOWN_DIFFERENCE),
    "learning_epochs": Setting("learning_epochs", differs=KNOWN_DIFFERENCE),
    "mini_batches": Setting("mini_batches", differs=KNOWN_DIFFERENCE),
    "discount_factor": Setting("discount_factor"),
    "gae_lambda": Setting("gae_lambda"),
    "learning_rate": Setting("learning_rate", differs=KNOWN_DIFFERENCE),
    "observation_preprocessor_kwargs": PREPROCESSOR_KWARGS,
    "state_preprocessor": NO_STATE,
    "state_preprocessor_kwargs": NO_STATE,
    "value_preprocessor_kwargs": PREPROCESSOR_KWARGS,
    "grad_norm_clip": Setting("grad_norm_clip"),
    "ratio_clip": Setting("ratio_clip"),
    "value_clip": Setting("value_clip", differs=KNOWN_DIFFERENCE),
    "value_loss_scale": Setting("value_loss_scale", differs=KNOWN_DIFFERENCE),
    "rewards_shaper": REWARDS_SHAPER,
    "mixed_precision": MIXED_PRECISION,
}

_OFF_POLICY: Table = {
    "experiment": EXPERIMENT,
    "gradient_steps": Excluded("fixed by the cell: 1 per call; rlplug's trainer calls it utd_ratio times per transition"),
    "batch_size": Setting("batch_size", differs=KNOWN_DIFFERENCE),
    "discount_factor": Setting("discount_factor"),
    "observation_preprocessor": NO_OBSERVATION_SCALER,
    "observation_preprocessor_kwargs": NO_OBSERVATION_SCALER,
    "state_preprocessor": NO_STATE,
    "state_preprocessor_kwargs": NO_STATE,
    "random_timesteps": CADENCE,
    "learning_starts": CADENCE,
    "rewards_shaper": REWARDS_SHAPER,
    "mixed_precision": MIXED_PRECISION,
}

TABLES: dict[str, Table] = {
    "PPO_CFG": {
        **_ROLLOUT,
        "learning_rate_scheduler": Setting("learning_rate_scheduler"),
        "learning_rate_scheduler_kwargs": Setting("learning_rate_scheduler_kwargs"),
        "observation_preprocessor": Setting("observation_preprocessor"),
        "value_preprocessor": Setting("value_preprocessor"),
        "entropy_loss_scale": Setting("entropy_loss_scale"),
        "kl_threshold": Setting("kl_threshold"),
        "time_limit_bootstrap": Setting("time_limit_bootstrap", differs="a time-limit cut is not a termination: bootstrapping "
                                        "it from the true last state is the correct return (GYMNASIUM_PARAMS)"),
    },
    "MAPPO_CFG": {
        **_ROLLOUT,
        "learning_rate_scheduler": NO_SCHEDULE,
        "learning_rate_scheduler_kwargs": NO_SCHEDULE,
        "observation_preprocessor": NO_OBSERVATION_SCALER,
        "value_preprocessor": Setting("value_preprocessor", differs=KNOWN_DIFFERENCE),
        "entropy_loss_scale": Setting("entropy_loss_scale", differs=KNOWN_DIFFERENCE),
        "kl_threshold": Excluded("library default kept: MAPPO has no KL early-stop parameter"),
        "time_limit_bootstrap": Excluded("fixed by the cell: False, MPE and VMAS episodes are fixed-horizon tasks (rlplug_mappo)"),
    },
    "A2C_CFG": {
        "experiment": EXPERIMENT,
        "rollouts": Setting("rollouts", differs="SB3's A2C n_steps 5 (reinforce: 128-step Monte-Carlo rollouts); skrl's 16"),
        "mini_batches": Setting("mini_batches"),
        "discount_factor": Setting("discount_factor"),
        "gae_lambda": Setting("gae_lambda"),
        "learning_rate": Setting("learning_rate", differs="SB3's A2C learning rate 7e-4; skrl's 1e-3"),
        "learning_rate_scheduler": Setting("learning_rate_scheduler"),
        "learning_rate_scheduler_kwargs": Setting("learning_rate_scheduler_kwargs"),
        "observation_preprocessor": Setting("observation_preprocessor"),
        "observation_preprocessor_kwargs": PREPROCESSOR_KWARGS,
        "state_preprocessor": NO_STATE,
        "state_preprocessor_kwargs": NO_STATE,
        "value_preprocessor": Setting("value_preprocessor"),
        "value_preprocessor_kwargs": PREPROCESSOR_KWARGS,
        "grad_norm_clip": Setting("grad_norm_clip"),
        "entropy_loss_scale": Setting("entropy_loss_scale"),
        "time_limit_bootstrap": Setting("time_limit_bootstrap", differs="a time-limit cut is not a termination: bootstrapping "
                                        "it from the true last state is the correct return (GYMNASIUM_PARAMS)"),
        "rewards_shaper": REWARDS_SHAPER,
        "mixed_precision": MIXED_PRECISION,
    },
    "SAC_CFG": {
        **_OFF_POLICY,
        "polyak": {"off-policy": Setting("tau"),
                   "crossq": Setting("tau", differs="1.0: CrossQ has no target networks to move (sb3-contrib's CrossQ "
                                     "gives its SAC base tau = 1.0 too); never read")},
        "learning_rate": Setting("learning_rate", differs=KNOWN_DIFFERENCE),
        "learning_rate_scheduler": NO_SCHEDULE,
        "learning_rate_scheduler_kwargs": NO_SCHEDULE,
        "grad_norm_clip": Setting("grad_norm_clip"),
        "learn_entropy": Setting("learn_entropy"),
        "initial_entropy_value": Setting("initial_entropy_value", differs=KNOWN_DIFFERENCE),
        "target_entropy": Setting("target_entropy"),
    },
    "TD3_CFG": {
        **_OFF_POLICY,
        "polyak": Setting("tau"),
        "learning_rate": Setting("learning_rate", differs="one rate per optimiser (policy, critics), which TD3_CFG accepts; "
                                  "both skrl's 1e-3 at the defaults"),
        "learning_rate_scheduler": NO_SCHEDULE,
        "learning_rate_scheduler_kwargs": NO_SCHEDULE,
        "grad_norm_clip": Setting("grad_norm_clip"),
        "exploration_noise": {  # td3bc's offline cell is TD3's agent with nothing to collect
            "off-policy": Setting("exploration_noise", differs="a deterministic policy collects varied data only with "
                                  "exploration noise (TD3's exploration_noise parameter); skrl's None adds none"),
            "offline": Setting("exploration_noise"),
        },
        "exploration_noise_kwargs": {
            "off-policy": Setting("exploration_noise_kwargs", differs="the parameters of that noise (exploration_std)"),
            "offline": Setting("exploration_noise_kwargs"),
        },
        "exploration_scheduler": Excluded("set by the cell: a LinearSchedule from exploration_final_scale and exploration_decay_steps"),
        "policy_delay": Setting("policy_delay"),
        "smooth_regularization_noise": Setting("smooth_regularization_noise", differs="target policy smoothing is part of TD3 "
                                               "(target_policy_noise > 0); skrl's None leaves it out with a warning"),
        "smooth_regularization_noise_kwargs": Setting("smooth_regularization_noise_kwargs", differs="the parameters of that "
                                                      "noise (target_policy_noise)"),
        "smooth_regularization_clip": Setting("smooth_regularization_clip"),
    },
    "DQN_CFG": {
        **_OFF_POLICY,
        "polyak": TRAINER_TARGETS,
        "learning_rate": Setting("learning_rate"),
        "learning_rate_scheduler": Setting("learning_rate_scheduler"),
        "learning_rate_scheduler_kwargs": Setting("learning_rate_scheduler_kwargs"),
        "update_interval": CADENCE,
        "target_update_interval": TRAINER_TARGETS,
        "exploration_scheduler": Excluded("set by the cell: a LinearSchedule from epsilon_start, epsilon_end, epsilon_decay_timesteps"),
    },
    # rlplug's own configs (skrl has no IQL / CQL / BC / DT): their defaults are checked against the recipe's too
    "IQL_CFG": {
        "experiment": EXPERIMENT,
        "gradient_steps": Excluded("library default kept: one gradient step per call; the offline trainer counts updates"),
        "batch_size": Setting("batch_size"),
        "discount_factor": Setting("discount_factor"),
        "expectile": Setting("expectile"),
        "temperature": Setting("temperature"),
        "learning_rate": Setting("learning_rate"),
        "grad_norm_clip": Setting("grad_norm_clip"),
        "mixed_precision": MIXED_PRECISION,
    },
    "BC_CFG": {
        "experiment": EXPERIMENT,
        "batch_size": Setting("batch_size"),
        "learning_rate": Setting("learning_rate"),
        "grad_norm_clip": Setting("grad_norm_clip"),
        "mixed_precision": MIXED_PRECISION,
    },
    "DT_CFG": {
        "experiment": EXPERIMENT,
        "batch_size": Setting("batch_size"),
        "learning_rate": Setting("learning_rate"),
        "weight_decay": Setting("weight_decay"),
        "warmup_steps": Setting("warmup_steps"),
        "grad_norm_clip": Setting("grad_norm_clip"),
        "mixed_precision": MIXED_PRECISION,
    },
    "CQL_CFG": {
        "experiment": EXPERIMENT,
        "batch_size": Setting("batch_size"),
        "learning_rate": Setting("learning_rate"),
        "grad_norm_clip": Setting("grad_norm_clip"),
        "learn_entropy": Setting("learn_entropy"),
        "initial_entropy_value": Setting("initial_entropy_value"),
        "target_entropy": Setting("target_entropy"),
        "mixed_precision": MIXED_PRECISION,
    },
}
"""Every agent config a first-party skrl cell fills, by class name."""
# rlplug_reinforce's REINFORCE_CFG is A2C_CFG with lambda fixed at 1
TABLES["REINFORCE_CFG"] = {**TABLES["A2C_CFG"], "gae_lambda": Excluded("fixed by the cell: 1.0, Monte-Carlo returns")}
# RPO_CFG is PPO_CFG and the perturbation's half-width
TABLES["RPO_CFG"] = {**TABLES["PPO_CFG"], "alpha": Setting("alpha")}
# Online DT's agent is DT's with a temperature
TABLES["ODT_CFG"] = {**TABLES["DT_CFG"], "initial_alpha": Setting("initial_alpha"), "alpha_learning_rate": Setting("alpha_learning_rate")}
# IPPO_CFG is MAPPO_CFG (skrl's IPPO and MAPPO share their update; the critic's input differs)
TABLES["IPPO_CFG"] = TABLES["MAPPO_CFG"]
# skrl's TRPO_CFG: A2C_CFG's fields less the entropy term and mixed precision, plus the trust region's; sb3-contrib's defaults
SB3_CONTRIB = "sb3-contrib's TRPO default"
TABLES["TRPO_CFG"] = {
    **{k: v for k, v in TABLES["A2C_CFG"].items() if k not in ("entropy_loss_scale", "mixed_precision")},
    "rollouts": Setting("rollouts", differs=f"{SB3_CONTRIB} n_steps 2048; skrl's 16"),
    "learning_epochs": Setting("learning_epochs", differs=f"{SB3_CONTRIB} n_critic_updates 10; skrl's 8"),
    "mini_batches": Setting("mini_batches", differs=f"{SB3_CONTRIB} batch_size 128 (16 of a 2048-step rollout); skrl's 2"),
    "learning_rate": Setting("learning_rate"),
    "grad_norm_clip": Setting("grad_norm_clip", differs=f"{SB3_CONTRIB}: no clip; skrl's 0.5"),
    "value_loss_scale": Excluded("library default kept: 1.0, the value loss has its own optimiser"),
    "damping": Setting("damping"),
    "max_kl_divergence": Setting("max_kl_divergence"),
    "conjugate_gradient_steps": Setting("conjugate_gradient_steps", differs=f"{SB3_CONTRIB} cg_max_steps 15; skrl's 10"),
    "max_backtrack_steps": Setting("max_backtrack_steps"),
    "accept_ratio": Setting("accept_ratio", differs=f"{SB3_CONTRIB}: any improvement (0); skrl's 0.5"),
    "step_fraction": Excluded("library default kept: the line search starts from the full step"),
}
# DDPG_CFG is TD3_CFG less the policy delay and the target-policy smoothing
TABLES["DDPG_CFG"] = {k: v for k, v in TABLES["TD3_CFG"].items() if k != "policy_delay" and not k.startswith("smooth_regularization")}


def constructed(build: Any) -> dict[str, Any]:
    """The agent config of a built skrl cell, by role."""
    return {"agent config": build.trainer.agent.cfg}


def config_fields(cfg_class: type) -> dict[str, Any]:
    """``{field: default or REQUIRED}`` of an agent-config dataclass (inherited fields included)."""
    fields = {}
    for field in dataclasses.fields(cfg_class):
        if field.default is not dataclasses.MISSING:
            fields[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            fields[field.name] = field.default_factory()
        else:
            fields[field.name] = REQUIRED
    return fields


def default_settings(build: Any) -> dict[str, Any]:
    """The cell's skrl settings at the algorithm's neutral defaults (the recipe defaults compared)."""
    spec = build.algorithm
    return spec.backends[build.backend].settings(spec.defaults(), build.recipe)


def parity_problems(build: Any, tables: Mapping[str, Table] = TABLES) -> list[str]:
    """Every parity problem of a built skrl cell's agent config (``rlplug.backends.common.parity``)."""
    settings = default_settings(build)
    found = []
    for role, cfg in constructed(build).items():
        name = type(cfg).__name__
        found += problems(f"{build.algorithm.name}/skrl {role} {name}", config_fields(type(cfg)), tables.get(name), settings,
                          (build.algorithm.name, build.algorithm.kind))  # an algorithm's or its family's entry where one
        # config serves several (TD3_CFG: td3, td3bc; SAC_CFG.polyak: crossq)
    return found


def parity_report(build: Any, tables: Mapping[str, Table] = TABLES) -> dict[str, dict[str, Any]]:
    """``{config class: {"mapped", "differs", "excluded", "differences"}}`` for a built cell."""
    report = {}
    for cfg in constructed(build).values():
        table = tables.get(type(cfg).__name__, {})
        kind = (build.algorithm.name, build.algorithm.kind)
        report[type(cfg).__name__] = {**counts(config_fields(type(cfg)), table, kind), "differences": differences(table, kind)}
    return report
