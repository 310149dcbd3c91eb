"""Decision Transformer's parts as both backends use them: the transformer, the dataset cut into return-conditioned
segments, and acting from a growing context while an episode's target return counts down.

``DecisionTransformer`` is a GPT-style causal transformer (Chen et al., 2021) written on ``torch.nn``: each step of a
segment is three tokens, return-to-go, observation and action, each embedded and given its step's timestep
embedding; the action is predicted from the observation token, which attends to the segment's earlier tokens only.
TorchRL's own ``DecisionTransformer`` wraps Hugging Face's GPT-2 (the ``transformers`` package, not an rlplug
dependency), so both cells use this one. Segments lie inside one episode (no padding), so the first step of an
episode is trained exactly as evaluation meets it, and a segment starting mid-episode as a full context does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from ...contract.hookspecs import Build
from ...data.datasets import DatasetError
from ...errors import ExportUnsupportedError, SpaceError
from .offline import dataset_transitions

SEGMENT_KEYS = ("observation", "action", "return_to_go", "timestep")
"""What a segment holds, each ``[batch, context, ...]``: the transformer's inputs, in its argument order."""


class DecisionTransformer(nn.Module):
    """``forward(observation [B, K, O], action [B, K, A], return_to_go [B, K, 1], timestep [B, K]) -> action [B, K, A]``.

    Actions enter scaled to [-1, 1] and leave as ``centre + half * tanh(.)``: inside the action space's bounds.
    ``timestep`` is clamped to ``max_timestep - 1``.
    """

    def __init__(self, observation_size: int, low: Any, high: Any, *, embedding_dim: int, layers: int, heads: int, dropout: float,
                 max_timestep: int) -> None:  # fmt: skip
        super().__init__()
        low, high = (torch.as_tensor(np.asarray(b, np.float32)).reshape(-1) for b in (low, high))
        self.register_buffer("centre", (high + low) / 2)
        self.register_buffer("half_range", (high - low) / 2)
        self.max_timestep = int(max_timestep)
        action_size = len(low)
        self.embed_return = nn.Linear(1, embedding_dim)
        self.embed_observation = nn.Linear(observation_size, embedding_dim)
        self.embed_action = nn.Linear(action_size, embedding_dim)
        self.embed_timestep = nn.Embedding(self.max_timestep, embedding_dim)
        self.embed_norm = nn.LayerNorm(embedding_dim)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(embedding_dim, heads, 4 * embedding_dim, dropout, activation="gelu", batch_first=True,
                                           norm_first=True)  # fmt: skip
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(embedding_dim, action_size)

    def forward(self, observation: torch.Tensor, action: torch.Tensor, return_to_go: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
        batch, steps = observation.shape[:2]
        time = self.embed_timestep(timestep.long().clamp(0, self.max_timestep - 1))
        tokens = torch.stack([self.embed_return(return_to_go) + time, self.embed_observation(observation.flatten(2).float()) + time,
                              self.embed_action((action - self.centre) / self.half_range) + time], dim=2)  # fmt: skip
        tokens = self.dropout(self.embed_norm(tokens.reshape(batch, 3 * steps, -1)))  # (R_1, s_1, a_1, R_2, ...)
        causal = nn.Transformer.generate_square_subsequent_mask(3 * steps, device=tokens.device, dtype=tokens.dtype)
        hidden = self.blocks(tokens, mask=causal, is_causal=True).reshape(batch, steps, 3, -1)
        return self.centre + self.half_range * torch.tanh(self.head(hidden[:, :, 1]))  # from each observation token


def make_decision_transformer(build: Build) -> DecisionTransformer:
    """The recipe's transformer (``embedding_dim``, ``n_layers``, ``n_heads``, ``dropout``, ``max_episode_steps``) over
    the build's spaces; Box actions only (the algorithm declares no other)."""
    s = build.settings
    if not isinstance(build.observation_space, gym.spaces.Box):
        raise SpaceError(f"the Decision Transformer reads flat observation vectors (a Box space), not {build.observation_space}")
    return DecisionTransformer(int(np.prod(build.observation_space.shape)), build.action_space.low, build.action_space.high,
                               embedding_dim=s["embedding_dim"], layers=s["n_layers"], heads=s["n_heads"], dropout=s["dropout"],
                               max_timestep=s["max_episode_steps"]).to(build.device)  # fmt: skip


class TrajectorySegments:
    """The dataset's episodes as segments of ``context`` consecutive steps of one episode, with returns-to-go.

    A step's return-to-go is the sum of its episode's rewards from that step on (episodes end at ``terminated`` or
    ``truncated``), divided by ``return_scale``; its timestep is its index in the episode. ``sample(n)`` draws segment
    starts uniformly, with replacement, from a generator of its own (``state_dict`` carries it).
    ``best_return``: the dataset's best episode return (the default target return).
    """

    def __init__(self, data: Mapping[str, torch.Tensor], context: int, return_scale: float, seed: int, device: Any = "cpu") -> None:
        ends = (data["terminated"] | data["truncated"]).reshape(-1).cpu().numpy()
        rewards = data["reward"].reshape(-1).double().cpu().numpy()
        count = len(rewards)
        last = np.flatnonzero(ends)
        if len(last) == 0 or last[-1] != count - 1:
            last = np.append(last, count - 1)
        first = np.concatenate([[0], last[:-1] + 1])
        timestep, to_go, starts, returns = np.zeros(count, np.int64), np.zeros(count), [], []
        for a, b in zip(first, last):
            timestep[a : b + 1] = np.arange(b + 1 - a)
            to_go[a : b + 1] = np.cumsum(rewards[a : b + 1][::-1])[::-1]
            returns.append(to_go[a])
            starts.extend(range(a, b + 2 - context))  # empty for an episode shorter than the context
        if not starts:
            raise DatasetError(f"context_length {context} is longer than every episode of the dataset (the longest has "
                               f"{int((last - first).max()) + 1} steps): lower context_length")  # fmt: skip
        self.context, self.best_return = int(context), float(max(returns))
        self.starts = torch.as_tensor(starts, dtype=torch.int64)
        self.columns = dict(zip(SEGMENT_KEYS, (
            data["observation"].reshape(count, -1).float().to(device),
            data["action"].reshape(count, -1).float().to(device),
            torch.as_tensor(to_go / return_scale, dtype=torch.float32, device=device).reshape(count, 1),
            torch.as_tensor(timestep, device=device),
        )))  # fmt: skip
        self.generator = torch.Generator().manual_seed(seed)

    def sample(self, batch_size: int) -> dict[str, torch.Tensor]:
        """``batch_size`` segments: each key ``[batch_size, context, ...]`` (``SEGMENT_KEYS``)."""
        starts = self.starts[torch.randint(len(self.starts), (batch_size,), generator=self.generator)]
        rows = (starts[:, None] + torch.arange(self.context)).to(self.columns["timestep"].device)
        return {key: column[rows] for key, column in self.columns.items()}

    def state_dict(self) -> dict[str, Any]:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.generator.set_state(state["generator"])


def trajectory_segments(build: Build) -> TrajectorySegments:
    """The recipe's dataset as ``TrajectorySegments`` (``context_length``, ``return_scale``), seeded from the run's seed."""
    s = build.settings
    _, data = dataset_transitions(build)
    try:
        return TrajectorySegments(data, s["context_length"], s["return_scale"], build.seed, build.device)
    except DatasetError as err:
        raise DatasetError(f"recipe '{build.recipe.name}': {err}") from None


def linear_warmup(optimizer: torch.optim.Optimizer, steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """DT's learning-rate warm-up: the rate rises linearly over ``steps`` gradient updates, then stays (stepped after each)."""
    steps = max(1, steps)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / steps))


