"""Declarations plugins return from ``rlplug_algorithms()``: algorithms, backends, hyperparameters.

Nothing here imports torch: declarations are read by ``rlplug list`` and ``rlplug recipes``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

KINDS = ("on-policy", "off-policy", "offline", "multi-agent")
ACTION_SPACES = ("discrete", "continuous", "multi-discrete")

_TYPE_NAMES = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "table"}


def type_name(value_type: type) -> str:
    return _TYPE_NAMES.get(value_type, value_type.__name__)


def check_type(value: Any, expected: type, where: str) -> Any:
    """Return ``value`` converted to ``expected`` (int -> float only) or raise TypeError with a clear line."""
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is not bool and isinstance(value, bool):
        raise TypeError(f"{where} must be {type_name(expected)}, got bool {value!r}")
    if not isinstance(value, expected):
        raise TypeError(f"{where} must be {type_name(expected)}, got {type_name(type(value))} {value!r}")
    return value


@dataclass(frozen=True)
class Param:
    """One backend-neutral hyperparameter: its default, its type and a one-line doc."""

    name: str
    default: Any
    doc: str
    type: type | None = None
    choices: tuple[Any, ...] | None = None
    item_type: type | None = None  # for list parameters

    @property
    def value_type(self) -> type:
        return self.type or type(self.default)

    def validate(self, value: Any, where: str) -> Any:
        value = check_type(value, self.value_type, where)
        if self.item_type is not None and isinstance(value, list):
            value = [check_type(v, self.item_type, f"{where}[{i}]") for i, v in enumerate(value)]
        if self.choices is not None and value not in self.choices:
            from .suggest import did_you_mean

            hint = did_you_mean(str(value), map(str, self.choices))
            raise ValueError(
                f"{where} = {value!r} is not one of {', '.join(map(repr, self.choices))}"
                + (hint if "did you mean" in hint else "")
            )
        return value


@dataclass(frozen=True)
class BackendSpec:
    """What one backend of an algorithm supports, and how neutral hyperparameters map onto it.

    ``settings`` turns the validated neutral hyperparameters (and the recipe) into the backend's own
    settings (a flat dict of plain values, shown by ``rlplug show``); it must not import torch.
    ``module`` is the import path of the backend module; it is imported only when this backend is built.
    """

    module: str
    action_spaces: tuple[str, ...]
    settings: Callable[[Mapping[str, Any], Any], dict[str, Any]] | None = None
    requires: tuple[str, ...] = ()  # import names of the libraries it needs, e.g. ("skrl",)
    extra: str = ""  # the pip extra of the core that installs them
    distributed: bool = False  # trains data-parallel under torchrun (``rlplug train --nproc N``)


@dataclass(frozen=True)
class LossSpec:
    """A loss a plugin contributes for one (algorithm, backend) cell.

    ``factory`` is ``"module:attribute"``: it is imported only when the loss is built. ``optimisers``
    maps each optimised term to the optimiser that steps on it (``{"loss_qvalue": "critic"}``); a cell
    with a single optimiser leaves it empty.
    """

    name: str
    backend: str
    factory: str
    terms: tuple[str, ...]
    reported: tuple[str, ...] = ()
    doc: str = ""
    optimisers: Mapping[str, str] = field(default_factory=dict)
    describe: str = ""  # optional "module:function" returning extra facts for ``rlplug losses``


@dataclass(frozen=True)
class AutoOrFloat(Param):
    """A hyperparameter that is either the string ``"auto"`` or a number (stored as a float)."""

    def validate(self, value: Any, where: str) -> Any:
        if value == "auto":
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise TypeError(f"{where} must be 'auto' or a number, got {type(value).__name__} {value!r}")


def both_backends(
    package: str,
    action_spaces: tuple[str, ...],
    skrl_settings: Callable[..., dict[str, Any]] | None,
    torchrl_settings: Callable[..., dict[str, Any]] | None,
    distributed: bool = False,
) -> dict[str, BackendSpec]:
    """The usual pair of backends: ``<package>.skrl_backend`` needing skrl and
    ``<package>.torchrl_backend`` needing torchrl and tensordict, installed by the core's extras."""
    return {
        "skrl": BackendSpec(
            f"{package}.skrl_backend", action_spaces, skrl_settings, requires=("skrl",), extra="skrl", distributed=distributed
        ),
        "torchrl": BackendSpec(
            f"{package}.torchrl_backend", action_spaces, torchrl_settings, requires=("torchrl", "tensordict"), extra="torchrl",
            distributed=distributed,
        ),
    }


@dataclass(frozen=True)
class AlgorithmSpec:
    """The declaration of one algorithm, as returned by ``rlplug_algorithms()``."""

    name: str
    summary: str
    kind: str
    backends: Mapping[str, BackendSpec]
    params: tuple[Param, ...]
    api_version: int
    default_loss: str = "default"
    losses: tuple[LossSpec, ...] = ()
    # filled in by discovery: which distribution declared it
    plugin: str = field(default="", compare=False)
    plugin_version: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"algorithm {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        for backend, spec in self.backends.items():
            for space in spec.action_spaces:
                if space not in ACTION_SPACES:
                    raise ValueError(f"algorithm {self.name!r}/{backend}: unknown action space {space!r}")

    @property
    def param_map(self) -> dict[str, Param]:
        return {p.name: p for p in self.params}

    def defaults(self) -> dict[str, Any]:
        return {p.name: (list(p.default) if isinstance(p.default, list) else p.default) for p in self.params}
