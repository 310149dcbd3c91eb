"""With ``normalize_reward = true`` the agent learns from normalised rewards, but the training return rlplug reports
(``train/episode_return``) is the env's own: on CartPole, where every step pays 1, each ended episode's return is
its length, an integer (a sum of normalised rewards would not be one). Every single-agent collection path: skrl's
on-policy (feed-forward and recurrent) and off-policy loops, TorchRL's lean paths (feed-forward and recurrent) and its
Collector (asked for), sync and async vector envs."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import rlplug  # noqa: E402
from rlplug.contract.trainer import EpisodeTracker  # noqa: E402

PPO = ["num_envs=3", "rollout_steps=16", "minibatches=2", "epochs=1", "hidden_sizes=[16]"]
DQN = ["num_envs=3", "learning_starts=60", "train_every=4", "hidden_sizes=[16]", "log_every=120"]
LSTM = [*PPO, "recurrent_hidden_size=8", "sequence_length=8"]

CASES = {
    "ppo-skrl": ("ppo-cartpole", "skrl", PPO),
    "ppo-skrl-async": ("ppo-cartpole", "skrl", [*PPO, "vector_mode=async"]),
    "ppo-lstm-skrl": ("ppo-lstm-cartpole-novel", "skrl", LSTM),
    "dqn-skrl": ("dqn-cartpole", "skrl", DQN),
    "ppo-torchrl": ("ppo-cartpole", "torchrl", PPO),
    "ppo-torchrl-collector-async": ("ppo-cartpole", "torchrl", [*PPO, "torchrl.collector=true", "vector_mode=async"]),
    "ppo-lstm-torchrl": ("ppo-lstm-cartpole-novel", "torchrl", LSTM),  # the lean path, carrying hidden states
    "dqn-torchrl": ("dqn-cartpole", "torchrl", DQN),
    "dqn-torchrl-collector": ("dqn-cartpole", "torchrl", [*DQN, "torchrl.collector=true"]),
}


class LengthsAndReturns(EpisodeTracker):
    """The tracker, also keeping every ended episode's length and reported return."""

    def __init__(self, num_envs: int) -> None:
        super().__init__(num_envs)
        self.ended_lengths: list[int] = []
        self.reported: list[float] = []

    def update(self, rewards, dones, returns=None) -> None:
        dones = np.asarray(dones, dtype=bool).reshape(-1)
        self.ended_lengths.extend((self.lengths[dones] + 1).tolist())
        super().update(rewards, dones, returns)

    def pop_mean(self):
        self.reported.extend(self.finished)
        return super().pop_mean()


@pytest.mark.parametrize("case", CASES)
def test_training_returns_are_the_envs_own_under_normalize_reward(case):
    recipe, backend, overrides = CASES[case]
    build = rlplug.build(recipe, backend=backend, overrides=["normalize_reward=true", "time_limit=60", *overrides])
    trainer = build.trainer
    tracker = trainer.episodes = LengthsAndReturns(build.num_envs)
    rows = []
    try:
        trainer.train(480, [lambda _, metrics: rows.append(metrics)])
    finally:
        trainer.close()
    reported = [row["train/episode_return"] for row in rows if "train/episode_return" in row]
    assert len(tracker.reported) >= 10 and reported  # episodes ended by failing and (some) by the 60-step limit
    assert tracker.reported == [float(n) for n in tracker.ended_lengths[: len(tracker.reported)]]
    assert max(tracker.reported) <= 60
    # the agent's rewards were normalised all along: their per-episode sums are not the returns reported
    assert not np.allclose(tracker.running[tracker.lengths > 1], tracker.lengths[tracker.lengths > 1])
