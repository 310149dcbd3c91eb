"""Translate DT's neutral hyperparameters into each backend's own settings (no torch imports); the same names on both."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlplug.families import offline_settings, optimizer_settings

MODEL = ("context_length", "embedding_dim", "n_layers", "n_heads", "dropout", "max_episode_steps", "return_scale")
TRAINING = ("learning_rate", "weight_decay", "warmup_steps", "grad_norm_clip", "target_from", "target_return")
ONLINE = ("initial_alpha", "alpha_learning_rate", "target_entropy", "online_after", "online_round_updates", "online_buffer_episodes",
          "online_target_offset")


def _settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    if hp["embedding_dim"] % hp["n_heads"]:
        raise ValueError(f"embedding_dim {hp['embedding_dim']} is not a multiple of n_heads {hp['n_heads']}")
    return {**optimizer_settings(hp), **offline_settings({**hp, "action_margin": 0.0}, recipe), **{name: hp[name] for name in MODEL + TRAINING},
            "loss_function": hp["loss_function"]}


def skrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """The transformer's shape, AdamW's, the segments' and the offline loop's settings."""
    return _settings(hp, recipe)


def torchrl_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """``DTLoss``'s ``loss_function``, the transformer's shape, AdamW's and the offline loop's settings."""
    return _settings(hp, recipe)


def odt_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Online DT's, the same names on both backends: DT's without ``loss_function``, the temperature's, the online
    phase's, and the dataset's ``action_margin`` (the log-likelihood of an action on the bound is not finite)."""
    if hp["embedding_dim"] % hp["n_heads"]:
        raise ValueError(f"embedding_dim {hp['embedding_dim']} is not a multiple of n_heads {hp['n_heads']}")
    return {**optimizer_settings(hp), **offline_settings(hp, recipe), **{name: hp[name] for name in MODEL + TRAINING + ONLINE},
            "stochastic": True}
