"""TorchRL building blocks every on-policy cell shares: actor-critic modules, the rollout buffer,
learning-rate schedules, and the trainer that owns the collect / advantages / epochs loop.

A cell's backend module (``rlplug_ppo.torchrl_backend``, ``rlplug_mappo.torchrl_backend``, the A2C
example) builds its models and its registered loss (a ``LossModule`` with a value estimator) and
subclasses ``TorchRLRolloutTrainer``; PPO needs nothing more, MAPPO points the trainer at its agent
group's keys. Everything here is imported only when a TorchRL on-policy cell is built.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict
from tensordict.nn import set_skip_existing
from torch import nn
from torchrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
from torchrl.envs import EnvBase, ExplorationType, set_exploration_type

from ...errors import RecipeError, UnknownNameError
from ...contract.hookspecs import Build
from ...contract.trainer import TrainerBase
from ...families.onpolicy import ClipSchedule
from ...hooks import LOOPS
from ...util.rng import capture_rng_state, restore_rng_state
from ...util.suggest import did_you_mean
from ..common.encoders import standardised_observations
from ..common.gsde import state_dependent_noise
from ..common.parallel import mean_over_ranks, sync_gradients
from ..common.rollout_optimizer import rollout_optimizer
from ..common.seeding import configure_threads, seed_everything
from .buffers import extend_quietly
from ...envs.torch_native import is_torch_env
from .env import make_env, returns_reader
from .torch_env import make_torch_native_env
from .export import plain_act, recurrent_policy_export, torchrl_policy_export
from .modules import (
    NORMALIZER_CONVENTIONS,
    RunningNormalizer,
    action_mask_key,
    find_module,
    gaussian_actor,
    observation_batch,
    observation_keys,
    observation_net,
    state_dependent_head,
    state_dependent_rollout_policy,
    stochastic_actor,
    then,
    value_operator,
)
from .recurrent import (
    ActingState,
    carry_hidden_states,
    cut_sequences,
    module_hidden_keys,
    recurrent_actor_critic,
    rollout_policy,
    sequence_count,
    state_shape,
    value_inputs,
)
from .rollout_collection import lean_obstacle, make_rollouts

# ---- models and memory --------------------------------------------------------------------------


def actor_critic_modules(build: Build, actor_output: nn.Module | None = None) -> dict[str, nn.Module]:
    """Separate actor (Categorical or Gaussian) and critic MLPs, initialised from ``build.seed``.

    Reads the on-policy family's network settings; with ``recurrent`` each network is ``features -> LSTM /
    GRU -> MLP head`` (``recurrent.recurrent_actor_critic``). With ``normalize_observations`` both networks
    start with the same ``RunningNormalizer``, so the collector's policy, the loss and
    ``act_deterministic`` all standardise observations identically and the statistics travel inside
    the actor's ``state_dict`` (``TorchRLRolloutTrainer`` updates them after each update). ``actor_output``: a module
    applied to the feed-forward actor's network output before the distribution's head (RPO's mean perturbation).
    """
    configure_threads()
    seed_everything(build.seed)
    s = build.settings
    # an image or Dict encoder scales its own input; standardising applies to observation vectors
    standardise = s.get("normalize_observations") and standardised_observations(build)
    convention = setting_choice(s, "normalizer_convention", NORMALIZER_CONVENTIONS)
    normalizer = RunningNormalizer(int(np.prod(build.observation_space.shape)), convention=convention) if standardise else None
    keys = observation_keys(build)

    if s.get("recurrent"):  # features -> LSTM / GRU -> MLP head (recurrent.py)
        return {name: module.to(build.device) for name, module in recurrent_actor_critic(build, normalizer).items()}

    def net(output_size: int) -> nn.Module:
        body = observation_net(build, output_size, s["hidden_sizes"], s["activation"])
        return body if normalizer is None else nn.Sequential(normalizer, body)

    def actor_net(output_size: int) -> nn.Module:
        return net(output_size) if actor_output is None else then(net(output_size), actor_output)

    noise = state_dependent_noise(build, s["frames_per_batch"] // build.num_envs)
    if noise is not None and actor_output is None:  # gSDE (a Box policy; the family refuses it elsewhere)
        actor = gaussian_actor(state_dependent_head(build, noise, before=normalizer), int(np.prod(build.action_space.shape)),
                               observation_key=keys)
    else:
        actor = stochastic_actor(actor_net, build.action_space, s["initial_log_std"], keys, mask_key=action_mask_key(build))
    return {"actor": actor.to(build.device), "critic": value_operator(net(1), keys).to(build.device)}


def rollout_buffer(build: Build) -> ReplayBuffer:
    """One batch of transitions; iterating it yields one epoch of minibatches without replacement. A
    recurrent cell's holds the batch's sequences (``recurrent.cut_sequences``) and draws whole ones."""
    s = build.settings
    if s.get("recurrent"):
        sequences, per_minibatch = sequence_count(s, build.num_envs)
        return ReplayBuffer(
            storage=LazyTensorStorage(sequences, device=build.device),
            sampler=SamplerWithoutReplacement(),
            batch_size=per_minibatch,
        )
    return ReplayBuffer(
        storage=LazyTensorStorage(s["frames_per_batch"], device=build.device),
        sampler=SamplerWithoutReplacement(),
        batch_size=s["minibatch_size"],
    )


# ---- learning-rate schedules --------------------------------------------------------------------

LR_SCHEDULES = ("constant", "linear", "kl_adaptive")


class LearningRateSchedule:
    """``constant``, ``linear`` (to zero over ``total_steps``) or ``kl_adaptive``; ``step(kl)`` once per epoch.

    ``kl_adaptive`` is skrl's ``KLAdaptiveLR`` rule: KL above ``kl_target * kl_factor`` divides the
    learning rate by ``lr_factor``, KL below ``kl_target / kl_factor`` multiplies it, and the result
    stays within ``[min_lr, max_lr]``. The learning rate itself lives in the optimiser's param groups
    (saved with the optimiser); this object only keeps its step count.
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        kind: str,
        *,
        total_steps: int = 1,
        kl_target: float = 0.008,
        min_lr: float = 1e-6,
        max_lr: float = 1e-2,
        kl_factor: float = 2.0,
        lr_factor: float = 1.5,
    ) -> None:
        if kind not in LR_SCHEDULES:
            raise UnknownNameError(f"unknown lr_schedule '{kind}'" + did_you_mean(kind, LR_SCHEDULES))
        self.optimizer = optimizer
        self.kind = kind
        self.total_steps = max(1, int(total_steps))
        self.kl_target = kl_target
        self.min_lr, self.max_lr = min_lr, max_lr
        self.kl_factor, self.lr_factor = kl_factor, lr_factor
        self.base_lrs = [group["lr"] for group in optimizer.param_groups]
        self.steps = 0

    @property
    def needs_kl(self) -> bool:
        return self.kind == "kl_adaptive"

    @property
    def lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def step(self, kl: float | None = None) -> None:
        self.steps += 1
        for group, base_lr in zip(self.optimizer.param_groups, self.base_lrs, strict=True):
            if self.kind == "linear":
                group["lr"] = base_lr * max(0.0, 1.0 - self.steps / self.total_steps)
            elif self.kind == "kl_adaptive" and kl is not None and math.isfinite(kl):
                if kl > self.kl_target * self.kl_factor:
                    group["lr"] = max(group["lr"] / self.lr_factor, self.min_lr)
                elif kl < self.kl_target / self.kl_factor:
                    group["lr"] = min(group["lr"] * self.lr_factor, self.max_lr)

    def state_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "steps": self.steps, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state["kind"] != self.kind:
            raise ValueError(f"checkpoint has lr_schedule '{state['kind']}', this run uses '{self.kind}'")
        self.steps = int(state["steps"])
        self.base_lrs = [float(lr) for lr in state["base_lrs"]]


