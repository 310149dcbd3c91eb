"""TorchRL building blocks every off-policy cell shares: the replay buffer, the target updater, and
the trainer that collects batches, extends the buffer and takes the gradient steps it owes.

A cell's backend module (``rlplug_sac.torchrl_backend`` and its siblings) builds its loss, and
subclasses ``TorchRLOffPolicyTrainer`` with its optimisers, update stages and exploration policy
(``TorchRLStagedUpdates``). Imported only when a TorchRL off-policy cell is built.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn
from torchrl.data import Bounded, RandomSampler, SliceSampler, TensorDictReplayBuffer
from torchrl.envs import ExplorationType
from torchrl.envs.utils import exploration_type
from torchrl.modules import OrnsteinUhlenbeckProcessModule
from torchrl.objectives import HardUpdate, LossModule, SoftUpdate

from ...families.offpolicy import gradient_steps_due
from ...contract.hookspecs import Build
from ...contract.trainer import TrainerBase
from ...hooks import LOOPS
from ...util.rng import capture_rng_state, restore_rng_state
from ..common.seeding import configure_threads, seed_everything
from ..common.terms import TermMeans
from .buffers import TransitionMemmapStorage, TransitionStorage
from .collection import make_collection
from ...envs.torch_native import is_torch_env
from .env import make_env, returns_reader
from .torch_env import make_torch_native_env
from .modules import action_mask_key, observation_keys
from .staged import TorchRLStagedUpdates

# What the buffer keeps of a collected step: the policy's extra outputs (logits, loc/scale, log-probs)
# would only cost memory.
TRANSITION_KEYS = (
    "observation",
    "action",
    ("next", "observation"),
    ("next", "reward"),
    ("next", "done"),
    ("next", "terminated"),
    ("next", "truncated"),
)


# the hook points whose ops are handed the collected batch
BATCH_HOOK_POINTS = ("batch_process", "pre_steps_log", "post_steps_log")


def transition_keys(build: Build) -> tuple[Any, ...]:
    """``TRANSITION_KEYS`` with the cell's observation keys (a Dict space's keys for "observation"), and the
    action mask's where the observations carry one (the next step's mask bounds the target's max)."""
    mask = action_mask_key(build)
    keys = [*observation_keys(build), *([mask] if mask else [])]
    return (*keys, "action", *(("next", key) for key in keys), *TRANSITION_KEYS[3:])

# ---- memory -------------------------------------------------------------------------------------


def replay_buffer(build: Build) -> TensorDictReplayBuffer:
    """``TensorDictReplayBuffer`` of ``buffer_size`` transitions sampled in ``batch_size`` batches.

    Uniform transitions for TD(0). TD(1) / TD(lambda) need consecutive steps: the buffer then samples
    slices of up to ``trajectory_slice`` steps (one environment, so storage order is time order; the
    settings refuse more), cut at episode ends, so the multi-step estimator sees real trajectories.
    ``replay_storage = "memmap"`` keeps it in memory-mapped files (``LazyMemmapStorage`` in a fresh
    temporary directory, removed with the buffer) for buffers larger than RAM. Both storages write a
    transition leaf by leaf (``TransitionStorage``: upstream's storage, without tensordict's indexing).
    """
    s = build.settings
    if s["replay_storage"] == "memmap":
        storage = TransitionMemmapStorage(s["buffer_size"], device=build.device)
    else:
        storage = TransitionStorage(s["buffer_size"], device=build.device)
    if s.get("value_estimator", "td0") == "td0":
        sampler = RandomSampler()
    else:
        sampler = SliceSampler(slice_len=s["trajectory_slice"], end_key=("next", "done"), strict_length=False)
    return TensorDictReplayBuffer(storage=storage, sampler=sampler, batch_size=s["batch_size"])


def set_value_estimator(loss: LossModule, settings: dict[str, Any]) -> None:
    """``loss.make_value_estimator`` with the recipe's estimator, ``gamma`` and (TD(lambda)) ``lmbda``."""
    kwargs = {"gamma": settings["gamma"]}
    if settings["value_estimator"] == "tdlambda":
        kwargs["lmbda"] = settings["lmbda"]
    loss.make_value_estimator(settings["value_estimator"], **kwargs)


# ---- target networks ----------------------------------------------------------------------------


