"""A skrl cell's deterministic policy, to act with (``Trainer.act_deterministic``) and to export
(``Trainer.export_policy``): the agent's observation preprocessor (a ``RunningStandardScaler``), the
model's ``compute`` and what becomes of its output, as one module of plain torch modules. A recurrent
policy's module takes and returns its hidden state too (``rlplug.backends.common.export``'s contract), and
its acting carries that state from one call to the next."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from skrl.models.torch import CategoricalMixin, Model
from skrl.resources.preprocessors.torch import RunningStandardScaler
from torch import nn

from ...errors import ExportUnsupportedError
from ..common.export import Argmax, ClampToBounds, ExportedPolicy, policy_signature
from .models import flat_observations
from .settings import PooledRunningStandardScaler
from .recurrent import pack_states, unpack_states

THEN = ("mean_or_argmax", "argmax", "output")
"""What ``SkrlDeterministicPolicy`` does with the model's output, besides calling a method of the model."""


class SkrlDeterministicPolicy(nn.Module):
    """``then(model.compute({"observations": preprocessor(x)}))`` for flat float32 ``[B, size]`` observations.

    ``then``: ``"mean_or_argmax"`` (the model's own ``deterministic_actions(output)`` where it has one,
    SAC's squashed Gaussian; else ``policy_mean_or_argmax``: argmax of a Categorical policy's logits, a
    Gaussian's mean clamped into the action bounds), ``"argmax"`` (a Q-network), ``"output"`` (the output
    is the action: TD3's policy, IQL's bounded mean), or the name of a method of ``model`` that maps the
    output to the action.
    """

    def __init__(self, model: Model, preprocessor: nn.Module | None = None, then: str = "mean_or_argmax", role: str = "policy") -> None:
        super().__init__()
        self.model = model
        self.preprocessor = preprocessor
        self.role = role
        self.method = None
        if then == "mean_or_argmax" and callable(getattr(model, "deterministic_actions", None)):
            self.then, self.method = nn.Identity(), "deterministic_actions"
        elif then == "mean_or_argmax":
            discrete = isinstance(model, CategoricalMixin)
            self.then = Argmax() if discrete else ClampToBounds(model.action_space.low, model.action_space.high)
        elif then == "argmax":
            self.then = Argmax()
        elif then == "output":
            self.then = nn.Identity()
        elif callable(getattr(model, then, None)):
            self.then, self.method = nn.Identity(), then
        else:
            raise ValueError(f"then must be one of {', '.join(THEN)} or a method of {type(model).__name__}, got {then!r}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.preprocessor is not None:
            x = self.preprocessor(x)
        return self.head(x)

    def head(self, x: torch.Tensor) -> torch.Tensor:
        """The action from preprocessed observations."""
        output, _ = self.model.compute({"observations": x, "states": None}, role=self.role)
        if self.method is not None:
            output = getattr(self.model, self.method)(output)
        return self.then(output)


class FrozenStandardScaler(nn.Module):
    """skrl's ``RunningStandardScaler`` at evaluation (``train=False``), its statistics read once: the same
    operations on the same values (``clamp((x - mean) / (sqrt(var) + eps))``), without recomputing the
    denominator and casting the statistics on every call. For one evaluation, while the statistics stand still."""

    def __init__(self, scaler: nn.Module) -> None:
        super().__init__()
        self.mean = scaler.running_mean.float()
        self.denominator = torch.sqrt(scaler.running_variance.float()) + scaler.epsilon
        self.clip = scaler.clip_threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp((x - self.mean) / self.denominator, min=-self.clip, max=self.clip)


class SkrlRecurrentDeterministicPolicy(SkrlDeterministicPolicy):
    """``SkrlDeterministicPolicy`` of a model with a recurrent core: ``forward(x, hidden) -> (action, hidden)``,
    ``hidden`` float32 ``[B, layers, width]`` (``rlplug.backends.common.export``; zeros start an episode)."""

    def forward(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        # (no value here is named "hidden": the ONNX exporter would rename the file's "hidden" input around it)
        if self.preprocessor is not None:
            x = self.preprocessor(x)
        states = unpack_states(state, self.model.recurrent.spec.states)
        output, outputs = self.model.compute({"observations": x, "states": None, "rnn": states}, role=self.role)
        if self.method is not None:
            output = getattr(self.model, self.method)(output)
        return self.then(output), pack_states(outputs["rnn"])


def deterministic_policy_module(model: Model, preprocessor: nn.Module | None = None, then: str = "mean_or_argmax",
                                role: str = "policy") -> SkrlDeterministicPolicy:  # fmt: skip
    """``SkrlDeterministicPolicy``, or its recurrent form for a model with a recurrent core."""
    if getattr(model, "recurrent", None) is not None:
        return SkrlRecurrentDeterministicPolicy(model, preprocessor, then, role)
    return SkrlDeterministicPolicy(model, preprocessor, then, role)


def preprocessor_module(preprocessor: Any) -> nn.Module | None:
    """An agent's ``_observation_preprocessor`` as a module to export: the scaler itself, or ``None`` for
    skrl's no-op ``_empty_preprocessor``."""
    if preprocessor is None or isinstance(preprocessor, nn.Module):
        return preprocessor
    if getattr(preprocessor, "__name__", "") == "_empty_preprocessor":
        return None
    raise ExportUnsupportedError(f"the observation preprocessor {preprocessor!r} is not a torch module and cannot be exported")


def skrl_policy_export(
    build: Any, model: Model, preprocessor: Any = None, then: str = "mean_or_argmax", role: str = "policy"
) -> ExportedPolicy:
    """The ``ExportedPolicy`` of a single-agent skrl cell whose ``act_deterministic`` is
    ``then(model.compute(preprocessor(flat_observations(observations))))`` (see ``SkrlDeterministicPolicy``).

    ``preprocessor`` is the agent's ``_observation_preprocessor`` (skrl's no-op is left out). The module
    shares the trainer's parameters and statistics: save it (``rlplug export``) before training on. A
    recurrent model's module takes and returns its ``hidden`` state as well.
    """
    policy = deterministic_policy_module(model, preprocessor_module(preprocessor), then, role)
    recurrent = getattr(model, "recurrent", None)
    hidden = None if recurrent is None else recurrent.spec.export_shape
    return ExportedPolicy(policy, policy_signature(build, hidden=hidden), flatten=True)


class JointPolicies(nn.Module):
    """Every agent's deterministic action from its own observation: ``[B, n_agents, obs_dim]`` in,
    ``[B, n_agents(, act_dim)]`` out (``joint_deterministic_actions`` as a module)."""

    def __init__(self, policies: Sequence[nn.Module]) -> None:
        super().__init__()
        self.policies = nn.ModuleList(policies)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        # several inputs (a Dict's keys, e.g. action_mask and observation): each agent's concatenated, as skrl flattens them
        observations = torch.cat([x.reshape(*x.shape[:2], -1) for x in inputs], dim=-1)
        return torch.stack([policy(observations[:, i]) for i, policy in enumerate(self.policies)], dim=1)


def skrl_joint_policy_export(build: Any, policies: Mapping[str, Model], agents: Sequence[str]) -> ExportedPolicy:
    """The ``ExportedPolicy`` of a multi-agent skrl cell: one module over ``[B, n_agents, obs_dim]``
    observations (agents in ``agents`` order), each agent's policy mean or argmax on its own
    observation; a policy shared by all agents is stored once."""
    heads = {}
    for uid in agents:  # a shared policy: one head, the same module object for every agent
        policy = policies[uid]
        heads.setdefault(id(policy), SkrlDeterministicPolicy(policy))
    policy = JointPolicies([heads[id(policies[uid])] for uid in agents])
    return ExportedPolicy(policy, policy_signature(build))


class SkrlPolicyActing:
    """Deterministic acting and export from the agent's policy model: ``policy_role`` names the agent's
    model, ``policy_output`` what its ``compute`` output becomes (``SkrlDeterministicPolicy``:
    ``"mean_or_argmax"``, ``"argmax"``, ``"output"`` or a method of the model); observations go through
    the agent's observation preprocessor first. ``compute``, not ``act``: evaluating draws nothing from
    torch's RNG. A recurrent policy carries its hidden state from one call to the next, one row per
    observation, zeros after ``reset_acting_state`` or when the batch size changes."""

    policy_role = "policy"
    policy_output = "mean_or_argmax"
    _acting_hidden: torch.Tensor | None = None

    def deterministic_policy(self) -> SkrlDeterministicPolicy:
        if "_deterministic_policy" not in self.__dict__:  # the agent's models and preprocessor do not change
            model = getattr(self.agent, self.policy_role)
            preprocessor = preprocessor_module(self.agent._observation_preprocessor)
            self._deterministic_policy = deterministic_policy_module(model, preprocessor, self.policy_output, self.policy_role)
            self._deterministic_policy.to(self.build.device)
        return self._deterministic_policy

    @property
    def recurrent_state_shape(self) -> tuple[int, int] | None:
        recurrent = getattr(getattr(self.agent, self.policy_role), "recurrent", None)
        return None if recurrent is None else recurrent.spec.export_shape

    def reset_acting_state(self) -> None:
        self._acting_hidden = None

    def act_deterministic(self, observations: Any) -> Any:
        policy = self.deterministic_policy()
        x = flat_observations(observations, self.build.device)
        with torch.no_grad():
            if not isinstance(policy, SkrlRecurrentDeterministicPolicy):
                return policy(x).cpu().numpy()
            hidden = self._acting_hidden
            if hidden is None or len(hidden) != len(x):
                hidden = torch.zeros(len(x), *self.recurrent_state_shape, device=x.device)
            actions, self._acting_hidden = policy(x, hidden)
            return actions.cpu().numpy()

    def evaluation_act(self) -> Any:
        """``act_deterministic`` for one evaluation: the running scaler's statistics read once (``FrozenStandardScaler``)."""
        policy = self.deterministic_policy()
        scaler = policy.preprocessor
        # a subclass that scales otherwise keeps its own path (rlplug's pooled scaler only casts integer inputs,
        # which flat_observations already gives as float32)
        if (isinstance(policy, SkrlRecurrentDeterministicPolicy) or not isinstance(scaler, RunningStandardScaler)
                or type(scaler)._compute not in (RunningStandardScaler._compute, PooledRunningStandardScaler._compute)):
            return self.act_deterministic
        with torch.no_grad():
            scaler = FrozenStandardScaler(scaler)
        device = self.build.device

        def act(observations: Any) -> Any:
            with torch.no_grad():
                return policy.head(scaler(flat_observations(observations, device))).cpu().numpy()

        return act

    def export_policy(self) -> nn.Module:
        """``act_deterministic`` as one module: the observation preprocessor, the policy, its deterministic action."""
        agent = self.agent
        return skrl_policy_export(
            self.build, getattr(agent, self.policy_role), agent._observation_preprocessor, self.policy_output, self.policy_role
        )