# ---- where the loop follows skrl's PPO (rlplug_ppo.settings.TORCHRL_PARITY_SETTINGS) -----------------

ADVANTAGE_NORM_SCOPES = ("minibatch", "rollout")
VALUE_NORM_UPDATES = ("returns", "values_and_returns")
OBSERVATION_NORM_UPDATES = ("after_update", "first_epoch")


def setting_choice(settings: Mapping[str, Any], name: str, choices: tuple[str, ...]) -> str:
    """``settings[name]`` (the first choice when absent: the loop's behaviour before the setting existed),
    refused with one line when it is none of ``choices``."""
    value = settings.get(name, choices[0])
    if value not in choices:
        raise UnknownNameError(f"unknown {name} '{value}': expected one of {', '.join(choices)}" + did_you_mean(value, choices))
    return value


def standardise_advantages(advantage: torch.Tensor) -> torch.Tensor:
    """skrl's ``compute_gae`` standardisation, over the whole rollout: mean 0, std 1 (Bessel-corrected, + 1e-8)."""
    return (advantage - advantage.mean()) / (advantage.std() + 1e-8)


def loss_state(loss: nn.Module, state: Mapping[str, Any]) -> Mapping[str, Any]:
    """A saved loss state as ``loss`` names it. A functional TorchRL loss keeps its networks' parameters as
    ``actor_network_params.*`` / ``critic_network_params.*``; the same loss built with ``functional=False``
    (rlplug's PPO and MAPPO losses since 2026-12) names them ``actor_network.*`` / ``critic_network.*``:
    a checkpoint written before then is renamed, in the same order, so its run resumes."""
    if getattr(loss, "functional", True) or not any("_network_params." in key for key in state):
        return state
    return {key.replace("_network_params.", "_network.", 1): value for key, value in state.items()}


