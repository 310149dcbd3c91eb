"""Exporting a skrl cell's deterministic policy (``Trainer.export_policy``): the agent's observation
preprocessor (a ``RunningStandardScaler``), the model's ``compute`` and what the cell's
``act_deterministic`` does with its output, as one ``ExportedPolicy`` of plain torch modules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from skrl.models.torch import CategoricalMixin, Model
from torch import nn

from ...errors import ExportUnsupportedError
from ..common.export import Argmax, ClampToBounds, ExportedPolicy, policy_signature

THEN = ("mean_or_argmax", "argmax", "output")
"""What ``SkrlDeterministicPolicy`` does with the model's output, besides calling a method of the model."""


class SkrlDeterministicPolicy(nn.Module):
    """``then(model.compute({"observations": preprocessor(x)}))`` for flat float32 ``[B, size]`` observations.

    ``then``: ``"mean_or_argmax"`` (``policy_mean_or_argmax``: argmax of a Categorical policy's logits, a
    Gaussian's mean clamped into the action bounds), ``"argmax"`` (a Q-network), ``"output"`` (the output
    is the action: TD3's policy, IQL's bounded mean), or the name of a method of ``model`` that maps the
    output to the action (``"deterministic_actions"`` of SAC's squashed Gaussian).
    """

    def __init__(self, model: Model, preprocessor: nn.Module | None = None, then: str = "mean_or_argmax", role: str = "policy") -> None:
        super().__init__()
        self.model = model
        self.preprocessor = preprocessor
        self.role = role
        self.method = None
        if then == "mean_or_argmax":
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
        output, _ = self.model.compute({"observations": x, "states": None}, role=self.role)
        if self.method is not None:
            output = getattr(self.model, self.method)(output)
        return self.then(output)


def preprocessor_module(preprocessor: Any) -> nn.Module | None:
    """An agent's ``_observation_preprocessor`` as a module to export: the scaler itself, or ``None`` for
    skrl's no-op ``_empty_preprocessor``."""
    if preprocessor is None or isinstance(preprocessor, nn.Module):
        return preprocessor
    if getattr(preprocessor, "__name__", "") == "_empty_preprocessor":
        return None
    raise ExportUnsupportedError(f"the observation preprocessor {preprocessor!r} is not a torch module and cannot be exported")


def skrl_policy_export(build: Any, model: Model, preprocessor: Any = None, then: str = "mean_or_argmax") -> ExportedPolicy:
    """The ``ExportedPolicy`` of a single-agent skrl cell whose ``act_deterministic`` is
    ``then(model.compute(preprocessor(flat_observations(observations))))`` (see ``SkrlDeterministicPolicy``).

    ``preprocessor`` is the agent's ``_observation_preprocessor`` (skrl's no-op is left out). The module
    shares the trainer's parameters and statistics: save it (``rlplug export``) before training on.
    """
    policy = SkrlDeterministicPolicy(model, preprocessor_module(preprocessor), then)
    return ExportedPolicy(policy, policy_signature(build), flatten=True)


class JointPolicies(nn.Module):
    """Every agent's deterministic action from its own observation: ``[B, n_agents, obs_dim]`` in,
    ``[B, n_agents(, act_dim)]`` out (``joint_deterministic_actions`` as a module)."""

    def __init__(self, policies: Sequence[nn.Module]) -> None:
        super().__init__()
        self.policies = nn.ModuleList(policies)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
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
