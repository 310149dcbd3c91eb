"""``SkrlRolloutTrainer``: one rollout and its update per iteration, with the models and memory it trains.

A cell's backend module (``rlplug_ppo.skrl_backend``, ``rlplug_mappo.skrl_backend``, the A2C example)
mixes ``OnPolicyAgent`` (``rlplug.backends.skrl.rollout_agent``) into skrl's own agent class
(``class LossDelegatingPPO(OnPolicyAgent, PPO)``), whose ``update()`` is then upstream's with the minibatch
loss asked of the registered loss object, and subclasses ``SkrlRolloutTrainer`` with a ``make_agent`` method.
Everything here is imported only when a skrl on-policy cell is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from skrl.agents.torch import Agent
from skrl.memories.torch import RandomMemory
from skrl.models.torch import Model

from ...contract.hookspecs import Build
from ...contract.trainer import TrainerBase
from ...envs.wrappers import ended_returns
from ...errors import RecipeError
from ...families.onpolicy import ClipSchedule
from ...hooks import LOOPS
from ...hooks.views import write_back
from ...util.rng import capture_rng_state, restore_rng_state
from ..common.rollout_optimizer import rollout_optimizer
from ..common.seeding import configure_threads
from ...envs.torch_native import is_torch_env
from .env import env_state, load_env_state, make_torch_native_vector_env, make_vector_env, seed_skrl, true_next_observations
from .export import SkrlPolicyActing
from ..common.gsde import collecting, state_dependent_noise
from ..common.encoders import observation_encoder
from .memory import observation_memory
from .models import stochastic_policy, value_model
from .recurrent import RecurrentSpec
from .recurrent_agent import RecurrentOnPolicyAgent
from .rollout_agent import rollout_agent_arguments, rollout_config

# ---- models and memory --------------------------------------------------------------------------


def actor_critic_models(build: Build, gaussian_class: type | None = None) -> dict[str, Model]:
    """Separate policy (Categorical or Gaussian) and value MLPs, initialised from ``build.seed``.

    Reads the on-policy family's network settings: ``hidden_sizes``, ``activation``, ``initial_log_std``;
    each network reads its observations through its own copy of the cell's encoder and, with ``recurrent``
    set, its own LSTM or GRU core after it (``recurrent_hidden_size``, ``recurrent_layers``, ``sequence_length``).
    ``gaussian_class``: the Box policy's class, a ``GaussianPolicy`` subclass (RPO's perturbed mean).
    """
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    recurrent = RecurrentSpec.of(s, build.num_envs)
    noise = state_dependent_noise(build, s["rollouts"]) if gaussian_class is None else None  # gSDE (PPO's use_sde)
    return {
        "policy": stochastic_policy(*args, initial_log_std=s["initial_log_std"], encoder=observation_encoder(build), recurrent=recurrent,
                                    gaussian_class=gaussian_class, state_dependent=noise),
        "value": value_model(*args, encoder=observation_encoder(build), recurrent=recurrent),
    }


def rollout_memory(build: Build) -> RandomMemory:
    """One rollout: skrl's on-policy agents need ``memory_size == rollouts`` (unfilled float rows are NaN);
    uint8 images are stored as uint8."""
    return observation_memory(build, build.settings["rollouts"], build.num_envs)


def use_rollout_optimizer(agent: Agent, settings: Mapping[str, Any]) -> None:
    """Replace the Adam a single-agent skrl agent made for itself with the ``optimizer`` setting's (``rollout_optimizer``)
    over the same parameters and learning rate, and its learning-rate scheduler with one on the new optimiser. Before
    the first update, so nothing has stepped yet."""
    if settings["optimizer"] == "adam":
        return
    lr = agent.optimizer.param_groups[0]["lr"]
    parameters = [p for group in agent.optimizer.param_groups for p in group["params"]]
    agent.optimizer = agent.checkpoint_modules["optimizer"] = rollout_optimizer(parameters, lr, settings)
    if agent.scheduler is not None:
        kwargs = agent.cfg.learning_rate_scheduler_kwargs  # skrl's A2C_CFG keeps (policy's, value's)
        agent.scheduler = type(agent.scheduler)(agent.optimizer, **(kwargs[0] if isinstance(kwargs, (tuple, list)) else kwargs))


# ---- the trainer --------------------------------------------------------------------------------


def _module_states(modules: Mapping[str, Any]) -> dict[str, Any]:
    """``checkpoint_modules``' state dicts: ``{name: state}``, or ``{uid: {name: state}}`` (multi-agent)."""
    return {name: _module_states(m) if isinstance(m, Mapping) else m.state_dict() for name, m in modules.items()}