# ---- the trainer --------------------------------------------------------------------------------


class TorchRLRolloutTrainer(TrainerBase):
    """Trainer of a TorchRL on-policy loss: one ``step()`` = one rollout, its advantages, the update.

    ``collection`` gathers ``frames_per_batch`` transitions from ``num_envs`` envs (``rollout_collection``: the
    lean path by default, TorchRL's ``Collector`` with ``collector = true`` or where the lean path does not
    apply, ``collection_fallback`` then saying why; the same rollouts either way); the critic values
    every observation and next observation once, the loss's own value estimator turns them into
    advantages and value targets; then ``num_epochs`` passes of minibatches drawn without replacement
    from ``build.memory`` go through the registered loss (``build.loss``), whose optimised terms
    (``build.loss_entry.terms``) are summed, clipped by gradient norm and stepped with Adam (or the ``optimizer``
    setting's RMSprop) over
    ``loss.parameters()``.

    Settings read: ``frames_per_batch``, ``num_epochs``, ``max_grad_norm``, ``lr``,
    ``normalize_values``, and when the algorithm declares them ``lr_schedule`` / ``kl_target`` /
    ``total_updates``, ``kl_early_stop``, ``normalize_observations`` and ``bootstrap_truncated``
    (without it a time-limit cut ends the return), ``advantage_baseline`` (false: the value targets themselves are the
    advantages, REINFORCE without a baseline), and ``advantage_norm_scope`` (with
    ``normalize_advantage``), ``value_norm_update``, ``observation_norm_update`` and ``normalizer_convention``
    (``RunningNormalizer``'s): absent, the loop behaves as before they existed; PPO sets skrl's semantics
    (``rlplug_ppo.settings``). With ``recurrent``
    (``recurrent.py``) collection steps actor and critic together and stores both hidden states with every
    step, the critic values each step from the state stored with it, GAE runs over each env's whole rollout
    as before, and the buffer holds the rollout cut into ``sequence_length`` steps per env: minibatches of
    whole sequences, which the loss replays in TorchRL's recurrent mode from the stored state at each
    sequence's start (from zeros where ``is_init`` starts an episode inside one). The keys
    are a single-agent env's; a multi-agent cell sets ``observation_key``, ``value_key``,
    ``action_key``, ``done_key`` and ``terminated_key`` to its group's before ``__init__`` and
    overrides ``make_env``, ``step_rewards``, ``observation_batch`` and ``raw_envs``.
    """

    hook_loop = LOOPS["torchrl", "on-policy"]
    observation_key: Any = "observation"
    value_key: Any = "state_value"
    action_key: Any = "action"
    done_key: Any = "done"
    terminated_key: Any = "terminated"

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        configure_threads()
        seed_everything(build.seed)
        s = build.settings
        # a single-agent cell reads its keys from the observation space (a Dict's keys); a multi-agent
        # cell has set its group's observation_key
        self.observation_keys = observation_keys(build) if self.observation_key == "observation" else [self.observation_key]
        if s["frames_per_batch"] % build.num_envs:
            raise ValueError(f"frames_per_batch {s['frames_per_batch']} is not a multiple of num_envs {build.num_envs}")
        self.actor, self.critic = build.models["actor"], build.models["critic"]
        # recurrent (recurrent.py): the update replays sequences of this many steps; 0 for feed-forward
        self.sequence_length = int(s["sequence_length"]) if s.get("recurrent") else 0
        self.critic_hidden_keys = module_hidden_keys(self.critic) if self.sequence_length else []
        self.acting_state = ActingState(self.actor) if self.sequence_length else None
        if self.sequence_length:
            sequence_count(s, build.num_envs)  # refuses a length that does not divide each env's rollout
            self.recurrent_state_shape = state_shape(self.actor)
        self.loss, self.memory = build.loss, build.memory
        self.terms = tuple(build.loss_entry.terms)
        self.logged_terms = self.terms + tuple(t for t in build.loss_entry.reported if t not in self.terms)
        self.steps_per_iteration = s["frames_per_batch"]
        self.num_epochs = s["num_epochs"]
        self.max_grad_norm = s["max_grad_norm"]
        self.kl_early_stop = s.get("kl_early_stop", 0.0)
        self.bootstrap_truncated = s.get("bootstrap_truncated", False)
        self.advantage_baseline = s.get("advantage_baseline", True)
        self.action_bounds = None
        if isinstance(build.action_space, gym.spaces.Box):
            space = build.action_space
            self.action_bounds = tuple(torch.as_tensor(b, dtype=torch.float32, device=build.device) for b in (space.low, space.high))

        self.observation_normalizer = find_module(self.actor, RunningNormalizer) if s.get("normalize_observations") else None
        # normalize_values: the critic learns standardised returns (targets of a stable scale whatever
        # the reward scale), GAE needs returns in reward units. So: critic output -> denormalise ->
        # GAE -> update the statistics with the new returns -> standardise targets and old values
        # with them for the critic loss (and its value clip). value_norm_update = "values_and_returns"
        # is skrl's value preprocessor exactly: statistics from the values too, +-5 clip on the way out.
        convention = setting_choice(s, "normalizer_convention", NORMALIZER_CONVENTIONS)
        self.value_normalizer = RunningNormalizer(1, convention=convention).to(build.device) if s["normalize_values"] else None
        self.value_norm_update = setting_choice(s, "value_norm_update", VALUE_NORM_UPDATES)
        self.observation_norm_update = setting_choice(s, "observation_norm_update", OBSERVATION_NORM_UPDATES)
        self.rollout_advantage_norm = bool(s.get("normalize_advantage")) and (
            setting_choice(s, "advantage_norm_scope", ADVANTAGE_NORM_SCOPES) == "rollout"
        )

        # loss.parameters() rather than the models': a registered loss may own extra parameters; Adam unless the
        # cell declares the optimizer setting (A2C's RMSprop)
        self.optimizer = rollout_optimizer(self.optimised_parameters(), s["lr"], s)
        # what the gradient norm clips, listed once: loss.parameters() walks every submodule on each minibatch
        self.clipped_parameters = list(self.optimised_parameters())
        self.lr_schedule = LearningRateSchedule(
            self.optimizer, s.get("lr_schedule", "constant"), total_steps=s.get("total_updates", 1), kl_target=s.get("kl_target", 0.008)
        )
        if (self.lr_schedule.needs_kl or self.kl_early_stop) and "kl_approx" not in self.logged_terms:
            raise ValueError("kl_adaptive and kl_early_stop need a loss that reports a 'kl_approx' term")
        # clip_schedule (PPO, MAPPO): ClipPPOLoss's clip_epsilon buffer (what its forward and the lean one clip
        # with), set before each update from the env steps done
        self.clip_schedule = ClipSchedule.of(s, "clip_epsilon", build.recipe.steps)
        if self.clip_schedule and self.clip_schedule.kind != "constant" and "clip_epsilon" not in dict(self.loss.named_buffers()):
            raise RecipeError(f"clip_schedule '{self.clip_schedule.kind}' needs a loss with a clip_epsilon buffer (ClipPPOLoss "
                              f"built with a float clip_epsilon); {type(self.loss).__name__} has none")  # fmt: skip

        self.env = self.make_env(build)
        self.returns_reader = returns_reader(self.env)  # the env's own episode returns, where it records them
        policy = state_dependent_rollout_policy(self.actor) or self.actor  # gSDE's draws, or the actor's samples
        if self.sequence_length:
            # the critic steps with the actor, so its hidden state is carried and stored with each step too
            policy = rollout_policy(self.actor, self.critic)
            carry_hidden_states(self.env, policy)
        # the lean path unless the setting collector = true asks for TorchRL's Collector; where the lean path
        # does not apply (multi-agent, info entries, ...), the Collector, and collection_fallback says why
        self.collection_fallback = None if s.get("collector", False) else lean_obstacle(self.env, bool(self.sequence_length))
        lean = not s.get("collector", False) and self.collection_fallback is None
        self.collection = make_rollouts(lean, self.env, policy, build.num_envs, s["frames_per_batch"] // build.num_envs)
        self._batches = self.collection
        self._closed = False

    def optimised_parameters(self) -> Any:
        """What the optimiser steps: the loss's parameters (a cell whose policy steps otherwise, TRPO's by natural
        gradient, names its critic's)."""
        return self.loss.parameters()

    @property
    def collector(self) -> Any:
        """TorchRL's ``Collector`` when the rollouts come from one (``collector = true`` or a fallback), else ``None``."""
        return getattr(self.collection, "collector", None)

    def make_env(self, build: Build) -> EnvBase:
        if is_torch_env(build.env_id):  # a batched EnvBase on the env's device, stepped by the collector directly
            return make_torch_native_env(build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device,
                                             build.env_spec.clip_actions)
        return make_env(build.env_spec, None, build.num_envs, build.seed, build.device)

    # -- one iteration ----------------------------------------------------------------------------

    def step(self) -> dict[str, float]:
        batch = next(self._batches)
        clip = self.scheduled_clip(self.env_steps + batch.numel())
        self._track_episodes(batch)
        batch = self.hooks.batch_process(batch)
        self.hooks.pre_steps_log(batch)
        with torch.no_grad():
            self.compute_advantages(batch)
        extend_quietly(self.memory, self.memory_rows(batch))
        self.hooks.pre_optim_steps()
        metrics = self.update(batch)
        if self.observation_normalizer is not None and self.observation_norm_update == "after_update":
            # after the update: the batch was collected and optimised under the same statistics,
            # so the first minibatch's probability ratios are exactly 1
            self.observation_normalizer.update(batch[self.observation_key])
        self.env_steps += batch.numel()
        self.iterations += 1
        episode_return = self.episodes.pop_mean()
        if episode_return is not None:
            metrics["train/episode_return"] = episode_return
        if clip is not None:
            metrics["train/clip_ratio"] = clip
        return metrics

    def scheduled_clip(self, steps_done: int) -> float | None:
        """The clip of the update after ``steps_done`` env steps (SB3: once per update, its rollout counted as done),
        set on the loss when scheduled; ``None`` for a cell without a clip schedule."""
        if self.clip_schedule is None:
            return None
        clip = self.clip_schedule.at(steps_done)
        if self.clip_schedule.kind != "constant":
            self.loss.clip_epsilon = clip  # a schedulable buffer: copied in place, device and dtype kept
        return clip

    def memory_rows(self, batch: TensorDict) -> TensorDict:
        """What the rollout buffer holds of a ``[num_envs, steps]`` batch: its transitions, or (recurrent) its
        sequences of ``sequence_length`` consecutive steps of one env."""
        return cut_sequences(batch, self.sequence_length) if self.sequence_length else batch.reshape(-1)

    def step_rewards(self, batch: TensorDict) -> torch.Tensor:
        """``[num_envs, steps]`` rewards the training returns sum (multi-agent: the agents' mean)."""
        return batch["next", "reward"].reshape(batch.shape)

    def _track_episodes(self, batch: TensorDict) -> None:
        # as the tracker keeps them: host arrays, or tensors on a torch-native env's device
        rewards = self.episodes.local(self.step_rewards(batch))
        dones = self.episodes.local(batch["next", "done"].reshape(batch.shape))
        reader = self.returns_reader
        for t in range(batch.shape[1]):
            done = dones[:, t]
            self.episodes.update(rewards[:, t], done, reader.take(done) if reader else None)

    def compute_advantages(self, batch: TensorDict) -> None:
        """Values of every observation and next observation in one critic call, then the loss's estimator.
        A recurrent critic reads each step with the hidden states the rollout stored (before and after it)."""
        if self.sequence_length:
            inputs = value_inputs(batch, self.observation_keys, self.critic_hidden_keys)
        else:
            observations = {key: torch.stack([batch[key], batch["next", key]]) for key in self.observation_keys}
            inputs = TensorDict(observations, batch_size=[2, *batch.shape])
        values = self.critic(inputs)[self.value_key]
        if self.value_normalizer is not None:
            if self.value_norm_update == "values_and_returns":
                # skrl's inverse scaling clips the standardised prediction to the scaler's +-5 first
                values = values.clamp(-self.value_normalizer.clip, self.value_normalizer.clip)
            values = self.value_normalizer.denormalize(values)
        batch[self.value_key], batch["next", self.value_key] = values[0], values[1]
        if not self.bootstrap_truncated:
            # a time-limit cut then ends the return like a real termination
            batch["next", self.terminated_key] = batch["next", self.done_key].clone()
        # the values are already in the batch: skip_existing stops the estimator recomputing them
        with set_skip_existing(True):
            self.loss.value_estimator(batch)
        if not self.advantage_baseline:  # REINFORCE without a baseline: the return itself weighs each log-probability
            batch["advantage"] = batch["value_target"].clone()
        if self.value_normalizer is not None:
            if self.value_norm_update == "values_and_returns":
                # skrl's order: statistics updated with the values, values standardised, then the same
                # with the returns (so the two are standardised with slightly different statistics)
                self.value_normalizer.update(batch[self.value_key])
                batch[self.value_key] = self.value_normalizer(batch[self.value_key])
                self.value_normalizer.update(batch["value_target"])
                batch["value_target"] = self.value_normalizer(batch["value_target"])
            else:
                self.value_normalizer.update(batch["value_target"])
                batch["value_target"] = self.value_normalizer(batch["value_target"])
                batch[self.value_key] = self.value_normalizer(batch[self.value_key])
        if self.rollout_advantage_norm:
            batch["advantage"] = standardise_advantages(batch["advantage"])

    def logged_metrics(self) -> frozenset[str]:
        names = {f"loss/{name}" for name in self.logged_terms}
        names |= {"train/lr", "train/minibatches", "train/kl_early_stopped", "train/episode_return"}
        return frozenset(names | ({"train/clip_ratio"} if self.clip_schedule is not None else set()))

    def update(self, batch: TensorDict, only_terms: tuple[str, ...] | None = None) -> dict[str, float]:
        """Epochs of minibatches through the loss, its ``terms`` summed and stepped; ``only_terms`` names the ones
        optimised and logged instead (TRPO's value epochs: the critic's term)."""
        terms = self.terms if only_terms is None else only_terms
        logged_terms = self.logged_terms if only_terms is None else only_terms
        logged: list[list[torch.Tensor]] = []  # per optimised minibatch, logged_terms in order
        stopped_early = False
        for epoch in range(self.num_epochs):
            epoch_batch = self.hooks.pre_epoch(batch)
            if self.hooks.has("pre_epoch"):  # a hook prepared the epoch's data (TorchRL's ValueEstimatorHook)
                extend_quietly(self.memory, self.memory_rows(epoch_batch))
            epoch_kl: list[torch.Tensor] = []
            stop = False
            for minibatch in self.memory:
                if stop:
                    continue  # drain the sampler so the next epoch starts on a fresh permutation
                minibatch = self.hooks.process_optim_batch(minibatch)
                if epoch == 0 and self.observation_normalizer is not None and self.observation_norm_update == "first_epoch":
                    # skrl: each minibatch of the first epoch updates the statistics just before it is read
                    self.observation_normalizer.update(minibatch[self.observation_key])
                out = self.hooks.process_loss(minibatch, self.loss(minibatch))
                if "kl_approx" in out.keys():
                    epoch_kl.append(out["kl_approx"].detach())
                # ranks decide on their mean KL, so all of them stop (or go on) together
                if self.kl_early_stop and epoch_kl and mean_over_ranks(epoch_kl[-1]).item() > self.kl_early_stop:
                    stop = stopped_early = True
                    continue
                total = sum(out[name] for name in terms)
                self.optimizer.zero_grad(set_to_none=True)
                total.backward()
                sync_gradients(self.optimizer)  # data-parallel runs: the mean gradient over ranks
                if self.max_grad_norm:
                    nn.utils.clip_grad_norm_(self.clipped_parameters, self.max_grad_norm)
                self.optimizer.step()
                self.hooks.post_optim()
                logged.append([out[name].detach() for name in logged_terms])
            kl = mean_over_ranks(torch.stack(epoch_kl).mean()).item() if epoch_kl and self.lr_schedule.needs_kl else None
            self.lr_schedule.step(kl)
            self.hooks.post_epoch(batch)

        with torch.no_grad():  # one reduction per update, not one per minibatch
            means = torch.stack([torch.stack(row) for row in logged]).mean(0).tolist() if logged else []
        metrics = {f"loss/{name}": value for name, value in zip(logged_terms, means)}
        metrics["train/lr"] = self.lr_schedule.lr
        metrics["train/minibatches"] = float(len(logged))
        metrics["train/kl_early_stopped"] = float(stopped_early)
        return metrics

    # -- evaluation -------------------------------------------------------------------------------

    def observation_batch(self, observations: np.ndarray) -> TensorDict:
        """A batch of raw observations as the actor reads them."""
        return observation_batch(observations, self.build.device)

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:
        """A recurrent actor acts from the hidden state the previous call left (zeros for a new batch)."""
        inputs = self.observation_batch(observations)
        if self.acting_state is not None:
            inputs = self.acting_state.inputs(inputs)
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            output = self.actor(inputs)
        if self.acting_state is not None:
            self.acting_state.carry(output)
        action = output[self.action_key]
        if self.action_bounds is not None:
            action = torch.clamp(action, *self.action_bounds)
        return action.cpu().numpy()

    def reset_acting_state(self) -> None:
        if self.acting_state is not None:
            self.acting_state.reset()

    def evaluation_act(self) -> Any:
        return plain_act(self)

    def export_policy(self) -> nn.Module:
        """``act_deterministic`` as one module: the actor's network (normaliser and encoder inside), its
        argmax or Gaussian mean, clamped into the Box bounds (one over ``[B, n_agents, obs]`` multi-agent).
        A recurrent actor's takes and returns its hidden state too (``recurrent_policy_export``)."""
        if self.sequence_length:
            return recurrent_policy_export(self.build, self.actor, clamp=self.action_bounds is not None)
        return torchrl_policy_export(self.build, self.actor, clamp=self.action_bounds is not None)

    # -- checkpoints ------------------------------------------------------------------------------

    def raw_envs(self) -> list[Any] | None:
        """The library envs under the TorchRL wrapper whose state ``collector_state`` must save too."""
        return None

    def state_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "loss": self.loss.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "lr_schedule": self.lr_schedule.state_dict(),
            "value_normalizer": None if self.value_normalizer is None else self.value_normalizer.state_dict(),
            "collector": self.collection.state_dict(self.raw_envs()),  # mid-episode envs and the next step's carrier
            "memory": self.memory.state_dict(),  # the minibatch sampler's position decides the next permutation
            "counters": self.counters(),
            "hooks": self.hooks.state_dict(),
            "rng": capture_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.actor.load_state_dict(state["actor"])
        self.critic.load_state_dict(state["critic"])
        self.loss.load_state_dict(loss_state(self.loss, state["loss"]))
        self.optimizer.load_state_dict(state["optimizer"])
        self.lr_schedule.load_state_dict(state["lr_schedule"])
        if self.value_normalizer is not None:
            self.value_normalizer.load_state_dict(state["value_normalizer"])
        self.collection.load_state_dict(state["collector"], self.raw_envs())
        self.memory.load_state_dict(state["memory"])
        self.load_counters(state["counters"])
        self.hooks.load_state_dict(state.get("hooks"))  # None: a checkpoint from before hooks were saved
        restore_rng_state(state["rng"])

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.collection.close()
            if not self.env.is_closed:
                self.env.close()
