"""What a checkpoint holds beyond the trainer's state (a header naming the cell), the checks that
refuse a checkpoint of another cell, and loading a state into a trainer with one clear line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import CheckpointMismatchError
from ..contract.hookspecs import Build
from .evaluations import BEST_EVAL


def checkpoint_header(build: Build, world_size: int = 1) -> dict[str, Any]:
    from .. import __version__

    return {
        "rlplug": __version__,
        "world_size": world_size,
        "algorithm": build.algorithm.name,
        "backend": build.backend,
        "hyperparameters": dict(build.hp),
        "recipe": build.recipe.ref,
        "env_steps": build.trainer.env_steps,
        build.trainer.progress_unit: build.trainer.progress,
    }


def checkpoint_payload(build: Build, rank_states: list[Any], best_eval: dict[str, Any] | None = None) -> dict[str, Any]:
    """Rank 0's state is the run's (``eval`` reads it); the other ranks' go under ``ranks`` so ``resume``
    gives each rank its own environments, replay memory and RNG streams back. ``best_eval``: the best
    evaluation so far (``rlplug.runs.evaluations``), kept in the header so a resumed run knows it."""
    payload = {"rlplug": checkpoint_header(build, len(rank_states)), "trainer": rank_states[0]}
    if best_eval is not None:
        payload["rlplug"][BEST_EVAL] = dict(best_eval)
    if len(rank_states) > 1:
        payload["ranks"] = rank_states[1:]
    return payload


def check_header(header: dict[str, Any], build: Build, path: Path | str) -> None:
    """Refuse a checkpoint written by another algorithm, backend, hyperparameter set or rlplug major version."""
    from .. import __version__

    written = str(header.get("rlplug", "?"))
    if _compatible_series(written) != _compatible_series(__version__):
        raise CheckpointMismatchError(
            f"checkpoint {path} was written by rlplug {written}; this is rlplug {__version__}, another major version"
        )
    if (header.get("algorithm"), header.get("backend")) != build.cell:
        raise CheckpointMismatchError(
            f"checkpoint {path} holds a {header.get('algorithm')}/{header.get('backend')} run, not {'/'.join(build.cell)}"
        )
    saved = header.get("hyperparameters")
    if saved is not None:
        # a hyperparameter the algorithm gained since the checkpoint was written matches at its default, which keeps the
        # behaviour the run was trained with (rlplug adds new ones that way)
        defaults = {p.name: p.default for p in getattr(build.algorithm, "params", ())}
        added = {k for k in set(build.hp) - set(saved) if k in defaults and build.hp[k] == defaults[k]}
        differ = sorted(k for k in (set(saved) | set(build.hp)) - added if saved.get(k) != build.hp.get(k))
        if differ:
            shown = ", ".join(f"{k} ({saved.get(k)!r} there, {build.hp.get(k)!r} here)" for k in differ[:3])
            raise CheckpointMismatchError(f"checkpoint {path} was trained with other hyperparameters: {shown}")


def _compatible_series(version_text: str) -> tuple[str, ...]:
    """The part of a version that must match: the major version, or major.minor while it is 0.x."""
    parts = version_text.split(".")
    return tuple(parts[:2]) if parts[0] == "0" else tuple(parts[:1])


def load_trainer_state(build: Build, state: Any, path: Path | str) -> None:
    """``trainer.load_state_dict`` with one clear line when the checkpoint lacks what the cell needs."""
    try:
        build.trainer.load_state_dict(state)
    except KeyError as err:
        raise CheckpointMismatchError(
            f"checkpoint {path} lacks {err.args[0]!r}, which {'/'.join(build.cell)} needs to resume; it was written by another version of the plugin"
        ) from None
    except (RuntimeError, ValueError, TypeError) as err:
        raise CheckpointMismatchError(f"checkpoint {path} does not fit {'/'.join(build.cell)}: {_first_reason(err)}") from None


def _first_reason(err: Exception) -> str:
    """One line of ``err``: torch's "Error(s) in loading state_dict for X:" is joined with its first
    reason (the mismatching key and shapes), which is what a user needs to read."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    return f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]
