"""``RecurrentOnPolicyAgent``: skrl's ``PPO_RNN`` with rlplug's on-policy update (``OnPolicyAgent``).

Mixed in before skrl's agent class: ``class LossDelegatingRecurrentPPO(RecurrentOnPolicyAgent, PPO_RNN)``.
Upstream's (``PPO_RNN``): the models' RNN specification read in ``init()``, a memory tensor per state and
model (``rnn_policy_<i>``, ``rnn_value_<i>``), ``act()`` acting from the policy's carried states, the
states each transition was acted from stored with it, the carried states reset to zeros in the envs whose
episode ended. rlplug's: the update is ``OnPolicyAgent``'s (the registered loss, hook points, tracked
terms) over minibatches of whole sequences (``rlplug.backends.skrl.rollout_agent.sequence_minibatches``),
the rollout's last value read under the value's carried states, and a truncated step bootstrapped from the
value of its true next observation, as skrl's ``PPO`` does (``PPO_RNN`` uses the value of the step's own
observation).

One upstream slip is not kept: ``PPO_RNN.record_transition`` ends with ``_rnn_initial_states =
_rnn_final_states`` (one dict from then on), so from the second step on the next ``act()`` overwrites the
policy's "initial" states with its new ones before they are stored: the memory holds the state *after*
each step, and each training sequence starts one step late. Here the carried states are a copy, and what
is stored is the state the step was acted from: replaying a rollout's sequences from their stored states
gives back the log-probabilities and values of the rollout (a test checks it).
"""

from __future__ import annotations

from typing import Any

import torch
from skrl.agents.torch import Agent

from .rollout_agent import OnPolicyAgent

ROLES = ("policy", "value")


class RecurrentOnPolicyAgent(OnPolicyAgent):
    """Mixin for skrl's ``PPO_RNN`` (see the module doc); models declare their RNN as ``rlplug.backends.skrl.recurrent`` says."""

    def last_value_inputs(self) -> dict[str, Any]:
        return {"rnn": self._rnn_initial_states["value"]}

    def record_transition(
        self,
        *,
        observations: torch.Tensor,
        states: torch.Tensor,
        actions: torch.Tensor,
        rewards: torch.Tensor,
        next_observations: torch.Tensor,
        next_states: torch.Tensor,
        terminated: torch.Tensor,
        truncated: torch.Tensor,
        infos: Any,
        timestep: int,
        timesteps: int,
    ) -> None:
        """``PPO_RNN.record_transition``, but a truncated step's bootstrap value is V(true next observation) under
        the value's state after the step (skrl's ``PPO``), and an agent out of training mode keeps its states."""
        Agent.record_transition(
            self, observations=observations, states=states, actions=actions, rewards=rewards, next_observations=next_observations,
            next_states=next_states, terminated=terminated, truncated=truncated, infos=infos, timestep=timestep, timesteps=timesteps,
        )  # fmt: skip
        if not self.training:
            return
        self._current_next_observations = next_observations
        self._current_next_states = next_states
        if self.cfg.rewards_shaper is not None:
            rewards = self.cfg.rewards_shaper(rewards, timestep, timesteps)
        values, value_states = self._values(observations, states, self._rnn_initial_states["value"])
        if self.cfg.time_limit_bootstrap and truncated.any():
            next_values, _ = self._values(next_observations, next_states, value_states)
            rewards = rewards + self.cfg.discount_factor * next_values * truncated
        stored = {f"rnn_{role}_{i}": s.transpose(0, 1) for role in self._own_roles() for i, s in enumerate(self._rnn_initial_states[role])}
        self.memory.add_samples(
            observations=observations, states=states, actions=actions, rewards=rewards, terminated=terminated,
            truncated=truncated, log_prob=self._current_log_prob, values=values, **stored,
        )  # fmt: skip

        # the states the next step acts from: zeros where an episode ended
        self._rnn_final_states["value"] = self._rnn_final_states["policy"] if self.policy is self.value else value_states
        ended = (terminated | truncated).view(-1).nonzero(as_tuple=True)[0]
        if ended.numel():
            for role in self._own_roles():
                for state in self._rnn_final_states[role]:
                    state[:, ended] = 0
        self._rnn_initial_states = dict(self._rnn_final_states)

    def _values(self, observations: torch.Tensor, states: Any, rnn: list[torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """V(observations) from the value's states ``rnn`` (the value preprocessor inverted), and its next states."""
        with torch.autocast(device_type=self._device_type, enabled=self.cfg.mixed_precision):
            inputs = {"observations": self._observation_preprocessor(observations), "states": self._state_preprocessor(states), "rnn": rnn}
            values, outputs = self.value.act(inputs, role="value")
        return self._value_preprocessor(values, inverse=True), outputs.get("rnn", [])

    def _own_roles(self) -> tuple[str, ...]:
        """The models whose states are their own (a value that is the policy shares the policy's)."""
        return ("policy",) if self.policy is self.value else ROLES

    # -- checkpoints ------------------------------------------------------------------------------

    def carried_states(self) -> dict[str, list[torch.Tensor]]:
        """The states the next rollout step acts from, by model: what a resumed run needs to step on mid-episode."""
        return {role: [s.detach().clone() for s in self._rnn_initial_states[role]] for role in ROLES}

    def load_carried_states(self, saved: dict[str, list[torch.Tensor]]) -> None:
        states = {role: [s.to(self.device) for s in saved[role]] for role in ROLES}
        if self.policy is self.value:
            states["value"] = states["policy"]
        self._rnn_initial_states = states
        self._rnn_final_states = dict(states)