class LossTargetUpdate:
    """TorchRL's ``SoftUpdate`` / ``HardUpdate`` on a loss's target parameters, with a period.

    ``soft``: every ``period``-th ``step()``, ``SoftUpdate(tau)`` blends ``target += tau * (online -
    target)``. ``hard``: every ``period``-th ``step()``, a copy; ``HardUpdate`` copies on every
    ``interval + 1``-th step (reference §3.2), so it gets ``interval = period - 1``.
    """

    def __init__(self, loss: LossModule, kind: str = "soft", tau: float = 0.005, period: int = 1) -> None:
        if kind not in ("soft", "hard"):
            raise ValueError(f"target update must be 'soft' or 'hard', got '{kind}'")
        self.kind, self.tau, self.period = kind, float(tau), max(1, int(period))
        if kind == "hard":
            self.updater = HardUpdate(loss, value_network_update_interval=self.period - 1)
        else:
            self.updater = SoftUpdate(loss, tau=self.tau)
        self.steps = 0
        self._pairs: tuple[list[torch.Tensor], list[torch.Tensor]] | None = None

    def step(self) -> None:
        self.steps += 1
        if self.kind == "hard":
            self.updater.step()
        elif self.steps % self.period == 0:
            self._soft_step()

    def _soft_step(self) -> None:
        """``SoftUpdate.step``'s ``target.lerp_(online, 1 - eps)``, as one ``_foreach_lerp_`` over the
        leaves: upstream walks the nested parameter tensordicts on every step (about 6 % of a lean SAC
        step here). The first step is upstream's own (it finishes any lazy initialisation); the leaves
        it moved are then paired once (optimisers, ``SoftUpdate`` and ``load_state_dict`` update them in
        place, so the pairs stay valid)."""
        if self._pairs is None:
            self.updater.step()
            targets, sources = [], []
            for key, source in self.updater._sources.items():
                target = self.updater._targets.get(f"target_{key}")
                if isinstance(source, torch.Tensor):
                    sources.append(source.data), targets.append(target.data)
                    continue
                for leaf in source.keys(True, True):
                    sources.append(source.get(leaf).data), targets.append(target.get(leaf).data)
            self._pairs = (targets, sources)
            return
        with torch.no_grad():
            torch._foreach_lerp_(self._pairs[0], self._pairs[1], 1 - self.updater.eps)

    def state_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "steps": self.steps, "updater": self.updater.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.steps = int(state["steps"])
        self.updater.load_state_dict(state["updater"])


def loss_target_update(build: Build, loss: LossModule) -> LossTargetUpdate:
    """The updater the recipe's ``target_update`` / ``tau`` / ``target_update_period`` describe."""
    s = build.settings
    return LossTargetUpdate(loss, s["target_update"], s["tau"], s["target_update_period"])


# ---- exploration --------------------------------------------------------------------------------


class OrnsteinUhlenbeckNoise(OrnsteinUhlenbeckProcessModule):
    """``OrnsteinUhlenbeckProcessModule`` whose process runs on across episodes, as skrl's does.

    Upstream resets the process where the tensordict's ``is_init`` flag is set, and warns on every
    call when the env has no ``InitTracker``; rlplug's env has none, so the noise simply carries on.
    """

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if exploration_type() in (ExplorationType.RANDOM, None):
            tensordict = self.ou.add_sample(tensordict, self.eps, is_init=tensordict.get(self.is_init_key, None))
        return tensordict


def action_bounds_spec(build: Build) -> Bounded:
    """The Box action space as a TorchRL ``Bounded`` spec (exploration modules project into it)."""
    space: gym.spaces.Box = build.action_space
    return Bounded(
        low=torch.as_tensor(space.low, dtype=torch.float32),
        high=torch.as_tensor(space.high, dtype=torch.float32),
        shape=space.shape,
        device=build.device,
    )


def ou_noise(build: Build, sigma: float, theta: float) -> OrnsteinUhlenbeckNoise:
    """OU noise with skrl's discretisation (dt = 1: ``x -= theta * x; x += sigma * N(0, 1)``) added to
    the action and projected into the bounds; its scale ``eps`` starts at 1 (a trainer may anneal it)."""
    return OrnsteinUhlenbeckNoise(
        action_bounds_spec(build), eps_init=1.0, eps_end=0.0, theta=theta, sigma=sigma, dt=1.0, device=build.device
    )


# ---- trainer ------------------------------------------------------------------------------------


