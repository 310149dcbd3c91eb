"""The Adam code paths ``optimizer_impl`` selects (declared torch-free in ``rlplug.families.optim``):
building an Adam on the chosen path, and switching the Adams a skrl agent made for itself.
"""

from __future__ import annotations

from typing import Any

from ...families.optim import adam_flags


def adam(params: Any, impl: str, **kwargs: Any) -> Any:
    """``torch.optim.Adam(params, **kwargs)`` on the chosen code path."""
    import torch

    return torch.optim.Adam(params, **kwargs, **adam_flags(impl))


def use_adam_impl(agent: Any, impl: str) -> None:
    """Put the Adams a skrl agent made for itself (``SAC``, ``TD3``, ``DQN`` create theirs in their
    constructor) on the chosen code path, in place: the same objects, so the agent's
    ``checkpoint_modules`` and learning-rate schedulers keep pointing at them. Adam reads ``fused`` and
    ``foreach`` from each parameter group at every step and creates its state lazily, so switching
    before the first step is the same as constructing with the flag. Call it right after the agent."""
    import torch

    for value in vars(agent).values():
        if isinstance(value, torch.optim.Adam):
            switch_adam(value, impl)


def switch_adam(optimizer: Any, impl: str) -> None:
    """Switch an Adam that has not stepped yet to ``impl``'s code path."""
    flags = {"fused": False, "foreach": False, **adam_flags(impl)}
    if any(optimizer.state.values()):
        raise ValueError("switch the Adam implementation before the optimiser's first step")
    for group in [*optimizer.param_groups, optimizer.defaults]:
        group.update(flags)
    if flags["fused"]:
        optimizer._step_supports_amp_scaling = True  # what Adam(fused=True) sets: GradScaler unscales inside the kernel
