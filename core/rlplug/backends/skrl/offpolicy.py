"""skrl building blocks every off-policy cell shares: target updaters and the trainer that steps the
environment and owes gradient steps.

A cell's backend module (``rlplug_sac.skrl_backend`` and its siblings) mixes ``StagedLossAgent``
(``.staged``) into skrl's agent class with its update stages, and subclasses ``SkrlOffPolicyTrainer``
naming that ``agent_class`` and its ``agent_config``. Everything here is imported only when a skrl
off-policy cell is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from ...families.offpolicy import gradient_steps_due
from ...contract.hookspecs import Build
from ...contract.trainer import TrainerBase
from ...envs.wrappers import ended_returns
from ...hooks import LOOPS
from ...util.rng import capture_rng_state, restore_rng_state
from ..common.encoders import flat_mask_columns, split_flat_mask
from ..common.seeding import configure_threads
from ..common.terms import TermMeans
from ...envs.torch_native import is_torch_env
from .env import env_state, load_env_state, make_torch_native_vector_env, make_vector_env, seed_skrl, true_next_observations
from .memory import SKRL_NAMES, load_memory_state, memory_state
from .staged import StagedAgentTrainer

# ---- target networks ----------------------------------------------------------------------------


class ModuleTargetUpdate:
    """Moves target networks towards their online networks; ``step()`` once per optimiser step.

    ``soft``: every ``period``-th step, ``target <- (1 - tau) * target + tau * online`` (skrl's
    ``update_parameters`` arithmetic, so the default losses reproduce skrl exactly). ``hard``: every
    ``period``-th step, ``target <- online``. The same object shape as TorchRL's ``SoftUpdate`` /
    ``HardUpdate`` (``step``, ``state_dict``), so a plugin can swap it through the target-updater hook.
    """

    def __init__(self, pairs: Sequence[tuple[nn.Module, nn.Module]], kind: str = "soft", tau: float = 0.005, period: int = 1) -> None:
        if kind not in ("soft", "hard"):
            raise ValueError(f"target update must be 'soft' or 'hard', got '{kind}'")
        self.kind, self.tau, self.period = kind, float(tau), max(1, int(period))
        self.targets = [p for target, _ in pairs for p in target.parameters()]
        self.sources = [p for _, online in pairs for p in online.parameters()]
        if len(self.targets) != len(self.sources):
            raise ValueError("each target network must have the same parameters as its online network")
        self.steps = 0

    @torch.no_grad()
    def step(self) -> None:
        self.steps += 1
        if self.steps % self.period:
            return
        if self.kind == "hard" or self.tau == 1.0:
            torch._foreach_copy_(self.targets, self.sources)
        else:
            torch._foreach_mul_(self.targets, 1.0 - self.tau)
            torch._foreach_add_(self.targets, torch._foreach_mul(self.sources, self.tau))

    def state_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "steps": self.steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.steps = int(state["steps"])


def module_target_update(build: Build, pairs: Sequence[tuple[nn.Module, nn.Module]]) -> ModuleTargetUpdate:
    """The updater the recipe's ``target_update`` / ``tau`` / ``target_update_period`` describe."""
    s = build.settings
    return ModuleTargetUpdate(pairs, s["target_update"], s["tau"], s["target_update_period"])


def hard_copy(target: nn.Module, online: nn.Module) -> None:
    """Start a target network equal to its online network (and out of autograd)."""
    target.load_state_dict(online.state_dict())
    target.requires_grad_(False)


# ---- trainer ------------------------------------------------------------------------------------


