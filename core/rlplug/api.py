"""The Python API: what the CLI does, as a few calls.

    import rlplug
    build = rlplug.build("ppo-cartpole", backend="torchrl", overrides=["lr_schedule=linear"])
    metrics = build.trainer.step()            # one iteration, for users who own the loop
    build.trainer.train(20_000)               # or run to a step budget
    returns = build.trainer.evaluate(10)
    rlplug.save(build, "ppo.pt"); rlplug.load(build, "ppo.pt")
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .contract.hookspecs import Build
from .pipeline.session import Session

if TYPE_CHECKING:
    from .recipes.fields import Recipe

_USER_OBJECTS: list[Any] = []
_SESSION: Session | None = None


def session() -> Session:
    """The process-wide session: installed plugins plus everything passed to ``register``."""
    global _SESSION
    if _SESSION is None:
        _SESSION = Session(objects=tuple(_USER_OBJECTS))
    return _SESSION


def register(obj: Any) -> None:
    """Register a plugin object (a module or instance with ``@rlplug.hookimpl`` functions).

    It is registered after every installed plugin, so its ``tryfirst`` implementations win; its
    ``rlplug_register_losses`` is called even though the registry was already filled (historic hook).
    """
    _USER_OBJECTS.append(obj)
    if _SESSION is not None:
        _SESSION.host.register(obj)


def resolve(name: str, overrides: Iterable[str] = ()) -> Recipe:
    """Resolve a recipe by name (``ppo-cartpole`` or ``ppo-cartpole@1``) with ``key=value`` overrides."""
    return session().resolve(name, overrides)


def build(recipe: Recipe | str, backend: str | None = None, overrides: Iterable[str] = (), device: str = "cpu") -> Build:
    """Resolve (if given a name), validate and construct a recipe for a backend; returns the ``Build``."""
    return session().build(recipe, backend, overrides, device)


def train(recipe: Recipe | str, backend: str | None = None, overrides: Iterable[str] = (), run_dir: str | Path | None = None,
          progress: bool = False, loggers: str | Iterable[str] | None = None, eval_every: int | None = None) -> dict[str, Any]:
    """Build, train to the recipe's budget, evaluate; write a run directory when ``run_dir`` is given, with
    ``loggers`` as ``rlplug train --logger`` takes them (``"tensorboard,csv"`` by default). ``eval_every``
    steps: evaluate during training and keep the best evaluation's state as ``checkpoints/best.pt``."""
    from .runs import train as run_training
    from .runs.trackers import parse_loggers

    chosen = parse_loggers(loggers)
    built = build(recipe, backend, overrides)
    try:
        return run_training(built, run_dir=Path(run_dir) if run_dir else None, progress=progress, loggers=chosen,
                            eval_every=eval_every)
    finally:
        built.trainer.close()


def save(build: Build, path: str | Path) -> None:
    """Save the trainer's complete state (atomic write)."""
    from .runs.checkpoint_io import save_checkpoint
    from .runs import checkpoint_header

    save_checkpoint(Path(path), {"rlplug": checkpoint_header(build), "trainer": build.trainer.state_dict()})


def load(build: Build, path: str | Path) -> Build:
    """Load a state saved by ``save`` into an already built ``Build`` of the same cell."""
    from .runs.checkpoint_io import load_checkpoint
    from .runs import check_header, load_trainer_state

    payload = load_checkpoint(Path(path))
    check_header(payload.get("rlplug", {}), build, path)
    load_trainer_state(build, payload["trainer"], path)
    return build
