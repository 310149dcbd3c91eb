"""``TrainerBase``: the part of the ``Trainer`` contract every cell shares (the train loop, evaluation)
and the "not capable" defaults of its optional capabilities (``rlplug.contract.protocol``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..envs.evaluation import evaluate_policy
from ..envs.torch_native import is_torch_env
from ..errors import ExportUnsupportedError, NoReplayMemoryError, VideoUnsupportedError
from ..hooks import Loop, TorchRLTrainerAPI, TrainerHooks, own_loop
from .hookspecs import Build


class EpisodeTracker:
    """Sums rewards per vectorised environment and reports returns of episodes that ended; ``lengths`` counts
    the steps of each environment's running episode (0: it has just begun). Where the env records its own
    returns (``normalize_reward``: the rewards the agent sees are normalised, their sum is not the env's return),
    ``update`` is given those of the episodes that ended and reports them instead (``rlplug.envs.wrappers``)."""

    def __init__(self, num_envs: int) -> None:
        self.running = np.zeros(num_envs, dtype=np.float64)
        self.lengths = np.zeros(num_envs, dtype=np.int64)
        self.finished: list[float] = []
        self.episodes = 0

    @staticmethod
    def local(values: Any) -> Any:
        """``values`` (an array, or a tensor on any device) as this tracker keeps them: a host array."""
        return values.detach().cpu().numpy() if hasattr(values, "detach") else values

    def update(self, rewards: Any, dones: Any, returns: Any = None) -> None:
        """One vector step. ``returns``: the env's own returns of the episodes that ended on it, in env order
        (``rlplug.envs.wrappers.ended_returns``), or ``None``: the summed rewards are their returns."""
        rewards = np.asarray(self.local(rewards), dtype=np.float64).reshape(-1)
        dones = np.asarray(self.local(dones), dtype=bool).reshape(-1)
        self.running += rewards
        self.lengths += 1
        if dones.any():
            if returns is None:
                self.finished.extend(self.running[dones].tolist())
            else:
                returns = np.asarray(returns, dtype=np.float64).reshape(-1)
                if returns.size != dones.sum():  # a recorded return for each episode that ended, or a wrapper is amiss
                    raise RuntimeError(f"{returns.size} recorded episode returns for {int(dones.sum())} episodes that ended")
                self.finished.extend(returns.tolist())
            self.episodes += int(dones.sum())
            self.running[dones] = 0.0
            self.lengths[dones] = 0

    def pop_mean(self) -> float | None:
        """Mean return of the episodes finished since the last call, or ``None`` if none finished."""
        if not self.finished:
            return None
        mean = float(np.mean(self.finished))
        self.finished.clear()
        return mean

    def state_dict(self) -> dict[str, Any]:
        return {"running": self.running.tolist(), "lengths": self.lengths.tolist(), "episodes": self.episodes}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.running = np.asarray(state["running"], dtype=np.float64)
        # a checkpoint from before lengths were counted: unknown, counted from here
        self.lengths = np.asarray(state.get("lengths", np.zeros(len(self.running))), dtype=np.int64)
        self.episodes = int(state["episodes"])


class TensorEpisodeTracker(EpisodeTracker):
    """``EpisodeTracker`` on the env's own device, for torch-native envs (``rlplug.envs.torch_native``): a step adds
    its rewards and ends without a host sync; ``pop_mean`` reads the finished episodes' sum and count, once per
    iteration. Its state dict is ``EpisodeTracker``'s. (No env-recorded returns: torch-native envs have no wrappers.)"""

    def __init__(self, num_envs: int, device: Any) -> None:
        import torch

        self.device = torch.device(device)
        self.running = torch.zeros(num_envs, dtype=torch.float64, device=self.device)
        self.lengths = torch.zeros(num_envs, dtype=torch.int64, device=self.device)
        self.finished_sum = torch.zeros((), dtype=torch.float64, device=self.device)
        self.finished_count = torch.zeros((), dtype=torch.int64, device=self.device)
        self.ended = torch.zeros((), dtype=torch.int64, device=self.device)

    def local(self, values: Any) -> Any:
        import torch

        return torch.as_tensor(values, device=self.device)

    def update(self, rewards: Any, dones: Any, returns: Any = None) -> None:
        rewards = self.local(rewards).reshape(-1).to(self.running.dtype)
        dones = self.local(dones).reshape(-1).bool()
        self.running += rewards
        self.lengths += 1
        self.finished_sum += (self.running * dones).sum()
        count = dones.sum()
        self.finished_count += count
        self.ended += count
        self.running *= ~dones
        self.lengths *= ~dones

    @property
    def episodes(self) -> int:  # type: ignore[override]
        return int(self.ended.item())

    def pop_mean(self) -> float | None:
        count = int(self.finished_count.item())
        if count == 0:
            return None
        mean = float(self.finished_sum.item()) / count
        self.finished_sum.zero_()
        self.finished_count.zero_()
        return mean

    def state_dict(self) -> dict[str, Any]:
        return {"running": self.running.tolist(), "lengths": self.lengths.tolist(), "episodes": self.episodes}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        import torch

        self.running = torch.as_tensor(state["running"], dtype=torch.float64, device=self.device)
        self.lengths = torch.as_tensor(state.get("lengths", [0] * len(self.running)), dtype=torch.int64, device=self.device)
        self.ended.fill_(int(state["episodes"]))


def episode_tracker(build: Build) -> EpisodeTracker:
    """The tracker of a build's training env: on its device for a torch-native env, else on the host."""
    if is_torch_env(getattr(build, "env_id", None)):
        return TensorEpisodeTracker(build.num_envs, build.device)
    return EpisodeTracker(build.num_envs)


class TrainerBase(TorchRLTrainerAPI):
    """Subclass and implement ``step``, ``act_deterministic``, ``state_dict`` and ``load_state_dict``.

    Off-policy trainers also set ``gradient_steps`` to a count and implement ``replay_transitions``.
    Training hooks (``register_op``, ``rlplug.hooks``) live in ``self.hooks``; a family base names the
    loop whose hook points it calls in ``hook_loop``, and puts ``self.hooks.state_dict()`` in its checkpoint.
    """

    hook_loop: Loop | None = None
    """The hook points ``step`` calls (``rlplug.hooks.LOOPS``); ``None``: only those ``train`` calls around it."""

    def __init__(self, build: Build) -> None:
        self.build = build
        self.env_steps = 0
        self.iterations = 0
        self.episodes = episode_tracker(build)
        self.budget: int | None = None  # the step target of the running ``train`` call
        compiled = bool(getattr(build, "settings", None) and build.settings.get("compile"))  # a hand-made build may have none
        self.hooks = TrainerHooks(self.hook_loop or own_loop(type(self).__name__), compiled=compiled)

    def step(self) -> dict[str, float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """Greedy / mean action for a batch of raw (unnormalised) observations."""
        raise NotImplementedError

    def reset_acting_state(self) -> None:
        """Start new episodes for ``act_deterministic``: a recurrent policy carries a hidden state from one call
        to the next (one row per observation of the batch, reset here and when the batch size changes); a
        feed-forward policy has nothing to reset. Evaluation calls it before every episode."""

    def observe_rewards(self, rewards: np.ndarray) -> None:
        """The rewards ``act_deterministic``'s last actions earned, as evaluation steps its env: a return-conditioned
        policy (Decision Transformer) counts its target return down with them; others ignore them."""

    recurrent_state_shape: tuple[int, int] | None = None
    """``(layers, width)`` of a recurrent policy's hidden state as its exported file takes it (``hidden``:
    float32 ``[B, layers, width]``; an LSTM's ``h`` then ``c``, so ``width = 2 x hidden size``; zeros start an
    episode); ``None`` for a feed-forward policy."""

    steps_per_iteration: int | None = None
    """Set by trainers whose iterations collect a fixed number of transitions (a PPO rollout)."""

    progress_unit = "env_steps"
    """The counter a step budget is measured in: ``env_steps``, or ``updates`` for offline trainers."""

    gradient_steps: int | None = None
    """Not counted apart from ``progress`` unless a subclass keeps a count (off-policy trainers do)."""

    def compiled(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` (a gradient step: loss, backward, optimiser step) through ``torch.compile`` when the
        cell's settings say ``compile`` (``rlplug.backends.common.compile``), else ``fn`` itself."""
        from ..backends.common.compile import compiled_step

        step = compiled_step(fn, self.build.settings, self.build.device)
        if step is not fn:
            self.__dict__.setdefault("_compiled_steps", []).append(step)
        return step

    @property
    def compile_seconds(self) -> float | None:
        """Wall seconds the compiled gradient steps spent compiling so far (``None``: not compiled)."""
        from ..backends.common.compile import compile_seconds

        return compile_seconds(*self.__dict__.get("_compiled_steps", ()))

    @property
    def progress(self) -> int:
        return int(getattr(self, self.progress_unit))

    def planned_progress(self, steps: int) -> int:
        """Where ``train(steps)`` stops: the whole iterations of ``steps_per_iteration`` that fit in the
        budget, or one on a trainer that has not iterated yet (the loop below, in closed form)."""
        chunk, start = self.steps_per_iteration or 1, self.progress
        whole = max(0, steps - start) // chunk
        if whole == 0 and start < steps and self.iterations == 0:
            whole = 1
        return start + whole * chunk

    def train(self, steps: int, callbacks: Iterable[Callable[[Any, dict[str, float]], Any]] = ()) -> None:
        """Iterate while the step budget allows; fixed-size iterations never overshoot it.

        A budget smaller than one fixed-size iteration still runs one, so a short smoke run trains.
        ``planned_progress(steps)`` says beforehand where this stops, unless a callback returns ``False``
        or a hook asks to stop (``request_stop``). The generic hook points run here: ``setup`` and
        ``shutdown`` around the loop, ``post_optim_complete_log``, ``post_steps`` and ``post_steps_log``
        after each ``step()``, whose metrics take in what hooks logged.
        """
        callbacks = list(callbacks)
        self.budget = steps
        chunk = self.steps_per_iteration or 1
        self.hooks.setup()
        while self.progress + chunk <= steps or (self.progress < steps and self.iterations == 0):
            metrics = self.step()
            self.hooks.post_optim_complete_log(metrics)
            self.hooks.post_steps()
            metrics = self.hooks.post_steps_log(metrics)
            if any(callback(self, metrics) is False for callback in callbacks) or self.hooks.stop_requested:
                break
        self.hooks.shutdown()

    def evaluate(self, episodes: int, video_dir: str | None = None) -> list[float]:
        if is_torch_env(getattr(self.build, "env_id", None)):
            return self.evaluate_torch_env(episodes, video_dir)
        return evaluate_policy(
            self.build.env_spec, None, self.evaluation_act(), episodes, self.build.seed, video_dir=video_dir,
            reset=self.reset_acting_state, rewarded=self.observe_rewards,
        )

    def evaluation_act(self) -> Callable[[Any], Any]:
        """What ``evaluate`` acts with: ``act_deterministic``, or the same actions from a cheaper path (TorchRL
        cells act through their exported module, without a TensorDict and a probabilistic actor per step)."""
        return self.act_deterministic

    def evaluate_torch_env(self, episodes: int, video_dir: str | None = None) -> list[float]:
        """A torch-native env's evaluation (``rlplug.envs.torch_native.evaluate_torch_env``): the exported
        deterministic policy (``export_policy``: ``act_deterministic`` as one module) on tensors, on the env's device."""
        from ..envs.torch_native import evaluate_torch_env

        if video_dir is not None:
            raise VideoUnsupportedError(f"'{self.build.env_id}' is a torch-native env: rlplug records videos of Gymnasium envs only")
        policy = self.export_policy().to(self.build.device)  # its own buffers (action bounds) too
        return evaluate_torch_env(self.build.env_id, self.build.env_kwargs, policy, episodes, self.build.seed, self.build.device)

    def replay_transitions(self) -> dict[str, Any]:
        """A trainer without a replay memory has nothing to export; off-policy trainers override this."""
        raise NoReplayMemoryError(f"{type(self).__name__} keeps no replay memory")

    def export_policy(self) -> Any:
        """A trainer that does not say how its policy exports cannot export it; the family bases and cells override this."""
        algorithm = getattr(getattr(self.build, "algorithm", None), "name", None)
        cell = f"{algorithm}/{getattr(self.build, 'backend', '?')}" if algorithm else type(self).__name__
        raise ExportUnsupportedError(f"{cell} cannot export its policy: {type(self).__name__} implements no export_policy")

    def counters(self) -> dict[str, Any]:
        return {"env_steps": self.env_steps, "iterations": self.iterations, "episodes": self.episodes.state_dict()}

    def load_counters(self, state: dict[str, Any]) -> None:
        self.env_steps = int(state["env_steps"])
        self.iterations = int(state["iterations"])
        self.episodes.load_state_dict(state["episodes"])

    def logged_metrics(self) -> frozenset[str] | None:
        """Every name a metrics row of ``train`` can hold (``loss/<term>``, ``train/...``), known once the trainer is
        built and before it trains: a hook's ``monitor`` is checked against it (``rlplug.hooks.recipe.check_monitors``).
        ``None``: this trainer does not say, and monitors go unchecked. The family bases derive it from the loss
        entry's terms and the loop's own entries; a test compares it with what short runs log."""
        return None

    def close(self) -> None:
        pass
