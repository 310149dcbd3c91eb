"""Update stages: what one gradient step of an off-policy or offline cell is made of, declared by the cell
and run by its family base, on either backend.

A cell lists its ``UpdateStage``s in the order they step (SAC on skrl: critic, policy, entropy; TD3:
critic on every gradient step, actor on every ``policy_delay``-th) and says how often the target networks
move (``target_every``). The base samples one batch, asks the loss for each due stage's terms, sums the
optimised ones its stage owns (``LossSpec(optimisers=...)`` maps each optimised term to its stage; without
a map a stage sums every optimised term its loss returns), backpropagates, clips, steps the stage's
optimiser, then steps the target updater and the learning-rate schedulers. Imports torch only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ...errors import LossRegistrationError


@dataclass(frozen=True)
class UpdateStage:
    """One optimiser step of a gradient step.

    ``name``: the stage (what a skrl staged loss is called with, what TorchRL's ``stage_terms`` gets, what
    ``LossSpec.optimisers`` maps terms to). ``every``: the stage steps on every ``every``-th gradient step,
    an int or the name of the setting that holds it (``"policy_delay"``). ``only_if``: the name of a
    boolean setting without which the stage is left out (SAC's ``"learn_entropy"``). ``clip_groups``: the
    gradient-norm clip applies to each of the optimiser's first ``clip_groups`` parameter groups (``None``:
    all, ``0``: none). ``optimizer``: which optimiser steps (skrl: the agent's attribute, default
    ``"<name>_optimizer"``; TorchRL: the key of ``make_optimizers``' dict, default the name). Stages due on
    the same gradient step that share an optimiser step it once, on the sum of their terms.
    """

    name: str
    every: int | str = 1
    only_if: str | None = None
    clip_groups: int | None = None
    optimizer: str = ""


def cadence(every: int | str, setting: Callable[[str], Any]) -> int:
    """``every`` as a count of gradient steps (a setting's name is read through ``setting``)."""
    value = int(setting(every)) if isinstance(every, str) else int(every)
    if value < 1:
        raise ValueError(f"an update cadence must be at least 1 gradient step, got {every!r} = {value}")
    return value


class UpdateSchedule:
    """Which stages, and whether the target update, are due at each gradient step; its count is checkpointed.

    ``setting(name)`` reads the settings a stage names (skrl: the agent's attribute or config field,
    TorchRL: the build's settings). Cadences (``every``, ``target_every``) and conditions (``only_if``)
    are read at every gradient step, not once: a derived cell or a hook that changes the setting on the
    instance changes the schedule from the next step on. A gradient step ``n`` (counted from 1) takes a
    stage when ``n % every == 0``.
    """

    def __init__(self, stages: Sequence[UpdateStage], target_every: int | str, setting: Callable[[str], Any]) -> None:
        self.declared = tuple(stages)
        self.target_cadence = target_every
        self.setting = setting
        self.steps = 0
        _ = (self.every, self.target_every)  # a setting that names nothing fails here, at construction

    @property
    def stages(self) -> tuple[UpdateStage, ...]:
        """The declared stages whose ``only_if`` setting holds now."""
        return tuple(s for s in self.declared if s.only_if is None or self.setting(s.only_if))

    @property
    def every(self) -> list[int]:
        """The cadence of each of ``stages``, read now."""
        return [cadence(s.every, self.setting) for s in self.stages]

    @property
    def target_every(self) -> int:
        return cadence(self.target_cadence, self.setting)

    def advance(self) -> tuple[list[tuple[UpdateStage, ...]], bool]:
        """Count one gradient step; its optimiser steps (the due stages, consecutive ones sharing an
        optimiser joined) and whether the target networks move after them."""
        self.steps += 1
        steps: list[tuple[UpdateStage, ...]] = []
        stages = self.stages
        for stage, every in zip(stages, [cadence(s.every, self.setting) for s in stages]):
            if self.steps % every:
                continue
            if steps and optimizer_of(steps[-1][-1]) == optimizer_of(stage):
                steps[-1] = (*steps[-1], stage)
            else:
                steps.append((stage,))
        return steps, self.steps % self.target_every == 0

    def state_dict(self) -> dict[str, Any]:
        return {"steps": self.steps}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.steps = int(state["steps"])


def optimizer_of(stage: UpdateStage) -> str:
    return stage.optimizer or stage.name


def stage_terms(
    terms: Sequence[str], optimisers: Iterable[tuple[str, str]], stages: Sequence[UpdateStage], owner: str
) -> dict[str, tuple[str, ...]]:
    """The optimised ``terms`` each stage sums, in their order: the ones ``optimisers`` (a loss entry's
    ``(term, stage)`` pairs) maps to it, or every optimised term when it maps none. A map that leaves an
    optimised term without a stage, or a stage of ``owner`` without a term, is refused: those terms would
    silently not train. Terms mapped to stages ``owner`` does not declare are not its to optimise (CQL's
    one loss serves a Box agent with a policy stage and a Discrete one without)."""
    terms, mapping = tuple(terms), dict(optimisers)
    names = [stage.name for stage in stages]
    if not mapping:
        return dict.fromkeys(names, terms)
    grouped = {name: tuple(term for term in terms if mapping.get(term) == name) for name in names}
    orphans = [term for term in terms if term not in mapping]
    idle = [name for name, owned in grouped.items() if not owned]
    if orphans or idle:
        problem = f"give no stage to {', '.join(orphans)}" if orphans else f"give stage {', '.join(idle)} no term"
        raise LossRegistrationError(
            f"the loss's optimisers {problem}; {owner}'s update stages are {', '.join(names)} "
            f"(optimisers: {', '.join(f'{t} -> {n}' for t, n in mapping.items())})"
        )
    return grouped


def summed(out: Mapping[str, torch.Tensor], names: Iterable[str], stage: str) -> torch.Tensor:
    """The sum of the terms in ``names`` that ``out`` holds (in ``names``' order, each once); refused when
    it holds none."""
    optimised = [out[name] for name in dict.fromkeys(names) if name in out]
    if not optimised:
        raise ValueError(f"the loss returned none of the optimised terms {tuple(names)} for stage '{stage}'")
    return sum(optimised)


def clip_groups(optimizer: torch.optim.Optimizer, max_norm: float, groups: int | None) -> None:
    """Clip the gradient norm of each of ``optimizer``'s first ``groups`` parameter groups (all: ``None``) to ``max_norm``."""
    if max_norm > 0 and groups != 0:
        for group in optimizer.param_groups[:groups]:
            nn.utils.clip_grad_norm_(group["params"], max_norm)


# ---- what a cell checkpoints besides its networks and optimisers -----------------------------------


def attribute_states(owner: Any, names: Iterable[str]) -> dict[str, Any]:
    """The state of each attribute ``owner`` names (a dotted path: ``"exploration_noise.state"``): a
    ``state_dict()`` where it has one, a tensor's copy, a number; ``None`` where it is absent."""
    states = {}
    for name in names:
        value = _resolve(owner, name)
        if hasattr(value, "state_dict"):
            value = value.state_dict()
        elif isinstance(value, torch.Tensor):
            value = value.detach().clone()
        states[name] = value
    return states


def load_attribute_states(owner: Any, states: Mapping[str, Any]) -> None:
    """Put back what ``attribute_states`` saved: ``load_state_dict`` where the attribute has one, a tensor
    copied in place when the shapes agree (an optimiser may hold it), anything else set."""
    for name, state in states.items():
        if state is None:
            continue
        parent, _, leaf = name.rpartition(".")
        holder = _resolve(owner, parent) if parent else owner
        current = getattr(holder, leaf, None)
        if hasattr(current, "load_state_dict"):
            current.load_state_dict(state)
        elif isinstance(current, torch.Tensor) and isinstance(state, torch.Tensor) and current.shape == state.shape:
            with torch.no_grad():
                current.copy_(state)
        else:
            setattr(holder, leaf, state.clone() if isinstance(state, torch.Tensor) else state)


def _resolve(owner: Any, path: str) -> Any:
    for part in path.split("."):
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    return owner
