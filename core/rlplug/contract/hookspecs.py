"""The contract between the core and every plugin: hook specifications, ``Build`` and ``Trainer``
(declared with its optional capabilities in ``rlplug.contract.protocol``, re-exported here).

Call order for one run (``rlplug.build``):

1. discovery registers every plugin on ``PluginManager("rlplug")`` (first-party, then third-party
   entry points, then ``--plugin`` modules, then ``rlplug.register(obj)`` objects);
2. ``rlplug_algorithms`` and ``rlplug_recipes`` are read to list and validate;
3. ``rlplug_register_losses`` and ``rlplug_register_encoders`` (historic) fill the loss and
   encoder registries;
4. the five ``firstresult`` construction hooks run in order on one ``Build``:
   models -> memory -> loss -> target updater -> trainer.
   Each sees what the earlier stages stored on the ``Build``. An implementation returns ``None``
   for cells (algorithm, backend) it does not own; pluggy then asks the next one;
5. ``rlplug_trainer_hooks`` adds training hooks to the built trainer, then the recipe's ``hooks``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pluggy

from .protocol import (
    PROGRESS_UNITS,
    Acts,
    CountsGradientSteps,
    Evaluates,
    ExportsPolicy,
    ExportsReplay,
    Progress,
    Trainer,
    contract_members,
    contract_problems,
)

__all__ = [  # the contract's names are re-exported from here, where plugin authors look first
    "API_VERSION", "PROGRESS_UNITS", "Acts", "Build", "CountsGradientSteps", "Evaluates", "ExportsPolicy", "ExportsReplay",
    "Progress", "RlplugSpec", "Trainer", "contract_members", "contract_problems", "hookimpl", "hookspec",
]

if TYPE_CHECKING:
    from .encoders import EncoderRegistry
    from ..envs.spec import EnvSpec
    from .losses import LossEntry, LossRegistry
    from ..recipes.fields import Recipe
    from ..schema import AlgorithmSpec

API_VERSION = 1
"""Bumped when the hook signatures or the ``Build``/``Trainer`` contract change incompatibly."""

hookspec = pluggy.HookspecMarker("rlplug")
hookimpl = pluggy.HookimplMarker("rlplug")
"""Marks a plugin's hook implementations: ``@rlplug.hookimpl`` or ``@rlplug.hookimpl(tryfirst=True)`` (pluggy's marker)."""


@dataclass
class Build:
    """Everything one run is made of; flows through the construction hooks, which fill its slots."""

    recipe: Recipe
    algorithm: AlgorithmSpec
    backend: str
    hp: dict[str, Any]
    """Validated backend-neutral hyperparameters, defaults filled in."""
    settings: dict[str, Any]
    """The backend's own settings translated from ``hp``, with the recipe's raw overrides applied."""
    env_id: str
    env_kwargs: dict[str, Any]
    num_envs: int
    observation_space: Any
    action_space: Any
    seed: int
    device: str
    loss_entry: LossEntry
    # slots filled by the construction hooks, in this order
    models: Any = None
    memory: Any = None
    loss: Any = None
    target_updater: Any = None
    trainer: Trainer | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    """What the core found out before the stages ran, by key: ``"multiagent"`` (an MPE / VMAS env's agents and
    spaces), ``"dataset"`` (an offline recipe's dataset), the run layer's ``"saved_run"`` when a run is
    reopened; and what a plugin's stages hand along, under keys starting with its algorithm's name (the
    plugin guide, §3)."""
    plugin_modules: tuple[str, ...] = ()
    """User plugin modules (``--plugin MODULE[:OBJ]``) the session imported; a run directory records
    them so ``eval`` and ``resume`` import them again."""
    encoder: str = ""
    """The observation encoder every model of the cell reads through (the recipe's ``encoder``, or the
    default for ``observation_space``); empty on a hand-made build: flat-vector MLPs."""
    encoders: EncoderRegistry | None = None
    """The session's encoder registry (``observation_encoder(build)`` builds ``encoder`` from it)."""

    @property
    def cell(self) -> tuple[str, str]:
        return (self.algorithm.name, self.backend)

    def is_cell(self, algorithm: str, backend: str) -> bool:
        return self.algorithm.name == algorithm and self.backend == backend

    @property
    def env_spec(self) -> EnvSpec:
        """The single-agent environment to make: ``env_id``, ``env_kwargs`` and the recipe's wrapper fields
        (``rlplug.envs.wrappers``); what the backends' ``make_vector_env`` / ``make_env`` and the evaluation take,
        and what a trainer that makes its own environment makes it from."""
        from ..envs.spec import EnvSpec

        return EnvSpec.from_recipe(self.recipe, self.env_id, self.env_kwargs, gamma=self.hp.get("gamma", 0.99))


class RlplugSpec:
    """Hook specifications; every hook name starts with ``rlplug_``."""

    @hookspec
    def rlplug_algorithms(self) -> list[AlgorithmSpec]:
        """Declare the algorithms this plugin provides.

        Called by discovery when algorithms are listed or resolved (``rlplug list``, ``recipes``,
        ``train``). Must be cheap: no torch, skrl or torchrl imports. Returns a list of
        ``rlplug.AlgorithmSpec`` (name, summary, kind, backends with their action spaces and settings
        translators, the hyperparameter schema, the core API version implemented, the losses offered).
        """

    @hookspec
    def rlplug_recipes(self) -> list[dict[str, Any]]:
        """Contribute recipes: a list of tables with the schema of ``registry.toml`` entries plus ``name``.

        Called when the recipe book is loaded; first-party ``registry.toml`` recipes come first, then
        plugin recipes, then ``--recipes FILE``. Must be cheap.
        """

    @hookspec(historic=True)
    def rlplug_register_losses(self, losses: LossRegistry) -> None:
        """Register named losses per (algorithm, backend) with ``losses.register(...)``.

        Historic: a plugin registered later still receives the call. Built-in default losses are
        registered through this same hook. Registering a taken name raises unless ``override=True``.
        """

    @hookspec(historic=True)
    def rlplug_register_encoders(self, encoders: EncoderRegistry) -> None:
        """Register observation encoders with ``encoders.register(name, factory, accepts=..., ...)``.

        Historic, like ``rlplug_register_losses``; the core's built-ins (``mlp``, ``nature_cnn``,
        ``minatar_cnn``, ``multi_input``) are registered through this same hook. An encoder whose
        ``accepts`` is true for a space makes that space trainable.
        """

    @hookspec(firstresult=True)
    def rlplug_build_models(self, build: Build) -> Any:
        """Return the cell's models (skrl: ``{role: Model}``; TorchRL: ``{"actor": ..., "critic": ...}``).

        Called first. Return ``None`` when ``build.cell`` is not yours.
        """

    @hookspec(firstresult=True)
    def rlplug_build_memory(self, build: Build) -> Any:
        """Return the rollout or replay memory for ``build.models``; ``None`` when not yours."""

    @hookspec(firstresult=True)
    def rlplug_build_loss(self, build: Build) -> Any:
        """Return the loss object named by ``build.loss_entry`` (the default implementation calls its factory)."""

    @hookspec(firstresult=True)
    def rlplug_build_target_updater(self, build: Build) -> Any:
        """Return the target-network updater (soft or hard), or ``None`` if the cell has no target networks."""

    @hookspec(firstresult=True)
    def rlplug_build_trainer(self, build: Build) -> Trainer:
        """Return a ``Trainer`` wired from the models, memory, loss and updater already on ``build``."""

    @hookspec
    def rlplug_trainer_hooks(self, build: Build) -> Any:
        """Return the training hooks this plugin adds to ``build.trainer``, or ``None`` for cells it leaves alone.

        Called after the trainer is built (and before a resumed run loads its checkpoint, so the hooks'
        state is restored). Each item is a hook object with ``register(trainer)`` (rlplug's
        ``rlplug.hooks`` classes, TorchRL's ``TrainerHookBase`` objects) or a ``(dest, op)`` pair; the core
        registers them, naming this plugin if one is refused (``rlplug.hooks``, the guide's "Hook points").
        """
