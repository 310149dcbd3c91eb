"""The optional extras that add a command or an option (the environment suites are ``envs.SUITES``): what each
enables and whether its distributions are installed, read from their metadata so that nothing is imported
(``rlplug doctor`` stays cheap, and importing mlflow or wandb alone takes seconds)."""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass


@dataclass(frozen=True)
class Extra:
    name: str
    """``pip install 'rlplug[<name>]'``."""
    enables: str
    requires: tuple[tuple[str, ...], ...]
    """Distributions that must be installed; each entry lists alternatives (the first is the extra's own)."""


EXTRAS = (
    Extra("onnx", "rlplug export --format onnx", (("onnx",), ("onnxruntime",))),
    Extra("tune", "rlplug tune", (("optuna",),)),
    # the full `mlflow` distribution holds the skinny one's modules too; the local store needs SQLAlchemy
    Extra("mlflow", "--logger mlflow", (("mlflow-skinny", "mlflow"), ("sqlalchemy",), ("alembic",))),
    Extra("wandb", "--logger wandb", (("wandb",),)),
    Extra("video", "rlplug eval --video", (("moviepy",),)),
    Extra("hydra", "rlplug-hydra (Hydra configs and sweeps)", (("hydra-core",), ("hydra-submitit-launcher",))),
    Extra("ray", "rlplug-hydra's hydra/launcher=rlplug_ray", (("ray",),)),
    Extra("zoo", "zoo:ALGO/ENV recipes", (("rl_zoo3",), ("pyyaml",))),
    Extra("envpool", "vector_mode = \"envpool\"", (("envpool",),)),
    Extra("minari", "minari:ID datasets, rlplug dataset export --format minari", (("minari",), ("h5py",), ("pillow",))),
)


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def extra_status(extra: Extra) -> tuple[list[str], list[str]]:
    """``(["onnx 1.23.2", ...], [missing distributions])`` for one extra."""
    found, missing = [], []
    for alternatives in extra.requires:
        versions = [(name, installed_version(name)) for name in alternatives]
        present = [f"{name} {version}" for name, version in versions if version is not None]
        if present:
            found.append(present[0])
        else:
            missing.append(alternatives[0])
    return found, missing


def extra_lines(flagged: set[str] = frozenset()) -> list[str]:
    """One line per optional extra: its installed versions, or what is missing and the command that installs it;
    ``flagged`` distributions (lower case) are off the tested versions (``rlplug.cli.pins``), said on the line."""
    from .pins import install_command

    lines = []
    for extra in EXTRAS:
        found, missing = extra_status(extra)
        if missing:
            status = f"not installed ({', '.join(missing)} missing): {install_command(extra.name)}"
        else:
            off = [item for item in found if item.split(" ", 1)[0].lower() in flagged]
            status = f"installed ({', '.join(found)})" + (f", {', '.join(off)} off the tested versions (below)" if off else "")
        lines.append(f"{extra.name:<11} {status}; for {extra.enables}")
    return lines