def target_return(build: Build, segments: TrajectorySegments) -> float:
    """The return evaluation conditions on: ``target_return`` (``target_from = "value"``), else the dataset's best."""
    s = build.settings
    return float(s["target_return"]) if s["target_from"] == "value" else segments.best_return


class ContextActing:
    """Acting from each row's episode so far: the last ``context`` steps of (return-to-go, observation, action,
    timestep), the model's action at the newest step. A row starts at ``target`` return-to-go, which ``observe``
    lowers by each reward (without rewards it stays where it is); ``reset`` (and a change of batch size) starts new
    episodes. The model acts in eval mode (no dropout) and is put back as it was."""

    def __init__(self, model: nn.Module, context: int, target: float, return_scale: float) -> None:
        self.model, self.context, self.target, self.return_scale = model, int(context), float(target), float(return_scale)
        self.history: dict[str, torch.Tensor] = {}
        self.step = 0

    def reset(self) -> None:
        self.history, self.step = {}, 0

    @torch.no_grad()
    def act(self, observations: torch.Tensor) -> torch.Tensor:
        rows, centre = len(observations), self.model.centre
        if not self.history or len(self.history["observation"]) != rows:
            self.reset()
            self.next_return = centre.new_full((rows, 1, 1), self.target / self.return_scale)
        newest = {"observation": observations.reshape(rows, 1, -1).float(), "action": centre.expand(rows, 1, -1),  # not read: causal
                  "return_to_go": self.next_return, "timestep": torch.full((rows, 1), self.step, device=centre.device)}  # fmt: skip
        h = self.history = {key: torch.cat([self.history[key], value], 1)[:, -self.context :] if self.history else value
                            for key, value in newest.items()}  # fmt: skip
        training = self.model.training
        self.model.eval()
        try:
            action = self.model(h["observation"], h["action"], h["return_to_go"], h["timestep"])[:, -1]
        finally:
            self.model.train(training)
        h["action"] = torch.cat([h["action"][:, :-1], action[:, None]], 1)
        self.step += 1
        return action

    def observe(self, rewards: Any) -> None:
        """The rewards of the last actions: each row's next return-to-go is its last one less its reward."""
        if self.history:
            reward = torch.as_tensor(np.asarray(rewards, np.float32), device=self.next_return.device).reshape(-1, 1, 1)
            self.next_return = self.next_return - reward / self.return_scale


class ReturnConditionedActing:
    """A Decision Transformer trainer's acting, on either backend (mixed in before the offline trainer base): the
    cell sets ``acting`` (``make_acting``); evaluation resets it before each episode and hands it each reward."""

    acting: ContextActing
    build: Build

    def make_acting(self, model: nn.Module, segments: TrajectorySegments) -> ContextActing:
        """``ContextActing`` of ``model`` with the recipe's ``context_length``, ``return_scale`` and target return."""
        s = self.build.settings
        return ContextActing(model, s["context_length"], target_return(self.build, segments), s["return_scale"])

    def act_deterministic(self, observations: Any) -> np.ndarray:
        x = torch.as_tensor(np.asarray(observations, np.float32), device=self.build.device)
        return self.acting.act(x).cpu().numpy()

    def evaluation_act(self) -> Any:
        return self.act_deterministic

    def reset_acting_state(self) -> None:
        self.acting.reset()

    def observe_rewards(self, rewards: np.ndarray) -> None:
        self.acting.observe(rewards)

    def export_policy(self) -> nn.Module:
        raise ExportUnsupportedError(f"{self.build.algorithm.name} acts on its episode's history of returns-to-go, observations "
                                     "and actions; rlplug exports policies of the current observation (and a recurrent state) "
                                     "only: evaluate it with `rlplug eval`")  # fmt: skip
