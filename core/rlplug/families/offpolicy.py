"""What every off-policy algorithm shares before torch is imported: its neutral hyperparameters,
their translation into the settings both backends read, and the annealing schedules.

SAC, TD3 and DQN (and the offline algorithms later) declare ``REPLAY_PARAMS + TARGET_PARAMS`` next
to their own, so a recipe spells a replay buffer or a target update the same way for every algorithm
and backend. Nothing here imports torch: ``rlplug show`` prints these settings without it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..schema import Param, Rule

REPLAY_PARAMS = (
    Param("buffer_size", 100_000, "replay capacity in transitions (summed over environments)", bounds="[1, 10**9]",
          search=(10_000, 100_000, 1_000_000)),
    Param("batch_size", 256, "transitions per gradient step", bounds="[1, 2**20]", search=(32, 64, 128, 256, 512, 1024)),
    Param("learning_starts", 1_000, "transitions collected with uniformly random actions before the first gradient step",
          bounds="[0, 10**12]", search=(0, 1_000, 10_000, 20_000)),
    Param("utd_ratio", 1.0, "update-to-data ratio: gradient steps per collected transition", bounds="(0, 1000]"),
    Param("train_every", 1, "vector-environment steps collected between two rounds of gradient steps", bounds="[1, inf)",
          search=(1, 4, 8, 16, 64, 256)),
    Param("replay_storage", "memory", "TorchRL replay storage: 'memory' (LazyTensorStorage) or 'memmap' "
          "(LazyMemmapStorage, for buffers larger than RAM); skrl always keeps memory in RAM",
          choices=("memory", "memmap")),
    Param("log_every", 1_000, "transitions between two metric rows (one trainer iteration)", bounds="[1, inf)"),
)
"""The replay buffer and the update schedule of every off-policy cell: capacity, batch, warm-up, update-to-data ratio."""

CRITIC_PARAMS = (
    Param("batched_critics", False, "call the Q(s, a) critics as one batched ensemble (their weights stacked, one batched "
          "matmul per layer) instead of one after another: faster with small networks and many critics, no faster at "
          "256x256 (BENCHMARKS.md, critic ensembles); the same values up to float rounding. Plain MLP critics on the "
          "observation vector only; TorchRL's own TQC / REDQ losses call theirs through vmap either way"),
)
"""How a cell with an ensemble of Q(s, a) critics calls them (SAC and its derived cells, TD3, DDPG, CQL)."""


def critic_settings(hp: Mapping[str, Any]) -> dict[str, Any]:
    """``batched_critics`` under the key both backends read (false where the algorithm does not declare it)."""
    return {"batched_critics": bool(hp.get("batched_critics", False))}


REPLAY_RULES = (
    Rule(("buffer_size", "batch_size"), "buffer_size >= batch_size", lambda hp, recipe: hp["buffer_size"] >= hp["batch_size"],
         "the replay buffer holds at least one batch"),
    Rule(("learning_starts", "steps"), "learning_starts < steps", lambda hp, recipe: hp["learning_starts"] < recipe.steps,
         "the whole budget would be random warm-up and no gradient step would be taken: lower it with "
         "--set learning_starts=N or raise the budget with --steps"),
)
"""Rules between ``REPLAY_PARAMS`` and the budget: the buffer holds a batch, the warm-up ends before the budget."""

TARGET_PARAMS = (
    Param("target_update", "soft", "target-network update: 'soft' (Polyak averaging) or 'hard' (copy)",
          choices=("soft", "hard")),
    Param("tau", 0.005, "soft update rate: target <- (1 - tau) * target + tau * online", bounds="(0, 1]",
          search=(0.001, 0.005, 0.01, 0.02, 0.05, 0.08)),
    Param("target_update_period", 1, "target updates happen every this many updater steps (hard: the copy period)",
          bounds="[1, inf)"),
)
"""The target-network update: soft (Polyak, ``tau``) or hard (a copy), every ``target_update_period`` updater steps."""



def target_settings(hp: Mapping[str, Any]) -> dict[str, Any]:
    """``TARGET_PARAMS`` checked, under the keys both backends' target updaters read (the offline cells'; the
    replay family's ``replay_settings`` holds them too)."""
    if not 0.0 < hp["tau"] <= 1.0:
        raise ValueError(f"tau must be in (0, 1], got {hp['tau']}")
    if hp["target_update_period"] < 1:
        raise ValueError(f"target_update_period must be at least 1, got {hp['target_update_period']}")
    return {"target_update": hp["target_update"], "tau": float(hp["tau"]), "target_update_period": int(hp["target_update_period"])}