def _load_module_states(modules: Mapping[str, Any], states: Mapping[str, Any]) -> None:
    for name, module in modules.items():
        if isinstance(module, Mapping):
            _load_module_states(module, states[name])
        else:
            module.load_state_dict(states[name])


def rollout_tensors(agent: Any) -> dict[str, Any]:
    """The rollout memory's tensors by name (a multi-agent agent's: by agent, then name), as hooks see them."""
    memories = getattr(agent, "memories", None)
    if isinstance(memories, Mapping):
        return {uid: memory.tensors for uid, memory in memories.items()}
    return agent.memory.tensors


def _on_device(value: Any, device: str) -> Any:
    if isinstance(value, Mapping):
        return {key: _on_device(v, device) for key, v in value.items()}
    return value.to(device) if isinstance(value, torch.Tensor) else value


class SkrlRolloutTrainer(SkrlPolicyActing, TrainerBase):
    """Trainer of a skrl on-policy agent: one ``step()`` = one rollout of ``rollouts`` vector steps and the update.

    It owns skrl's SequentialTrainer loop; the agent updates at the rollout's end, in ``post_interaction``.

    Subclasses name ``agent_class`` (an ``OnPolicyAgent`` over skrl's agent) and ``config_class`` (its
    ``*_CFG``, filled by ``rollout_config``), or override ``agent_config(build)`` / ``make_agent(build)``;
    a cell with recurrent policies names ``recurrent_agent_class`` too (a ``RecurrentOnPolicyAgent`` over
    skrl's ``PPO_RNN``), made when the settings ask for a ``recurrent`` core. Its carried model states are
    part of the checkpoint.
    The defaults are single-agent (a Gymnasium vector env, its time-limit truncations, the returns of its
    episodes, the agent's ``policy``'s mean or argmax); the multi-agent base
    (``SkrlMultiAgentRolloutTrainer``) overrides them.
    """

    agent_class: type | None = None
    recurrent_agent_class: type | None = None
    config_class: type | None = None
    hook_loop = LOOPS["skrl", "on-policy"]

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        configure_threads()
        seed_skrl(build.seed)
        self.env = self.make_env(build)
        self.agent = self.make_agent(build)
        if "optimizer" in build.settings:  # a cell that declares the optimizer setting (A2C's RMSprop)
            use_rollout_optimizer(self.agent, build.settings)
        self.agent.trainer_hooks = self.hooks
        self.agent.init()
        self.agent.enable_training_mode(True)
        self.rollouts = build.settings["rollouts"]
        self.steps_per_iteration = self.rollouts * build.num_envs
        # clip_schedule (PPO, MAPPO): the loss's ratio_clip, set before each update from the env steps done
        self.clip_schedule = ClipSchedule.of(build.settings, "ratio_clip", build.recipe.steps)
        if self.clip_schedule and self.clip_schedule.kind != "constant" and not hasattr(self.agent.loss, "ratio_clip"):
            raise RecipeError(f"clip_schedule '{self.clip_schedule.kind}' needs a loss with a ratio_clip attribute; "
                              f"{type(self.agent.loss).__name__} has none")  # fmt: skip
        # skrl without time-limit bootstrapping cuts GAE only at `terminated`: a truncated step would
        # bootstrap from the next stored observation, under SAME_STEP autoreset the next episode's first
        # state (Pendulum, where every episode is truncated, then never learns). rlplug's meaning of
        # bootstrap_truncated=false, as on its TorchRL backend: a time-limit cut ends the return.
        self.bootstrap_truncated = build.settings.get("time_limit_bootstrap", False)
        self.total_timesteps = max(1, build.recipe.steps // build.num_envs)
        self.episodes_on_device = is_torch_env(build.env_id)
        self._observations, _ = self.env.reset()
        # gymnasium envs have no global state: skip the per-step (exception-raising) env.state() call
        self._states = self.env.state()
        self._has_states = self._states is not None

    def make_env(self, build: Build) -> Any:
        if is_torch_env(build.env_id):  # batched tensors on the env's device, through skrl's IsaacLab wrapper
            return make_torch_native_vector_env(
                build.env_id, build.env_kwargs, build.num_envs, build.seed, build.device, build.env_spec.clip_actions
            )
        return make_vector_env(build.env_spec, None, build.num_envs, build.seed, build.device)

    def agent_config(self, build: Build) -> Any:
        return rollout_config(build, self.config_class)

    def make_agent(self, build: Build) -> Agent:
        agent_class = self.recurrent_agent_class if build.settings.get("recurrent") else self.agent_class
        if agent_class is None or self.config_class is None:
            which = "recurrent_agent_class" if build.settings.get("recurrent") else "agent_class"
            raise NotImplementedError(f"{type(self).__name__} names no {which} and config_class (or overrides make_agent)")
        return agent_class(cfg=self.agent_config(build), **rollout_agent_arguments(build))

    # -- one iteration ----------------------------------------------------------------------------

    def step(self) -> dict[str, float]:
        agent, env = self.agent, self.env
        observations, states = self._observations, self._states
        clip = self.scheduled_clip()
        timestep = self.env_steps // self.build.num_envs
        for step in range(self.rollouts):
            with torch.no_grad(), collecting(getattr(agent, "policy", None)):  # gSDE's matrices, where the policy has them
                actions, _ = agent.act(observations, states, timestep=timestep, timesteps=self.total_timesteps)
                next_observations, rewards, terminated, truncated, infos = env.step(actions)
                next_states = env.state() if self._has_states else None
                self.track_episodes(rewards, terminated, truncated, infos)
                stored_next_observations, stored_terminated, stored_truncated = self.stored_outcome(
                    next_observations, terminated, truncated, infos
                )
                agent.record_transition(
                    observations=observations,
                    states=states,
                    actions=actions,
                    rewards=rewards,
                    next_observations=stored_next_observations,
                    next_states=next_states,
                    terminated=stored_terminated,
                    truncated=stored_truncated,
                    infos=infos,
                    timestep=timestep,
                    timesteps=self.total_timesteps,
                )
            if step == self.rollouts - 1:  # the rollout is in memory: hooks see it before the update below
                tensors = rollout_tensors(agent)
                write_back(tensors, self.hooks.batch_process(tensors))
                self.hooks.pre_steps_log(tensors)
                self.hooks.pre_optim_steps()
            agent.post_interaction(timestep=timestep, timesteps=self.total_timesteps)
            observations, states = next_observations, next_states
            timestep += 1
        self._observations, self._states = observations, states
        self.env_steps += self.steps_per_iteration
        self.iterations += 1
        metrics = self._metrics()
        if clip is not None:
            metrics["train/clip_ratio"] = clip
        return metrics

    def scheduled_clip(self) -> float | None:
        """The clip of this iteration's update (SB3: once per update, its rollout counted as done), set on the loss
        when scheduled; ``None`` for a cell without a clip schedule."""
        if self.clip_schedule is None:
            return None
        clip = self.clip_schedule.at(self.env_steps + self.steps_per_iteration)
        if self.clip_schedule.kind != "constant":
            self.agent.loss.ratio_clip = clip
        return clip

    def track_episodes(self, rewards: Any, terminated: Any, truncated: Any, infos: Any) -> None:
        """The step's rewards and ends into ``self.episodes``; the env's own returns where it records them (``infos``)."""
        self.episodes.update(rewards, terminated | truncated, ended_returns(infos))

    def stored_outcome(self, next_observations: Any, terminated: Any, truncated: Any, infos: Any) -> tuple[Any, Any, Any]:
        """``(next observations, terminated, truncated)`` as the agent stores them: without bootstrapping a
        time-limit cut ends the return like a termination; with it, skrl bootstraps V(next observation) on
        truncated steps, which must be the state the episode was cut in (not the next one's first), and only
        where the episode did not terminate on the same step (skrl adds the bootstrap to every truncated
        step's reward; a step that ends in a terminal state has no value after it, as on TorchRL)."""
        if not self.bootstrap_truncated:
            return next_observations, terminated | truncated, truncated
        if self.episodes_on_device or truncated.any():  # (on the device: no host sync to ask)
            return true_next_observations(next_observations, infos), terminated, truncated & ~terminated
        return next_observations, terminated, truncated

    def _metrics(self) -> dict[str, float]:
        """The update's tracked values, then clear them (skrl only clears when it writes, §14.9)."""
        tracked = self.agent.tracking_data
        metrics = self.update_metrics(tracked)
        metrics["train/update_ms"] = tracked["Stats / Algorithm update time (ms)"][-1]
        episode_return = self.episodes.pop_mean()
        if episode_return is not None:
            metrics["train/episode_return"] = episode_return
        tracked.clear()
        return metrics

    def logged_metrics(self) -> frozenset[str]:
        names = {f"loss/{name}" for name in self.agent.logged_terms} | {"train/lr", "train/update_ms", "train/episode_return"}
        if type(self).update_metrics is SkrlRolloutTrainer.update_metrics and not hasattr(self.build.action_space, "n"):
            names.add("train/policy_std")  # a Gaussian policy's (a categorical one tracks NaN, left out of the row)
        if self.clip_schedule is not None:
            names.add("train/clip_ratio")
        return frozenset(names)

    def update_metrics(self, tracked: Mapping[str, list[float]]) -> dict[str, float]:
        metrics = {f"loss/{name}": tracked[f"Loss / {name}"][-1] for name in self.agent.logged_terms}
        metrics["train/lr"] = self.agent.optimizer.param_groups[0]["lr"]
        policy_std = tracked["Policy / Standard deviation"][-1]
        if np.isfinite(policy_std):
            metrics["train/policy_std"] = policy_std
        return metrics

    # -- checkpoints ------------------------------------------------------------------------------

    def snapshot_env(self) -> Any:
        """Mid-episode sub-envs: a resumed run steps on where this one was."""
        return env_state(self.env)

    def restore_env(self, state: Any) -> Any:
        """``None``, or the observations of new episodes when the env could not be resumed mid-episode."""
        return load_env_state(self.env, state)

    def state_dict(self) -> dict[str, Any]:
        agent = self.agent
        state = {"modules": _module_states(agent.checkpoint_modules)}
        if hasattr(agent, "scheduler"):  # single-agent skrl agents; skrl's checkpoint_modules miss it
            state["scheduler"] = agent.scheduler.state_dict() if agent.scheduler else None
        state.update(rollout=agent._rollout, env=self.snapshot_env(), observations=self._observations)
        if self._has_states:
            state["states"] = self._states
        if isinstance(agent, RecurrentOnPolicyAgent):  # the policy's and value's states mid-episode
            state["recurrent"] = agent.carried_states()
        return {**state, "counters": self.counters(), "hooks": self.hooks.state_dict(), "rng": capture_rng_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        agent = self.agent
        _load_module_states(agent.checkpoint_modules, state["modules"])
        if getattr(agent, "scheduler", None):
            agent.scheduler.load_state_dict(state["scheduler"])
        agent._rollout = int(state["rollout"])
        restarted = self.restore_env(state["env"])
        self._observations = _on_device(state["observations"] if restarted is None else restarted, self.build.device)
        if self._has_states:
            self._states = _on_device(state["states"], self.build.device)
        if isinstance(agent, RecurrentOnPolicyAgent):
            if restarted is None:
                agent.load_carried_states(state["recurrent"])
            else:  # new episodes: the states they start from are zeros
                agent.load_carried_states({role: [torch.zeros_like(s) for s in saved] for role, saved in state["recurrent"].items()})
        self.load_counters(state["counters"])
        self.hooks.load_state_dict(state.get("hooks"))  # None: a checkpoint from before hooks were saved
        restore_rng_state(state["rng"])

    def close(self) -> None:
        self.env.close()
