"""What a plugin declares: ``AlgorithmSpec`` with its ``BackendSpec``s, ``LossSpec``s, ``Param``s and
``Rule``s; ``both_backends``; and the check of a declaration's shape."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .params import Param, Rule

KINDS = ("on-policy", "off-policy", "offline", "multi-agent")
ACTION_SPACES = ("discrete", "continuous", "multi-discrete")


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
    action_masks: bool = False
    """Honours an env's action mask (``rlplug.envs.masks``): masked actions are never taken (sampled, greedy,
    exploring or exported) and never valued; a masked env is refused on a backend without it."""


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


def both_backends(
    package: str,
    action_spaces: tuple[str, ...],
    skrl_settings: Callable[..., dict[str, Any]] | None,
    torchrl_settings: Callable[..., dict[str, Any]] | None,
    distributed: bool = False,
    action_masks: bool = False,
) -> dict[str, BackendSpec]:
    """The usual pair of backends: ``<package>.skrl_backend`` needing skrl and
    ``<package>.torchrl_backend`` needing torchrl and tensordict, installed by the core's extras."""
    return {
        "skrl": BackendSpec(
            f"{package}.skrl_backend", action_spaces, skrl_settings, requires=("skrl",), extra="skrl", distributed=distributed,
            action_masks=action_masks,
        ),
        "torchrl": BackendSpec(
            f"{package}.torchrl_backend", action_spaces, torchrl_settings, requires=("torchrl", "tensordict"), extra="torchrl",
            distributed=distributed, action_masks=action_masks,
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
    rules: tuple[Rule, ...] = ()
    """Cross-field constraints, checked after each hyperparameter passed its own domain."""
    backend_default_losses: Mapping[str, str] = field(default_factory=dict)
    """A backend whose default loss is not ``default_loss`` (sac/torchrl: "sac-lean")."""
    demonstrations: bool = False
    """An online algorithm that also reads a recipe's ``dataset``, as demonstrations (GAIL): the env is trained on, the
    dataset's transitions are what the agent imitates."""
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
    def reads_dataset(self) -> bool:
        """An offline algorithm, or an online one learning from demonstrations: its recipe names a ``dataset``."""
        return self.kind == "offline" or self.demonstrations

    def loss_for(self, backend: str) -> str:
        """The loss a recipe without ``loss`` gets on ``backend``."""
        return self.backend_default_losses.get(backend, self.default_loss)

    @property
    def param_map(self) -> dict[str, Param]:
        return {p.name: p for p in self.params}

    def defaults(self) -> dict[str, Any]:
        return {p.name: (list(p.default) if isinstance(p.default, list) else p.default) for p in self.params}

    def domains(self) -> dict[str, str]:
        """Each hyperparameter's domain in a few characters (``rlplug show`` prints them by the defaults)."""
        return {p.name: p.domain_text for p in self.params}

    def broken_rule(self, hp: Mapping[str, Any], recipe: Any) -> str | None:
        """The first of ``rules`` that ``hp`` (defaults filled in) and ``recipe`` break, as a line; else ``None``."""
        for rule in self.rules:
            problem = rule.refusal(hp, recipe)
            if problem:
                return problem
        return None


def declaration_problems(spec: Any) -> list[str]:
    """What is wrong with an ``rlplug_algorithms()`` item (an empty list: a well-formed ``AlgorithmSpec``).

    Dataclasses do not check field types, so a plugin can hand over a dict, or an ``AlgorithmSpec`` whose
    ``params`` hold dicts; discovery marks such a plugin broken with the first problem instead of failing
    later, in every command, on an attribute error.
    """
    if not isinstance(spec, AlgorithmSpec):
        return [f"it declared {type(spec).__name__} {_short(spec)}, not an rlplug.AlgorithmSpec"]
    where = f"algorithm {spec.name!r}"
    problems = []
    if not isinstance(spec.name, str) or not spec.name.strip():
        problems.append(f"an algorithm's name is {_short(spec.name)}, not a non-empty string")
    if not isinstance(spec.api_version, int) or isinstance(spec.api_version, bool):
        problems.append(f"{where}: api_version is {_short(spec.api_version)}, not an int")
    if not isinstance(spec.backends, Mapping) or not spec.backends:
        problems.append(f"{where}: backends is {_short(spec.backends)}, not a table of backend name -> BackendSpec")
    else:
        problems += [f"{where}: backend {k!r} is {_short(v)}, not a BackendSpec" for k, v in spec.backends.items()
                     if not isinstance(k, str) or not isinstance(v, BackendSpec)]
    for label, items, kind in (("params", spec.params, Param), ("losses", spec.losses, LossSpec), ("rules", spec.rules, Rule)):
        if not isinstance(items, (tuple, list)):
            problems.append(f"{where}: {label} is {_short(items)}, not a tuple of {kind.__name__}")
            continue
        problems += [f"{where}: {label} holds {_short(item)}, not a {kind.__name__}" for item in items if not isinstance(item, kind)]
    if not problems:
        names, seen, repeated = [p.name for p in spec.params], set(), set()
        for name in names:  # one pass: every command's start checks each plugin's ~80 parameters
            (repeated if name in seen else seen).add(name)
        twice = sorted(repeated)
        if twice:
            problems.append(f"{where}: hyperparameter {twice[0]!r} is declared twice")
        unknown = [f for rule in spec.rules for f in rule.fields if f not in seen and f not in _RULE_RECIPE_FIELDS]
        if unknown:
            problems.append(f"{where}: a rule names {unknown[0]!r}, which is neither a hyperparameter nor a recipe field")
    return problems


_RULE_RECIPE_FIELDS = ("steps", "seed", "num_envs", "eval_episodes", "env", "dataset")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
