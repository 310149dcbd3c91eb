"""What every on-policy algorithm (PPO, MAPPO, third-party actor-critics such as the A2C example)
shares before torch is imported: its neutral hyperparameters, the rules tying a rollout to its
minibatches, and the translation of the parameters into the settings both backends read. An
algorithm declares the parameter groups it uses next to its own; the translators read only the
family parameters it declares (MAPPO has no ``lr_schedule``, so its settings have no scheduler).
Nothing here imports torch: ``rlplug show`` prints these settings without it.

A rollout holds ``rollout_steps x num_envs`` transitions (per agent for MAPPO) and each epoch splits it
into ``minibatches``. When ``minibatches`` does not divide the rollout, a minibatch holds
``rollout // minibatches`` transitions: skrl leaves the remainder out of that epoch (a different random
remainder each epoch), TorchRL adds one smaller last minibatch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import UnknownNameError
from .exploration import sde_settings
from ..schema import LossSpec, Param, Rule, Search, both_backends
from ..util.suggest import did_you_mean

MAX_ROLLOUT = 2**24
"""Transitions one rollout may hold (``rollout_steps x num_envs``); they are all in memory at once."""

ROLLOUT_RULES = (
    Rule(("minibatches", "rollout_steps", "num_envs"), "minibatches <= rollout_steps x num_envs",
         lambda hp, recipe: hp["minibatches"] <= hp["rollout_steps"] * recipe.num_envs,
         "every minibatch holds at least one transition"),
    Rule(("rollout_steps", "num_envs"), f"rollout_steps x num_envs <= 2**{MAX_ROLLOUT.bit_length() - 1}",
         lambda hp, recipe: hp["rollout_steps"] * recipe.num_envs <= MAX_ROLLOUT,
         "a rollout is held in memory at once"),
)
"""Rules between the rollout's sizes: every minibatch holds at least one transition, a rollout fits in memory."""


# ---- parameters -----------------------------------------------------------------------------------

ONPOLICY_PARAMS = (
    Param("learning_rate", 3e-4, "Adam learning rate (initial value when scheduled)", bounds="(0, inf)",
          search=Search(1e-5, 2e-3, log=True)),
    Param("rollout_steps", 128, "environment steps per environment between updates", bounds="[1, 2**24]",
          search=(16, 32, 64, 128, 256, 512, 1024, 2048)),
    Param("epochs", 10, "passes over each rollout", bounds="[1, 10000]", search=(1, 5, 10, 20)),
    Param("minibatches", 4, "minibatches per epoch, at most rollout_steps x num_envs (when it does not divide the "
          "rollout, each holds rollout // minibatches transitions; see above)", bounds="[1, 2**24]",
          search=(1, 2, 4, 8, 16, 32)),
    Param("gamma", 0.99, "discount factor", bounds="[0, 1]", search=(0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999)),
    Param("gae_lambda", 0.95, "GAE lambda", bounds="[0, 1]", search=(0.8, 0.9, 0.92, 0.95, 0.98, 0.99, 1.0)),
    Param("entropy_coef", 0.0, "weight of the entropy bonus", bounds="[0, inf)", search=Search(1e-8, 0.1, log=True)),
    Param("value_coef", 0.5, "weight of the value loss (mean squared error)", bounds="[0, inf)", search=Search(0.2, 1.0)),
    Param("max_grad_norm", 0.5, "gradient-norm clip (0 disables)", bounds="[0, inf)", search=Search(0.3, 5.0)),
    Param("normalize_values", False, "standardise value targets with running statistics (the critic learns returns of any scale at once)"),
)
"""Every on-policy actor-critic: the rollout, GAE, the loss weights, the optimiser step."""

