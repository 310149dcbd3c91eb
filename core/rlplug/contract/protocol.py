"""The trainer contract: every member the core calls on a trainer, declared in one place.

The run layer (``rlplug.runs``), dataset collection (``rlplug.data.collect``), ``rlplug eval`` /
``resume`` and the conformance kit (``rlplug.testing``) talk to a trainer through ``Trainer`` only.
The optional capabilities are small protocols of their own, each with a "not capable" answer
(``gradient_steps = None``, ``NoReplayMemoryError``, ``VideoUnsupportedError``, ``ExportUnsupportedError``) that
``rlplug.contract.trainer.TrainerBase`` gives by default: the core asks a trainer, it never probes one with
``hasattr``. ``contract_problems`` is the check ``rlplug.testing.check_cell`` runs on a built trainer.

Torch-free and numpy-free: ``rlplug.contract.hookspecs`` re-exports it on every command.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

PROGRESS_UNITS = ("env_steps", "updates")
"""What a step budget can count: environment transitions, or gradient updates (offline cells)."""


# ---- what every trainer has ---------------------------------------------------------------------


@runtime_checkable
class Progress(Protocol):
    """The counters a step budget, the checkpoint cadence and the metrics' x axis are measured in."""

    env_steps: int
    """Environment transitions collected so far (summed over vectorised environments)."""
    iterations: int
    """Calls of ``step`` so far."""
    progress_unit: str
    """What ``progress`` counts: ``env_steps``, or ``updates`` for offline trainers (one of ``PROGRESS_UNITS``)."""
    steps_per_iteration: int | None
    """The progress one iteration makes when it is fixed (a rollout: ``rollout_steps x num_envs``), else ``None``."""

    @property
    def progress(self) -> int:
        """The counter ``progress_unit`` names; ``train(steps)`` runs until it reaches ``steps``."""

    def planned_progress(self, steps: int) -> int:
        """The ``progress`` that ``train(steps)`` will stop at (a budget rounded to whole iterations), asked
        before training so the run can say so and size its progress bar."""


@runtime_checkable
class Acts(Protocol):
    """A policy the core can query without exploration (dataset collection, the checkpoint round-trip check)."""

    def act_deterministic(self, observations: Any) -> Any:
        """Greedy / mean actions for a batch of raw observations (multi-agent: ``[B, n_agents, obs_dim]``)."""


@runtime_checkable
class Evaluates(Protocol):
    """Deterministic evaluation on an environment of its own, optionally recorded to video."""

    def evaluate(self, episodes: int, video_dir: str | None = None) -> list[float]:
        """Undiscounted returns of ``episodes`` deterministic episodes; ``video_dir`` records them (or raises ``VideoUnsupportedError``)."""


# ---- optional capabilities (TrainerBase answers "not capable") ------------------------------------


@runtime_checkable
class CountsGradientSteps(Protocol):
    """Off-policy trainers take gradient steps apart from their env-step progress; the summary reports their rate."""

    gradient_steps: int | None
    """Gradient steps taken so far, or ``None`` when the trainer does not count them apart from ``progress``."""

    @property
    def compile_seconds(self) -> float | None:
        """Seconds spent compiling the gradient step (``compile = true``), or ``None`` when it is not compiled."""


@runtime_checkable
class ExportsReplay(Protocol):
    """A replay memory ``rlplug dataset from-run`` can turn into an offline dataset."""

    def replay_transitions(self) -> dict[str, Any]:
        """The replay memory as dataset columns (numpy, oldest first); raises ``NoReplayMemoryError`` when there is none."""


@runtime_checkable
class ExportsPolicy(Protocol):
    """The deterministic policy as one ``torch.nn.Module`` that ``rlplug export`` saves as TorchScript or ONNX."""

    def export_policy(self) -> Any:
        """A ``torch.nn.Module`` mapping raw observation batches to the actions ``act_deterministic`` returns
        (normalisation, encoder and action clipping inside; a Dict's keys as inputs in sorted order;
        multi-agent: ``[B, n_agents, obs_dim]``); raises ``ExportUnsupportedError`` when the cell cannot."""


# ---- the whole contract ---------------------------------------------------------------------------


@runtime_checkable
class Trainer(Progress, Acts, Evaluates, CountsGradientSteps, ExportsReplay, ExportsPolicy, Protocol):
    """What every cell's ``rlplug_build_trainer`` returns; the core talks to nothing else.

    ``rlplug.contract.trainer.TrainerBase`` implements ``train`` on top of ``step`` and gives every optional
    capability its default; subclass it (``MultiAgentTrainerBase`` for multi-agent cells).
    """

    def step(self) -> dict[str, float]:
        """Run one iteration (collect a rollout or a few transitions, then update); return its metrics."""

    def train(self, steps: int, callbacks: Iterable[Callable[[Trainer, dict[str, float]], Any]] = ()) -> None:
        """Call ``step`` until ``progress >= steps``; after each, call every ``callback(trainer, metrics)`` (``False`` stops)."""

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: models, optimisers, memory, schedules, counters (tensors, numbers, strings)."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""

    def close(self) -> None:
        """Release environments and collectors."""


def contract_members() -> dict[str, Any]:
    """Every member ``Trainer`` declares: name -> the type of a data member or property, or the
    ``inspect.Signature`` of a method (whose parameters an implementation must accept)."""
    members: dict[str, Any] = {}
    for protocol in reversed(Trainer.__mro__):
        if Protocol not in protocol.__bases__:  # object, Generic, Protocol itself
            continue
        members.update(typing.get_type_hints(protocol))
        for name, value in vars(protocol).items():
            if isinstance(value, property):
                members[name] = typing.get_type_hints(value.fget)["return"]
            elif inspect.isfunction(value) and not name.startswith("_"):
                members[name] = inspect.signature(value)
    return members


def contract_problems(trainer: Any) -> list[str]:
    """What ``trainer`` lacks or gets wrong of the contract (an empty list: it conforms)."""
    problems = []
    for name, declared in contract_members().items():
        try:
            value = getattr(trainer, name)
        except AttributeError:
            problems.append(f"no '{name}'")
            continue
        except Exception as err:  # noqa: BLE001 - a property that fails is a broken member, reported as such
            problems.append(f"'{name}' raised {type(err).__name__}: {err}")
            continue
        if isinstance(declared, inspect.Signature):
            problems.extend(_signature_problems(name, value, declared))
        elif isinstance(value, bool) or not isinstance(value, declared):
            problems.append(f"'{name}' is {value!r}, not {_type_text(declared)}")
    unit = getattr(trainer, "progress_unit", None)
    if isinstance(unit, str) and unit not in PROGRESS_UNITS:
        problems.append(f"'progress_unit' is {unit!r}, not one of {', '.join(PROGRESS_UNITS)}")
    return problems


def _signature_problems(name: str, method: Any, declared: inspect.Signature) -> list[str]:
    if not callable(method):
        return [f"'{name}' is not callable"]
    try:
        accepted = inspect.signature(method).parameters
    except (TypeError, ValueError):  # a builtin without a signature: nothing more to check
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        return []
    wanted = [p for p in declared.parameters if p != "self"]
    missing = [p for p in wanted if p not in accepted]
    return [f"'{name}' does not take {', '.join(repr(p) for p in missing)}"] if missing else []


def _type_text(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind)