class TorchRLOffPolicyTrainer(TorchRLStagedUpdates, TrainerBase):
    """Collects ``train_every`` steps of every env per batch, stores them, then takes the gradient steps owed.

    Collection (``rlplug.backends.torchrl.collection``) draws uniformly random actions for the first
    ``learning_starts`` transitions (the collector's ``init_random_frames``), then runs the exploration policy
    in TorchRL's RANDOM exploration mode: the lean path by default, TorchRL's ``Collector`` with the setting
    ``collector = true``; both give the same batches. One iteration covers about ``log_every`` transitions
    (whole batches; the last stops at the budget).

    Subclasses give ``make_optimizers(build)`` and declare their update stages (``TorchRLStagedUpdates``),
    and may override ``make_exploration_policy(build)`` (called once the loss, optimisers and policy
    exist, before the collector; default: the policy itself) and ``after_batch(frames)`` (noise or
    epsilon annealing).
    """

    hook_loop = LOOPS["torchrl", "off-policy"]

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        configure_threads()
        seed_everything(build.seed)
        s = build.settings
        self.memory = build.memory
        self.transition_keys = self.stored_keys(build)
        self.learning_starts, self.utd_ratio = s["learning_starts"], s["utd_ratio"]
        self.frames_per_batch = build.num_envs * s["train_every"]
        self.steps_per_iteration = self.frames_per_batch
        self.log_every = max(s["log_every"], self.frames_per_batch)
        self.gradient_steps = 0
        self.init_updates(build)
        self.exploration_policy = self.make_exploration_policy(build)
        self.env = self.make_env(build)
        self.returns_reader = returns_reader(self.env)  # the env's own episode returns, where it records them
        # the random warm-up counts in batches: learning_starts is rounded up to whole batches
        self.collection = make_collection(
            self.lean_collection(build), self.env, self.exploration_policy, build.num_envs, s["train_every"],
            self.random_warmup_frames(build), self.transition_keys,
        )
        self._closed = False

    def make_env(self, build: Build) -> Any:
        """The TorchRL env collected from: over gymnasium's vector env, or a torch-native batched ``EnvBase``."""
        if is_torch_env(build.env_id):  # a batched EnvBase on its own device: TorchRL's Collector steps it
            return make_torch_native_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device,
                                         build.env_spec.clip_actions)
        return make_env(build.env_spec, None, build.num_envs, build.seed, build.device)

    def lean_collection(self, build: Build) -> bool:
        """Step the gymnasium vector env under the TorchRL env directly (``LeanCollection``) rather than through
        TorchRL's ``Collector``: unless the setting ``collector = true`` asks for the collector or the env is torch-native."""
        return not build.settings.get("collector", False) and not is_torch_env(build.env_id)

    def random_warmup_frames(self, build: Build) -> int:
        """Transitions collected with the env's own uniformly random actions (``rand_action``) before the policy
        acts: ``learning_starts``."""
        return self.learning_starts

    def stored_keys(self, build: Build) -> tuple[Any, ...]:
        """The keys of a collected step the replay buffer keeps (``transition_keys``)."""
        return transition_keys(build)

    def collected(self, batch: TensorDict) -> TensorDict:
        """Each collected batch, before anything reads it (a team's trainer adds the team's reward); itself here."""
        return batch

    def raw_envs(self) -> list[Any] | None:
        """The library envs under a multi-agent env, whose state a checkpoint keeps (``collector_state``); ``None``."""
        return None

    @property
    def collector(self) -> Any:
        """TorchRL's ``Collector`` when the setting ``collector = true`` chose it, else ``None``."""
        return getattr(self.collection, "collector", None)

    def make_exploration_policy(self, build: Build) -> nn.Module:
        """What the collector runs (in RANDOM exploration mode): the policy, by default."""
        return self.policy

    def after_batch(self, frames: int) -> None:
        """Called after each collected batch with its number of transitions (anneal exploration here)."""

    def step(self) -> dict[str, float]:
        stop = self.env_steps + self.log_every
        if self.budget is not None:
            stop = min(stop, max(self.budget, self.env_steps + self.frames_per_batch))
        terms = TermMeans()  # per term: TD3's actor term exists only on delayed steps
        updates = 0
        while self.env_steps + self.frames_per_batch <= stop:
            batch = self.collected(self.collection.next_batch())
            self._track_episodes(batch)
            if any(self.hooks.has(point) for point in BATCH_HOOK_POINTS):
                batch = self.collection.own_batch(batch)  # ops may replace its entries: the lean path's block stays
            batch = self.hooks.batch_process(batch)
            self.collection.store(self.memory, batch)
            self.hooks.pre_steps_log(batch)
            self.env_steps += self.frames_per_batch
            self.after_batch(self.frames_per_batch)
            due = gradient_steps_due(self.env_steps, self.learning_starts, self.utd_ratio, self.gradient_steps)
            if due:
                self.hooks.pre_optim_steps()
            for _ in range(due):
                terms.add(self.gradient_step())
                self.hooks.post_optim()
            self.gradient_steps += due
            updates += due
        self.iterations += 1
        return self._metrics(terms, updates)

    def _track_episodes(self, batch: TensorDict) -> None:
        # as the tracker keeps them: host arrays, or tensors on a torch-native env's device
        rewards = self.episodes.local(batch["next", "reward"].reshape(batch.shape[0], -1))
        dones = self.episodes.local(batch["next", "done"].reshape(batch.shape[0], -1))
        reader = self.returns_reader
        for t in range(rewards.shape[1]):
            done = dones[:, t]
            self.episodes.update(rewards[:, t], done, reader.take(done) if reader else None)

    def logged_metrics(self) -> frozenset[str]:
        names = {f"loss/{name}" for name in self.logged_terms} | set(self.extra_metrics())
        return frozenset(names | {"train/gradient_steps", "train/updates_this_iteration", "train/episode_return"})

    def _metrics(self, terms: TermMeans, updates: int) -> dict[str, float]:
        metrics = {f"loss/{name}": value for name, value in terms.pop().items()}  # one reduction per iteration
        metrics.update(self.extra_metrics())
        metrics["train/gradient_steps"] = float(self.gradient_steps)
        metrics["train/updates_this_iteration"] = float(updates)
        episode_return = self.episodes.pop_mean()
        if episode_return is not None:
            metrics["train/episode_return"] = episode_return
        return metrics

    # -- checkpoints ------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "modules": self.module_state(),  # the loss (networks, targets), optimisers, schedules, target updater
            "memory": self.memory.state_dict(),  # storage, writer cursor, sampler: the replay a resume samples from
            "collector": self.collection.state_dict(self.raw_envs()),  # mid-episode envs and the next step's carrier
            "gradient_steps": self.gradient_steps,
            "counters": self.counters(),
            "hooks": self.hooks.state_dict(),
            "rng": capture_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.load_module_state(state["modules"])
        self.memory.load_state_dict(state["memory"])
        self.collection.load_state_dict(state["collector"], self.raw_envs())
        self.gradient_steps = int(state["gradient_steps"])
        self.load_counters(state["counters"])
        self.hooks.load_state_dict(state.get("hooks"))  # None: a checkpoint from before hooks were saved
        restore_rng_state(state["rng"])

    def replay_transitions(self) -> dict[str, Any]:
        """The replay buffer as numpy arrays by dataset key, each env's steps contiguous and in time
        order (``rlplug dataset from-run``).

        The buffer holds collector batches ``[num_envs, steps]`` flattened env-major; every transition
        ever written has an absolute index (``env_steps`` count them all), from which its env and time
        follow, also after the circular storage wrapped.
        """
        import numpy as np

        from ...data.datasets import env_contiguous

        count = len(self.memory)
        cursor = int(self.memory._writer._cursor) % self.memory._storage.max_size
        oldest_first = torch.arange(count) if count < self.memory._storage.max_size else (torch.arange(count) + cursor) % count
        data = self.memory._storage[oldest_first]
        absolute = np.arange(self.env_steps - count, self.env_steps)
        per_env = self.frames_per_batch // self.build.num_envs
        batch, within = absolute // self.frames_per_batch, absolute % self.frames_per_batch
        env, time = within // per_env, within % per_env
        order = np.lexsort((time, batch, env))
        action = data["action"]
        columns = {
            "observation": data["observation"].numpy(),
            "action": (action.reshape(count, 1) if action.ndim == 1 else action).numpy(),
            "reward": data["next", "reward"].reshape(count, 1).numpy(),
            "next_observation": data["next", "observation"].numpy(),
            "terminated": data["next", "terminated"].reshape(count, 1).numpy(),
            "truncated": data["next", "truncated"].reshape(count, 1).numpy(),
        }
        return env_contiguous(columns, order, env[order], wrapped=self.env_steps > count)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.collection.close()
            if not self.env.is_closed:
                self.env.close()
