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

import math
from collections.abc import Callable, Mapping
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


LOG_STD_BOUNDS = (-5.0, 2.0)
"""The stochastic head's log standard deviation lies in these bounds (Online DT's, through a tanh)."""


class DecisionTransformer(nn.Module):
    """``forward(observation [B, K, O], action [B, K, A], return_to_go [B, K, 1], timestep [B, K]) -> action [B, K, A]``.

    Actions enter scaled to [-1, 1] and leave as ``centre + half * tanh(.)``: inside the action space's bounds.
    ``timestep`` is clamped to ``max_timestep - 1``. ``stochastic`` (Online DT) gives the head a log standard
    deviation too: ``distribution(...)`` returns the pre-squash Gaussian's ``(loc, scale)``, and ``forward`` its
    squashed mean, the action ODT evaluates with.
    """

    def __init__(self, observation_size: int, low: Any, high: Any, *, embedding_dim: int, layers: int, heads: int, dropout: float,
                 max_timestep: int, stochastic: bool = False) -> None:  # fmt: skip
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
        self.stochastic = bool(stochastic)
        self.head = nn.Linear(embedding_dim, 2 * action_size if stochastic else action_size)

    def forward(self, observation: torch.Tensor, action: torch.Tensor, return_to_go: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
        out = self.head(self.observation_tokens(observation, action, return_to_go, timestep))
        if self.stochastic:
            out = out[..., : out.shape[-1] // 2]
        return self.squash(out)

    def squash(self, u: torch.Tensor) -> torch.Tensor:
        """The action inside the bounds: ``centre + half_range * tanh(u)``."""
        return self.centre + self.half_range * torch.tanh(u)

    def distribution(self, observation: torch.Tensor, action: torch.Tensor, return_to_go: torch.Tensor,
                     timestep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """The stochastic head's pre-squash Gaussian at every step: ``(loc, scale)``, each ``[B, K, A]``."""
        loc, raw = self.head(self.observation_tokens(observation, action, return_to_go, timestep)).chunk(2, -1)
        low, high = LOG_STD_BOUNDS
        return loc, (low + 0.5 * (high - low) * (torch.tanh(raw) + 1)).exp()

    def observation_tokens(self, observation: torch.Tensor, action: torch.Tensor, return_to_go: torch.Tensor,
                           timestep: torch.Tensor) -> torch.Tensor:  # fmt: skip
        """The transformer's output at each step's observation token, ``[B, K, embedding_dim]``."""
        batch, steps = observation.shape[:2]
        time = self.embed_timestep(timestep.long().clamp(0, self.max_timestep - 1))
        tokens = torch.stack([self.embed_return(return_to_go) + time, self.embed_observation(observation.flatten(2).float()) + time,
                              self.embed_action((action - self.centre) / self.half_range) + time], dim=2)  # fmt: skip
        tokens = self.dropout(self.embed_norm(tokens.reshape(batch, 3 * steps, -1)))  # (R_1, s_1, a_1, R_2, ...)
        causal = nn.Transformer.generate_square_subsequent_mask(3 * steps, device=tokens.device, dtype=tokens.dtype)
        hidden = self.blocks(tokens, mask=causal, is_causal=True).reshape(batch, steps, 3, -1)
        return hidden[:, :, 1]  # the action is predicted from each observation token


class SquashedGaussian:
    """``centre + half_range * tanh(u)``, ``u ~ N(loc, scale)``, over the last dimension: TorchRL's ``TanhNormal`` with
    ``low`` and ``high``. ``log_prob`` of a given action inverts the squash (clamped just inside the bounds, as
    TorchRL's safe tanh); ``rsample_and_log_prob`` scores its own sample from ``u``, so a saturated tanh stays finite."""

    EPS = 1e-6

    def __init__(self, loc: torch.Tensor, scale: torch.Tensor, centre: torch.Tensor, half_range: torch.Tensor) -> None:
        self.base = torch.distributions.Normal(loc, scale)
        self.centre, self.half_range = centre, half_range

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        squashed = ((action - self.centre) / self.half_range).clamp(-1 + self.EPS, 1 - self.EPS)
        return self._log_prob(torch.atanh(squashed))

    def rsample_and_log_prob(self) -> tuple[torch.Tensor, torch.Tensor]:
        u = self.base.rsample()
        return self.centre + self.half_range * torch.tanh(u), self._log_prob(u)

    def _log_prob(self, u: torch.Tensor) -> torch.Tensor:
        # skrl's tanh_log_det with the operands the other way round, kept: the order decides the order in which
        # autograd sums u's gradients, and calling tanh_log_det changed odt's trained weights in the last bits
        # log |d action / d u| = log half_range + log(1 - tanh(u)^2), the latter as 2 (log 2 - u - softplus(-2u))
        jacobian = torch.log(self.half_range) + 2 * (math.log(2.0) - u - torch.nn.functional.softplus(-2 * u))
        return (self.base.log_prob(u) - jacobian).sum(-1)


def make_decision_transformer(build: Build) -> DecisionTransformer:
    """The recipe's transformer (``embedding_dim``, ``n_layers``, ``n_heads``, ``dropout``, ``max_episode_steps``) over
    the build's spaces; Box actions only (the algorithm declares no other)."""
    s = build.settings
    if not isinstance(build.observation_space, gym.spaces.Box):
        raise SpaceError(f"the Decision Transformer reads flat observation vectors (a Box space), not {build.observation_space}")
    return DecisionTransformer(int(np.prod(build.observation_space.shape)), build.action_space.low, build.action_space.high,
                               embedding_dim=s["embedding_dim"], layers=s["n_layers"], heads=s["n_heads"], dropout=s["dropout"],
                               max_timestep=s["max_episode_steps"], stochastic=s.get("stochastic", False)).to(build.device)  # fmt: skip


def episode_return(episode: Mapping[str, Any]) -> float:
    """An episode's return, summed as its first return-to-go is (last reward first)."""
    return float(np.cumsum(episode["reward"][::-1])[-1])


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
        observations, actions = data["observation"].reshape(count, -1).float(), data["action"].reshape(count, -1).float()
        self.episodes = [{"observation": observations[a : b + 1], "action": actions[a : b + 1], "reward": rewards[a : b + 1]}
                         for a, b in zip(first, last)]  # fmt: skip
        self.context, self.return_scale, self.device = int(context), float(return_scale), device
        self.best_return = max(episode_return(episode) for episode in self.episodes)
        if not any(len(episode["reward"]) >= self.context for episode in self.episodes):
            raise DatasetError(f"context_length {context} is longer than every episode of the dataset (the longest has "
                               f"{int((last - first).max()) + 1} steps): lower context_length")  # fmt: skip
        self.index()
        self.generator = torch.Generator().manual_seed(seed)

    def index(self) -> None:
        """The episodes as columns (``SEGMENT_KEYS``) and the rows where a segment may start."""
        timestep, to_go, starts, offset = [], [], [], 0
        for episode in self.episodes:
            steps = len(episode["reward"])
            timestep.append(np.arange(steps))
            to_go.append(np.cumsum(episode["reward"][::-1])[::-1])
            starts.extend(range(offset, offset + steps + 1 - self.context))  # empty for an episode shorter than the context
            offset += steps
        self.starts = torch.as_tensor(starts, dtype=torch.int64)
        self.columns = dict(zip(SEGMENT_KEYS, (
            torch.cat([episode["observation"] for episode in self.episodes]).to(self.device),
            torch.cat([episode["action"] for episode in self.episodes]).to(self.device),
            torch.as_tensor(np.concatenate(to_go) / self.return_scale, dtype=torch.float32, device=self.device).reshape(offset, 1),
            torch.as_tensor(np.concatenate(timestep), device=self.device),
        )))  # fmt: skip

    def sample(self, batch_size: int) -> dict[str, torch.Tensor]:
        """``batch_size`` segments: each key ``[batch_size, context, ...]`` (``SEGMENT_KEYS``)."""
        starts = self.starts[torch.randint(len(self.starts), (batch_size,), generator=self.generator)]
        rows = (starts[:, None] + torch.arange(self.context)).to(self.columns["timestep"].device)
        return {key: column[rows] for key, column in self.columns.items()}

    def state_dict(self) -> dict[str, Any]:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.generator.set_state(state["generator"])


class OnlineSegments(TrajectorySegments):
    """Online DT's replay of whole episodes: the dataset's best ``capacity`` episodes (in ascending return, as ODT
    keeps them), then each episode played online (``add``) appended until ``capacity`` are held and after that
    replacing the oldest held, the dataset's worst first. ``noise`` is the generator of the online episodes'
    action samples; the state carries it, the played episodes still held and their count, so a resumed run holds the
    same episodes and draws the same noise."""

    def __init__(self, data: Mapping[str, torch.Tensor], context: int, return_scale: float, seed: int, capacity: int,
                 device: Any = "cpu") -> None:  # fmt: skip
        super().__init__(data, context, return_scale, seed, device)
        returns = [episode_return(episode) for episode in self.episodes]
        self.capacity = int(capacity)
        self.initial = [self.episodes[i] for i in np.argsort(returns, kind="stable")[-self.capacity :]]
        self.added: list[dict[str, Any]] = []  # the played episodes, oldest first (those still held)
        self.played = self.played_steps = 0
        self.noise = torch.Generator().manual_seed(seed + 1)
        self.arrange()

    def add(self, observation: torch.Tensor, action: torch.Tensor, reward: np.ndarray) -> None:
        """An episode played online, its returns-to-go from the rewards it earned (hindsight relabelling)."""
        self.added = (self.added + [{"observation": observation.float().cpu(), "action": action.float().cpu(),
                                     "reward": np.asarray(reward, np.float64)}])[-self.capacity :]  # fmt: skip
        self.played += 1
        self.played_steps += len(reward)
        self.arrange()

    def arrange(self) -> None:
        """Held episodes in slot order: the k-th episode played takes slot ``(len(initial) + k) % capacity``."""
        slots: list[dict[str, Any] | None] = [*self.initial, *[None] * (self.capacity - len(self.initial))]
        for k, episode in enumerate(self.added, start=self.played - len(self.added)):
            slots[(len(self.initial) + k) % self.capacity] = episode
        self.episodes = [episode for episode in slots if episode is not None]
        self.index()

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "noise": self.noise.get_state(), "played": self.played,
                "played_steps": self.played_steps,
                "added": [dict(episode, reward=torch.as_tensor(episode["reward"])) for episode in self.added]}  # fmt: skip

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        super().load_state_dict(state)
        self.noise.set_state(state["noise"])
        self.played, self.played_steps = int(state["played"]), int(state["played_steps"])
        self.added = [dict(episode, reward=np.asarray(episode["reward"], np.float64)) for episode in state["added"]]
        self.arrange()


def trajectory_segments(build: Build) -> TrajectorySegments:
    """The recipe's dataset as ``TrajectorySegments`` (``context_length``, ``return_scale``), seeded from the run's seed."""
    s = build.settings
    return _recipe_segments(build, lambda data: TrajectorySegments(data, s["context_length"], s["return_scale"], build.seed, build.device))


def online_segments(build: Build) -> OnlineSegments:
    """The recipe's dataset as Online DT's ``OnlineSegments`` (``online_buffer_episodes`` held), seeded from the run's seed."""
    s = build.settings
    return _recipe_segments(build, lambda data: OnlineSegments(
        data, s["context_length"], s["return_scale"], build.seed, s["online_buffer_episodes"], build.device))


def _recipe_segments(build: Build, segments: Callable[[dict[str, torch.Tensor]], TrajectorySegments]) -> TrajectorySegments:
    """``segments`` of the recipe's dataset, a refusal of the data naming the recipe."""
    _, data = dataset_transitions(build)
    try:
        return segments(data)
    except DatasetError as err:
        raise DatasetError(f"recipe '{build.recipe.name}': {err}") from None


def linear_warmup(optimizer: torch.optim.Optimizer, steps: int, groups: int | None = None) -> torch.optim.lr_scheduler.LambdaLR:
    """DT's learning-rate warm-up: the rate rises linearly over ``steps`` gradient updates, then stays (stepped after each).
    ``groups``: only the optimiser's first ``groups`` parameter groups warm up (Online DT's temperature does not)."""
    steps = max(1, steps)

    def warm(step: int) -> float:
        return min(1.0, (step + 1) / steps)

    if groups is None:
        return torch.optim.lr_scheduler.LambdaLR(optimizer, warm)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, [warm if i < groups else (lambda step: 1.0) for i in range(len(optimizer.param_groups))])


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
    def act(self, observations: torch.Tensor, noise: torch.Generator | None = None) -> torch.Tensor:
        """The newest step's action: the model's, or with ``noise`` a sample of its stochastic head (Online DT
        exploring) drawn from that generator."""
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
            if noise is None:
                action = self.model(h["observation"], h["action"], h["return_to_go"], h["timestep"])[:, -1]
            else:
                loc, scale = (x[:, -1] for x in self.model.distribution(h["observation"], h["action"], h["return_to_go"], h["timestep"]))
                sample = loc + scale * torch.randn(loc.shape, generator=noise).to(loc.device)
                action = self.model.squash(sample)
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


ONLINE_SEED_OFFSET = 500_000
"""Online episode ``k`` starts from ``reset(seed = run seed + ONLINE_SEED_OFFSET + k)``: apart from evaluation's seeds."""


class OnlineFineTuning(ReturnConditionedActing):
    """Online Decision Transformer's fine-tuning (Zheng et al., 2022), mixed in before an offline trainer base whose
    memory (``build.memory``) is ``OnlineSegments``: from ``online_after`` updates on, every
    ``online_round_updates``-th update first plays one episode of the env (at most ``max_episode_steps``), each
    action a sample of the stochastic head conditioned on the evaluation's target return plus
    ``online_target_offset``, and adds it to the segments relabelled with the returns it earned. The segments carry
    the episodes and the noise, so checkpoints need nothing more. Logs ``online/episode_return`` (the iteration's
    episodes), ``online/episodes`` and ``online/env_steps``."""

    updates: int

    def __init__(self, build: Build) -> None:
        self.segments: OnlineSegments = build.memory
        self.round_returns: list[float] = []  # the returns of the episodes played since the last metrics row
        super().__init__(build)  # type: ignore[call-arg]

    def gradient_step(self) -> dict[str, torch.Tensor]:
        s = self.build.settings
        since = self.updates - s["online_after"]
        if since >= 0 and since % s["online_round_updates"] == 0:
            self.round_returns.append(self.play_episode())
        return super().gradient_step()  # type: ignore[misc]

    def play_episode(self) -> float:
        """One episode with sampled actions into the segments; its return."""
        from ...envs.factory import make_gym_env
        from ...envs.spec import EnvSpec

        s, segments = self.build.settings, self.segments
        acting = ContextActing(self.acting.model, s["context_length"], self.acting.target + s["online_target_offset"], s["return_scale"])
        env = make_gym_env(EnvSpec.of(self.build.env_spec, None), training=False)
        columns: dict[str, list[Any]] = {"observation": [], "action": [], "reward": []}
        try:
            observation, _ = env.reset(seed=self.build.seed + ONLINE_SEED_OFFSET + segments.played)
            done, steps = False, 0
            while not done and steps < s["max_episode_steps"]:  # an env without a time limit is cut where the timesteps end
                steps += 1
                x = torch.as_tensor(np.asarray(observation, np.float32), device=self.build.device).reshape(1, -1)
                action = acting.act(x, noise=segments.noise)
                observation, reward, terminated, truncated, _ = env.step(action[0].cpu().numpy())
                acting.observe(np.asarray([reward], np.float32))
                for key, value in zip(columns, (x[0], action[0], float(reward))):
                    columns[key].append(value)
                done = terminated or truncated
        finally:
            env.close()
        segments.add(torch.stack(columns["observation"]), torch.stack(columns["action"]), np.asarray(columns["reward"]))
        return episode_return(columns)  # summed as the segments' returns-to-go are

    def step(self) -> dict[str, float]:
        metrics = super().step()  # type: ignore[misc]
        if self.round_returns:
            metrics["online/episode_return"] = float(np.mean(self.round_returns))
            self.round_returns.clear()
        metrics["online/episodes"] = float(self.segments.played)
        metrics["online/env_steps"] = float(self.segments.played_steps)
        return metrics

    def logged_metrics(self) -> frozenset[str]:
        return super().logged_metrics() | {"online/episode_return", "online/episodes", "online/env_steps"}  # type: ignore[misc]
