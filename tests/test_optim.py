"""rlplug.families.optim: the ``optimizer_impl`` hyperparameter and the Adam code paths it selects."""

from __future__ import annotations

import pytest
import torch

from rlplug.backends.common.optim import adam, switch_adam, use_adam_impl
from rlplug.families import OPTIMIZER_PARAMS
from rlplug.families.optim import adam_flags


def _net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))


def _steps(net: torch.nn.Module, optimizer: torch.optim.Optimizer, n: int = 3) -> None:
    x = torch.linspace(-1, 1, 30).reshape(10, 3)
    for _ in range(n):
        optimizer.zero_grad()
        net(x).pow(2).mean().backward()
        optimizer.step()


def test_declaration_defaults_to_fused_and_refuses_unknown_paths():
    param = next(p for p in OPTIMIZER_PARAMS if p.name == "optimizer_impl")
    assert param.name == "optimizer_impl" and param.default == "fused"
    assert adam_flags("fused") == {"fused": True} and adam_flags("loop") == {"foreach": False}
    with pytest.raises(ValueError, match="optimizer_impl must be one of fused, loop"):
        adam_flags("foreach")


def test_fused_and_loop_take_the_same_steps_to_rounding():
    nets = {impl: _net() for impl in ("fused", "loop")}
    for impl, net in nets.items():
        _steps(net, adam(net.parameters(), impl, lr=1e-2))
    for a, b in zip(nets["fused"].parameters(), nets["loop"].parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_switching_in_place_keeps_the_object_and_refuses_after_a_step():
    class Agent:  # a skrl agent holds its Adams as attributes and in checkpoint_modules
        pass

    agent, net = Agent(), _net()
    agent.optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    agent.checkpoint_modules = {"optimizer": agent.optimizer}
    use_adam_impl(agent, "fused")
    assert agent.checkpoint_modules["optimizer"] is agent.optimizer
    assert agent.optimizer.param_groups[0]["fused"] is True and agent.optimizer.param_groups[0]["foreach"] is False
    _steps(net, agent.optimizer, 1)
    assert agent.optimizer.state_dict()["param_groups"][0]["fused"] is True
    with pytest.raises(ValueError, match="before the optimiser's first step"):
        switch_adam(agent.optimizer, "loop")