SCHEDULE_PARAMS = (
    Param("lr_schedule", "constant", "learning-rate schedule", choices=("constant", "linear", "kl_adaptive"),
          search=("constant", "linear", "kl_adaptive")),
    Param("kl_target", 0.008, "KL the kl_adaptive schedule steers towards", bounds="(0, inf)"),
    Param("kl_early_stop", 0.0, "stop an epoch's minibatch loop when the approximate KL exceeds this (0 disables)",
          bounds="[0, inf)"),
)
"""Learning-rate schedules and KL early stopping (the loss must report an approximate KL)."""

CLIP_SCHEDULES = ("constant", "linear")

CLIP_PARAMS = (
    Param("clip_ratio", 0.2, "PPO probability-ratio clip (below 1: the ratio's lower bound 1 - clip stays positive; "
          "the initial value when scheduled)", bounds="[0, 1)", search=(0.1, 0.2, 0.3, 0.4)),
    Param("clip_schedule", "constant", "clip-ratio schedule: 'linear' anneals it to 0 over the step budget as SB3's "
          "lin_ schedule does (an update clips at clip_ratio x (1 - env steps so far, its own rollout included / steps))",
          choices=CLIP_SCHEDULES),
    Param("value_clip", 0.0, "clip of the value change per update (0 disables)", bounds="[0, inf)"),
)
"""PPO's clipped objective (PPO, MAPPO)."""


@dataclasses.dataclass(frozen=True)
class ClipSchedule:
    """The probability-ratio clip each update uses, a function of the env steps done (so a resumed run, whose
    counters come back, clips as an uninterrupted one).

    ``linear`` is SB3's ``lin_X``: SB3 evaluates ``clip_range(progress_remaining)`` once at the start of each
    ``train()``, after ``collect_rollouts``, with ``progress_remaining = 1 - num_timesteps / total_timesteps``
    (``num_timesteps`` counting the rollout just collected; ``OnPolicyAlgorithm.learn``). Here ``total_steps``
    is the recipe's step budget (per rank, as every budget); a run past it (one rollout larger than the budget)
    clips at 0, not below.
    """

    clip: float
    kind: str = "constant"
    total_steps: int = 1

    @classmethod
    def of(cls, settings: Mapping[str, Any], clip_key: str, total_steps: int) -> ClipSchedule | None:
        """The schedule of a cell's settings (``clip_key``: the backend's name of the clip), or ``None`` for a cell
        without ``clip_schedule``; an unknown kind (a raw per-backend override) is refused in one line."""
        if "clip_schedule" not in settings:
            return None
        kind = settings["clip_schedule"]
        if kind not in CLIP_SCHEDULES:
            raise UnknownNameError(f"unknown clip_schedule '{kind}': expected one of {', '.join(CLIP_SCHEDULES)}"
                                   + did_you_mean(str(kind), CLIP_SCHEDULES))  # fmt: skip
        return cls(float(settings[clip_key]), kind, max(1, int(total_steps)))

    def at(self, steps_done: int) -> float:
        """The clip of the update that starts after ``steps_done`` env steps (its rollout included)."""
        if self.kind == "constant":
            return self.clip
        return self.clip * max(0.0, 1.0 - steps_done / self.total_steps)


ROLLOUT_OPTIMIZERS = ("adam", "rmsprop")

OPTIMIZER_CHOICE_PARAMS = (
    Param("optimizer", "adam", "the optimiser: 'adam' (skrl's and TorchRL's) or 'rmsprop' (SB3's A2C, use_rms_prop)",
          choices=ROLLOUT_OPTIMIZERS, search=ROLLOUT_OPTIMIZERS),
    Param("rmsprop_alpha", 0.99, "RMSprop's smoothing constant (optimizer = 'rmsprop'; SB3's A2C: 0.99)", bounds="(0, 1)"),
    Param("rmsprop_eps", 1e-5, "RMSprop's epsilon (optimizer = 'rmsprop'; SB3's A2C rms_prop_eps: 1e-5)", bounds="(0, inf)"),
)
"""Adam or RMSprop (A2C, REINFORCE); both backends build it with ``rlplug.backends.common.rollout_optimizer``."""