class SkrlOffPolicyTrainer(StagedAgentTrainer, TrainerBase):
    """Steps a skrl agent in a vector env, stores transitions, and takes the gradient steps it owes.

    One iteration collects ``log_every`` transitions (the last one stops at the budget). Until
    ``learning_starts`` transitions are in, actions are drawn uniformly from the action space with a
    generator seeded from ``build.seed`` (skrl's own ``random_timesteps`` draws from an unseeded space,
    reference §14.14). Every ``train_every`` vector steps, the agent takes the gradient steps
    ``utd_ratio`` says are due through ``agent.gradient_step()``, whose returned terms are logged.

    Subclasses name ``agent_class`` (a ``StagedLossAgent``) and ``agent_config(build)`` (or override
    ``make_agent``), and the policy to act and export with (``policy_role``, ``policy_output``).
    """

    hook_loop = LOOPS["skrl", "off-policy"]

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        configure_threads()
        seed_skrl(build.seed)
        s = build.settings
        self.on_device = is_torch_env(build.env_id)  # a torch-native env: its tensors never leave its device
        self.observation_space, self.action_space = self.agent_spaces(build)
        self.env = self.make_env(build)
        self.agent = self.make_agent(build)
        self.agent.use_batched_critics(bool(build.settings.get("batched_critics", False)))
        self.agent.trainer_hooks = self.hooks
        self.agent.init()
        self.agent.enable_training_mode(True)
        self.compile_stages()
        self.terms = TermMeans()
        self.num_envs = build.num_envs
        self.steps_per_iteration = build.num_envs
        self.log_every = s["log_every"]
        self.learning_starts, self.utd_ratio, self.train_every = s["learning_starts"], s["utd_ratio"], s["train_every"]
        self.random_warmup = self.random_warmup_steps(build)
        self.total_timesteps = max(1, build.recipe.steps // build.num_envs)
        self.gradient_steps = 0
        self.random_actions = gym.vector.utils.batch_space(self.action_space, build.num_envs)
        self.random_actions.seed(build.seed)
        # a torch-native env's warm-up actions are drawn on its device, from a generator of their own
        self.random_generator = torch.Generator(device=build.device) if self.on_device else None
        if self.random_generator is not None:
            self.random_generator.manual_seed(build.seed)
        self.is_discrete = isinstance(self.action_space, gym.spaces.Discrete)
        self.mask_columns = flat_mask_columns(self.observation_space)  # the warm-up draws valid actions only
        # skrl flips every model between train and eval mode around each update; that costs ~20 % of a
        # TD3 step here and only matters for models with dropout or batch norm
        self._mode_sensitive = any(
            isinstance(m, (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._NormBase))
            for model in self.agent.models.values() if model is not None for m in model.modules()
        )
        if not self._mode_sensitive:
            self.agent.enable_models_training_mode(True)
        self._observations, _ = self.env.reset()

    def make_env(self, build: Build) -> Any:
        """The skrl-wrapped vector env the loop steps: gymnasium's, or a torch-native env's on its device."""
        if self.on_device:
            return make_torch_native_vector_env(
                build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device, build.env_spec.clip_actions
            )
        return make_vector_env(build.env_spec, None, build.num_envs, build.seed, build.device)

    def agent_spaces(self, build: Build) -> tuple[gym.Space, gym.Space]:
        """``(observation, action)`` space of one env as the agent acts in it and the memory stores it: the build's.
        A team of agents seen as one (``SkrlTeamOffPolicyTrainer``) has joint ones."""
        return build.observation_space, build.action_space

    def random_warmup_steps(self, build: Build) -> int:
        """Transitions collected with uniformly random actions before the agent acts: ``learning_starts``."""
        return build.settings["learning_starts"]

    def snapshot_env(self) -> Any:
        """The env's state for a checkpoint (sub-envs mid-episode, their RNGs)."""
        return env_state(self.env)

    def restore_env(self, state: Any) -> torch.Tensor | None:
        """Restore ``snapshot_env``'s state: ``None`` when the episodes resume mid-way, else the first
        observations of new ones (``load_env_state``)."""
        return load_env_state(self.env, state)

    def step(self) -> dict[str, float]:
        agent, env, num_envs = self.agent, self.env, self.num_envs
        stop = self.env_steps + self.log_every
        if self.budget is not None:
            stop = min(stop, max(self.budget, self.env_steps + num_envs))
        observations = self._observations
        updates_before = self.gradient_steps
        while self.env_steps + num_envs <= stop:
            timestep = self.env_steps // num_envs
            with torch.no_grad():
                actions = self._actions(observations, timestep)
                next_observations, rewards, terminated, truncated, infos = env.step(actions)
                ended = terminated | truncated
                self.episodes.update(rewards, ended, ended_returns(infos))
                # a truncated step bootstraps from the state it was cut in, not the next episode's first
                # (on a torch-native env the final observations are a tensor: taken without asking the host)
                stored_next = true_next_observations(next_observations, infos) if self.on_device or ended.any() else next_observations
                transition = self.hooks.batch_process({
                    "observations": observations, "actions": actions, "rewards": rewards,
                    "next_observations": stored_next, "terminated": terminated, "truncated": truncated,
                })  # fmt: skip
                agent.record_transition(
                    **transition, states=None, next_states=None, infos=infos, timestep=timestep, timesteps=self.total_timesteps
                )
                self.hooks.pre_steps_log(transition)
            observations = next_observations
            self.env_steps += num_envs
            if (timestep + 1) % self.train_every == 0:
                self._train(timestep)
        self._observations = observations
        self.iterations += 1
        return self._metrics(self.gradient_steps - updates_before)

    def _actions(self, observations: torch.Tensor, timestep: int) -> torch.Tensor:
        if self.env_steps < self.random_warmup and self.random_generator is not None:
            return self._device_random_actions()
        if self.env_steps < self.random_warmup:
            mask = None
            if self.mask_columns is not None:
                rows = split_flat_mask(self.mask_columns, observations)[1].cpu().numpy().astype(np.int8)
                mask = tuple(rows)  # MultiDiscrete.sample: one Discrete mask per env
            sample = self.random_actions.sample(mask=mask)
            actions = torch.as_tensor(sample, device=self.build.device)
            return actions.reshape(self.num_envs, -1) if not self.is_discrete else actions.reshape(self.num_envs, 1)
        actions, _ = self.agent.act(observations, None, timestep=timestep, timesteps=self.total_timesteps)
        return actions

    def _device_random_actions(self) -> torch.Tensor:
        """Uniform actions drawn on a torch-native env's device: Box within its bounds, Discrete among its actions."""
        space, generator, device = self.build.action_space, self.random_generator, self.build.device
        if self.is_discrete:
            return torch.randint(int(space.n), (self.num_envs, 1), generator=generator, device=device)
        low = torch.as_tensor(space.low, dtype=torch.float32, device=device)
        high = torch.as_tensor(space.high, dtype=torch.float32, device=device)
        return low + (high - low) * torch.rand(self.num_envs, *space.shape, generator=generator, device=device)

    def _train(self, timestep: int) -> None:
        due = gradient_steps_due(self.env_steps, self.learning_starts, self.utd_ratio, self.gradient_steps)
        if not due:
            return
        if self._mode_sensitive:
            self.agent.enable_models_training_mode(True)
        self.hooks.pre_optim_steps()
        for _ in range(due):
            self.terms.add(self.agent.gradient_step(timestep=timestep, timesteps=self.total_timesteps))
            self.hooks.post_optim()
        if self._mode_sensitive:
            self.agent.enable_models_training_mode(False)
        self.gradient_steps += due

    def logged_metrics(self) -> frozenset[str]:
        names = {f"loss/{name}" for name in self.agent.logged_terms} | set(self.agent.extra_metrics())
        return frozenset(names | {"train/gradient_steps", "train/updates_this_iteration", "train/episode_return"})

    def _metrics(self, updates: int) -> dict[str, float]:
        metrics = {f"loss/{name}": value for name, value in self.terms.pop().items()}
        metrics.update(self.agent.extra_metrics())
        metrics["train/gradient_steps"] = float(self.gradient_steps)
        metrics["train/updates_this_iteration"] = float(updates)
        episode_return = self.episodes.pop_mean()
        if episode_return is not None:
            metrics["train/episode_return"] = episode_return
        self.agent.tracking_data.clear()  # skrl appends per step even with writes off (§14.9)
        return metrics

    # -- checkpoints ------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        agent = self.agent
        return {
            "modules": {name: module.state_dict() for name, module in agent.checkpoint_modules.items()},
            "agent": agent.extra_state(),
            "memory": memory_state(agent.memory),
            "env": self.snapshot_env(),  # mid-episode sub-envs: a resumed run steps on where this one was
            "observations": self._observations,
            "random_actions": self.random_actions.np_random.bit_generator.state,
            "random_generator": None if self.random_generator is None else self.random_generator.get_state(),
            "gradient_steps": self.gradient_steps,
            "counters": self.counters(),
            "hooks": self.hooks.state_dict(),
            "rng": capture_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        agent = self.agent
        for name, module in agent.checkpoint_modules.items():
            module.load_state_dict(state["modules"][name])
        agent.load_extra_state(state["agent"])
        load_memory_state(agent.memory, state["memory"])
        restarted = self.restore_env(state["env"])  # new episodes where the env could not be resumed
        self._observations = (state["observations"] if restarted is None else restarted).to(self.build.device)
        self.random_actions.np_random.bit_generator.state = state["random_actions"]
        if self.random_generator is not None:
            self.random_generator.set_state(state["random_generator"])
        self.gradient_steps = int(state["gradient_steps"])
        self.load_counters(state["counters"])
        self.hooks.load_state_dict(state.get("hooks"))  # None: a checkpoint from before hooks were saved
        restore_rng_state(state["rng"])

    def replay_transitions(self) -> dict[str, Any]:
        """The replay memory as numpy arrays by dataset key, oldest first, each env's steps contiguous
        (``rlplug dataset from-run``); continuous actions clipped to the bounds the env applied."""
        import numpy as np

        from ...data.datasets import env_contiguous

        memory = self.agent.memory
        rows = memory.memory_size if memory.filled else memory.memory_index
        oldest_first = (torch.arange(rows) + (memory.memory_index if memory.filled else 0)) % max(rows, 1)
        columns = {}
        for key, name in SKRL_NAMES.items():
            if name not in memory.tensors:
                continue
            tensor = memory.tensors[name][oldest_first]  # [rows, envs, size]
            columns[key] = tensor.transpose(0, 1).reshape(rows * self.num_envs, -1).cpu().numpy()
        if "truncated" not in columns:
            # skrl's DQN stores no truncation flag: a step whose next observation is not the following
            # step's observation ended its episode (the memory keeps the true final observation)
            following = np.roll(columns["observation"], -1, axis=0)
            ended = ~(columns["next_observation"] == following).all(axis=1) & ~columns["terminated"].reshape(-1)
            ended[rows - 1 :: rows] = False  # each env's last stored step: env_contiguous decides
            columns["truncated"] = ended
        if isinstance(self.build.action_space, gym.spaces.Box):
            columns["action"] = np.clip(columns["action"], self.build.action_space.low, self.build.action_space.high)
        env_of = np.repeat(np.arange(self.num_envs), rows)
        return env_contiguous(columns, np.arange(rows * self.num_envs), env_of, wrapped=bool(memory.filled))

    def close(self) -> None:
        self.env.close()