ESTIMATOR_PARAMS = (
    Param("value_estimator", "td0", "bootstrapped target: td0 (one step, both backends); td1 or td_lambda (TorchRL "
          "only, on sampled trajectory slices of one environment)", choices=("td0", "td1", "td_lambda")),
    Param("td_lambda", 0.95, "lambda of the td_lambda value estimator", bounds="[0, 1]"),
    Param("trajectory_slice", 8, "consecutive transitions per sampled slice with td1 / td_lambda", bounds="[1, 2**20]"),
)
"""The bootstrapped value target: TD(0) on both backends, TD(1) or TD(lambda) on TorchRL's trajectory slices."""

ESTIMATOR_RULES = (
    Rule(("value_estimator", "batch_size", "trajectory_slice"), "batch_size % trajectory_slice == 0 with td1 / td_lambda",
         lambda hp, recipe: hp["value_estimator"] == "td0" or hp["batch_size"] % hp["trajectory_slice"] == 0,
         "a batch is made of whole trajectory slices"),
    Rule(("value_estimator", "num_envs"), "num_envs == 1 with td1 / td_lambda",
         lambda hp, recipe: hp["value_estimator"] == "td0" or recipe.num_envs == 1,
         "trajectory slices are read from one environment"),
)
"""Rules for TD(1) / TD(lambda): batches of whole trajectory slices, read from one environment."""

# neutral estimator name -> the name TorchRL's ``make_value_estimator`` accepts
TORCHRL_ESTIMATORS = {"td0": "td0", "td1": "td1", "td_lambda": "tdlambda"}


def skrl_estimator_check(hp: Mapping[str, Any]) -> None:
    """skrl's off-policy agents bootstrap one step; any other estimator is refused before building."""
    if hp["value_estimator"] != "td0":
        raise ValueError(f"value_estimator '{hp['value_estimator']}' is only available on the torchrl backend")


def torchrl_estimator_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """The estimator settings TorchRL cells read; multi-step estimators need whole trajectory slices."""
    estimator = hp["value_estimator"]
    if estimator != "td0":
        if recipe.num_envs != 1:
            raise ValueError(f"value_estimator '{estimator}' needs num_envs = 1 (trajectory slices), got {recipe.num_envs}")
        if hp["trajectory_slice"] < 1 or hp["batch_size"] % hp["trajectory_slice"]:
            raise ValueError("batch_size must be a multiple of trajectory_slice (>= 1)")
    return {
        "value_estimator": TORCHRL_ESTIMATORS[estimator],
        "lmbda": float(hp["td_lambda"]),
        "trajectory_slice": int(hp["trajectory_slice"]),
    }


def replay_settings(hp: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """The replay, cadence and target-update settings, identical on both backends."""
    if hp["utd_ratio"] <= 0:
        raise ValueError(f"utd_ratio must be positive, got {hp['utd_ratio']}")
    if hp["target_update_period"] < 1 or hp["train_every"] < 1:
        raise ValueError("target_update_period and train_every must be at least 1")
    if not 0.0 < hp["tau"] <= 1.0:
        raise ValueError(f"tau must be in (0, 1], got {hp['tau']}")
    return {
        "buffer_size": int(hp["buffer_size"]),
        "batch_size": int(hp["batch_size"]),
        "learning_starts": int(hp["learning_starts"]),
        "utd_ratio": float(hp["utd_ratio"]),
        "train_every": int(hp["train_every"]),
        "replay_storage": hp["replay_storage"],
        "log_every": max(int(hp["log_every"]), recipe.num_envs),
        "target_update": hp["target_update"],
        "tau": float(hp["tau"]),
        "target_update_period": int(hp["target_update_period"]),
    }


@dataclass(frozen=True)
class LinearSchedule:
    """A value annealed linearly from ``start`` to ``end`` over ``steps`` calls' worth of progress, then held.

    Used for DQN's epsilon and the decay of TD3's exploration noise. ``schedule(t, total)`` has the
    signature skrl's ``exploration_scheduler`` expects; ``total`` is ignored (the length is ``steps``).
    A plain class rather than a closure so it pickles (skrl's ``ParallelTrainer``, checkpoints of cfgs).
    """

    start: float
    end: float
    steps: int

    def __call__(self, step: int, total: int | None = None) -> float:
        if self.steps <= 0:
            return self.end
        fraction = min(max(step, 0) / self.steps, 1.0)
        return self.start + fraction * (self.end - self.start)


def gradient_steps_due(transitions: int, learning_starts: int, utd_ratio: float, done: int) -> int:
    """Gradient steps owed after ``transitions`` were collected, given ``done`` already taken.

    Training starts once ``learning_starts`` transitions are in; from then on the count of gradient steps
    tracks ``utd_ratio`` times the transitions collected since, so a fractional ratio (0.25: one step per
    four transitions) or a vector env (8 transitions per step) keeps the same overall ratio.
    """
    if transitions <= learning_starts:
        return 0
    owed = math.floor(utd_ratio * (transitions - learning_starts) + 1e-9)
    return max(0, owed - done)