GYMNASIUM_PARAMS = (
    Param("normalize_observations", False, "standardise observations with running statistics"),
    Param("bootstrap_truncated", True, "bootstrap from the value of the true last state when an episode is cut by a time limit (false: treat the cut as a termination)"),
)
"""Single-agent Gymnasium cells: observation statistics and time-limit truncation."""

NETWORK_PARAMS = (
    Param("hidden_sizes", [64, 64], "hidden layer widths of policy and value networks", item_type=int,
          item_bounds="[1, 8192]", length="[0, 16]", search=([64], [64, 64], [256, 256])),
    Param("activation", "tanh", "hidden activation", choices=("tanh", "relu", "elu"), search=("tanh", "relu")),
    Param("initial_log_std", 0.0, "initial log standard deviation of the Gaussian policy (continuous actions; skrl clamps "
          "log std to [-20, 2])", bounds="[-20, 2]"),
)
"""The policy and value MLPs."""

RECURRENT_PARAMS = (
    Param("recurrent", "", "recurrent core after the observation encoder, shared by policy and value inputs: 'lstm', "
          "'gru', or '' (feed-forward)", choices=("", "lstm", "gru")),
    Param("recurrent_hidden_size", 64, "hidden state width of the recurrent core", bounds="[1, 4096]",
          search=(32, 64, 128, 256)),
    Param("recurrent_layers", 1, "stacked recurrent layers", bounds="[1, 8]"),
    Param("sequence_length", 16, "training sequence length: the update replays each env's rollout in sequences of this "
          "many steps from the hidden state stored at the sequence's first step (hidden states reset inside a "
          "sequence where an episode ended)", bounds="[1, 2**16]", search=(8, 16, 32, 64, 128)),
)
"""Recurrent policies (PPO): an LSTM or GRU between the encoder and the MLP heads; ignored unless ``recurrent``."""

RECURRENT_RULES = (
    Rule(("sequence_length", "rollout_steps"), "rollout_steps % sequence_length == 0 with recurrent",
         lambda hp, recipe: not hp.get("recurrent") or hp["rollout_steps"] % hp["sequence_length"] == 0,
         "each env's rollout is cut into whole training sequences"),
    Rule(("minibatches", "rollout_steps", "sequence_length", "num_envs"),
         "minibatches <= rollout_steps / sequence_length x num_envs with recurrent",
         lambda hp, recipe: not hp.get("recurrent") or hp["minibatches"] <= hp["rollout_steps"] // hp["sequence_length"] * recipe.num_envs,
         "a recurrent minibatch holds whole sequences, at least one"),
)
"""What a recurrent update needs of its rollout: whole sequences, at least one per minibatch."""

SDE_RULES = (
    Rule(("use_sde", "recurrent"), "not (use_sde and recurrent)", lambda hp, recipe: not (hp["use_sde"] and hp.get("recurrent")),
         "gSDE's noise reads a feed-forward policy's last hidden features: set use_sde = false or recurrent = ''"),
)
"""gSDE is for feed-forward Gaussian policies (Box actions are checked when the cell is built)."""


def clipped_family(
    package: str, skrl_settings: Callable[..., dict[str, Any]], torchrl_settings: Callable[..., dict[str, Any]], *,
    loss: str, skrl_doc: str, torchrl_doc: str, describe: str = "", rules: tuple[Rule, ...] = (),
    action_masks: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """The ``AlgorithmSpec`` fields a PPO-family algorithm shares, for ``AlgorithmSpec(..., **clipped_family(...))``.

    Both backends (``<package>.skrl_backend`` and ``.torchrl_backend``, discrete and continuous actions,
    data-parallel), the rollout rules, and the clipped loss ``loss`` as the default. Its factories are
    ``<package>.<backend>_backend:make_<loss>_loss``; on skrl its terms are ``clipped_ppo_terms``'
    (``approx_kl`` reported: it drives KL early stopping and the KL-adaptive schedule), on TorchRL
    ``ClipPPOLoss``'s (``kl_approx``, ``clip_fraction``, ``entropy`` reported). ``describe`` is the
    TorchRL loss's optional ``module:function``. ``action_masks``: the backends honour env action masks
    (single-agent PPO's categorical policy does; ``rlplug.envs.masks``).
    """
    skrl_terms, torchrl_terms = ("loss_policy", "loss_value", "loss_entropy"), ("loss_objective", "loss_critic", "loss_entropy")
    return {
        "backends": both_backends(package, ("discrete", "continuous"), skrl_settings, torchrl_settings, distributed=True,
                                  action_masks=action_masks),
        "rules": (*ROLLOUT_RULES, *rules),
        "default_loss": loss,
        "losses": (
            LossSpec(loss, "skrl", f"{package}.skrl_backend:make_{loss}_loss", skrl_terms, ("approx_kl",), skrl_doc),
            LossSpec(loss, "torchrl", f"{package}.torchrl_backend:make_{loss}_loss", torchrl_terms,
                     ("kl_approx", "clip_fraction", "entropy"), torchrl_doc, describe=describe),
        ),
    }


def adjusted(params: tuple[Param, ...], *, drop: tuple[str, ...] = (), **defaults: Any) -> tuple[Param, ...]:
    """``params`` without those named in ``drop`` and with other defaults (``entropy_coef=0.01``)."""
    unknown = (set(drop) | defaults.keys()) - {p.name for p in params}
    if unknown:
        raise KeyError(f"not in this parameter group: {', '.join(sorted(unknown))}")
    return tuple(
        dataclasses.replace(p, default=defaults[p.name]) if p.name in defaults else p for p in params if p.name not in drop
    )


# ---- settings -------------------------------------------------------------------------------------


def _updates(hp: Mapping[str, Any], recipe: Any) -> int:
    """Number of rollouts (= updates) the recipe's step budget gives."""
    per_update = hp["rollout_steps"] * recipe.num_envs
    return max(1, -(-recipe.steps // per_update))


def network_settings(hp: Mapping[str, Any]) -> dict[str, Any]:
    """The model settings, named alike on both backends."""
    settings = {"hidden_sizes": list(hp["hidden_sizes"]), "activation": hp["activation"], "initial_log_std": hp["initial_log_std"]}
    if hp.get("recurrent"):
        settings.update({name: hp[name] for name in ("recurrent", "recurrent_hidden_size", "recurrent_layers", "sequence_length")})
    if "use_sde" in hp:
        settings.update(sde_settings(hp))
    return settings


def optimizer_choice_settings(hp: Mapping[str, Any]) -> dict[str, Any]:
    """``optimizer`` (and RMSprop's constants with it), named alike on both backends, where the algorithm declares it."""
    if "optimizer" not in hp:
        return {}
    if hp["optimizer"] == "rmsprop":
        return {"optimizer": "rmsprop", "rmsprop_alpha": hp["rmsprop_alpha"], "rmsprop_eps": hp["rmsprop_eps"]}
    return {"optimizer": hp["optimizer"]}


def skrl_onpolicy_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """skrl agent-config fields (``PPO_CFG``, ``A2C_CFG``, ``MAPPO_CFG``) for the family parameters ``hp`` has.

    Class names stay strings (the backend maps them to classes); the model settings are added.
    ``learning_epochs`` is left out without ``epochs`` (skrl's A2C makes one pass), the clip fields
    without ``clip_ratio`` / ``clip_schedule``, the scheduler without ``lr_schedule``, ``kl_threshold`` without
    ``kl_early_stop``, the observation preprocessor and ``time_limit_bootstrap`` without
    ``normalize_observations`` / ``bootstrap_truncated``.
    """
    settings: dict[str, Any] = {"rollouts": hp["rollout_steps"]}
    if "epochs" in hp:
        settings["learning_epochs"] = hp["epochs"]
    settings.update(
        mini_batches=hp["minibatches"],
        discount_factor=hp["gamma"],
        gae_lambda=hp["gae_lambda"],
        learning_rate=hp["learning_rate"],
    )
    if "lr_schedule" in hp:
        schedule, schedule_kwargs = None, {}
        if hp["lr_schedule"] == "kl_adaptive":
            schedule, schedule_kwargs = "KLAdaptiveLR", {"kl_threshold": hp["kl_target"]}
        elif hp["lr_schedule"] == "linear":
            # skrl steps on-policy schedulers once per epoch
            total_iters = _updates(hp, recipe) * hp.get("epochs", 1)
            schedule, schedule_kwargs = "LinearLR", {"start_factor": 1.0, "end_factor": 0.0, "total_iters": total_iters}
        settings.update(learning_rate_scheduler=schedule, learning_rate_scheduler_kwargs=schedule_kwargs)
    if "normalize_observations" in hp:
        settings["observation_preprocessor"] = "RunningStandardScaler" if hp["normalize_observations"] else None
    settings.update(
        value_preprocessor="RunningStandardScaler" if hp["normalize_values"] else None,
        grad_norm_clip=hp["max_grad_norm"],
    )
    if "clip_ratio" in hp:
        settings.update(ratio_clip=hp["clip_ratio"], value_clip=hp["value_clip"])
    if "clip_schedule" in hp:  # rlplug's trainer sets the loss's ratio_clip before each update (ClipSchedule)
        settings["clip_schedule"] = hp["clip_schedule"]
    settings.update(entropy_loss_scale=hp["entropy_coef"], value_loss_scale=hp["value_coef"])
    if "kl_early_stop" in hp:
        settings["kl_threshold"] = hp["kl_early_stop"]
    if "bootstrap_truncated" in hp:
        settings["time_limit_bootstrap"] = hp["bootstrap_truncated"]
    return {**settings, **optimizer_choice_settings(hp), **network_settings(hp)}


def torchrl_onpolicy_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """TorchRL rollout-loop, collector and common loss settings for the family parameters ``hp`` has.

    The loss's common arguments are ``entropy_coeff``, ``critic_coeff`` and, with ``clip_ratio``, the
    clip ones; the model settings are added. Without ``epochs``, one pass per rollout.
    """
    frames_per_batch = hp["rollout_steps"] * recipe.num_envs
    epochs = hp.get("epochs", 1)
    settings: dict[str, Any] = {
        # rlplug: false steps the gymnasium vector env on the lean path; true collects through TorchRL's Collector
        "collector": False,
        "frames_per_batch": frames_per_batch,
        "num_epochs": epochs,
        "minibatch_size": max(1, frames_per_batch // hp["minibatches"]),
        "gamma": hp["gamma"],
        "lmbda": hp["gae_lambda"],
    }
    if "clip_ratio" in hp:
        settings.update(clip_epsilon=hp["clip_ratio"], clip_value=hp["value_clip"] or None)
    if "clip_schedule" in hp:  # rlplug's loop sets the loss's clip_epsilon buffer before each update (ClipSchedule)
        settings["clip_schedule"] = hp["clip_schedule"]
    settings.update(entropy_coeff=hp["entropy_coef"], critic_coeff=hp["value_coef"], loss_critic_type="l2", lr=hp["learning_rate"])
    if "lr_schedule" in hp:
        settings.update(lr_schedule=hp["lr_schedule"], kl_target=hp["kl_target"], total_updates=_updates(hp, recipe) * epochs)
    settings["max_grad_norm"] = hp["max_grad_norm"]
    for name in ("kl_early_stop", "normalize_observations", "normalize_values", "bootstrap_truncated"):
        if name in hp:
            settings[name] = hp[name]
    return {**settings, **optimizer_choice_settings(hp), **network_settings(hp)}
