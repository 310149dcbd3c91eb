"""The conformance kit: one call that checks an algorithm cell against rlplug's contract.

    from rlplug.testing import check_cell

    def test_my_cell_conforms():
        check_cell("my-recipe", backend="skrl", overrides=["hidden_sizes=[16, 16]"], steps=256)

``check_cell`` resolves the recipe (installed plugins, plus ``plugins`` / ``recipe_files`` /
``objects`` as the CLI's ``--plugin`` / ``--recipes`` take them; with ``steps``, a replay or offline
cell's ``learning_starts`` and ``log_every`` are fitted to them unless given: ``meaningful_cadence``),
then checks, in order:

1. declarations: the algorithm targets this core's API version, the recipe's loss is registered
   for the cell with at least one optimised term;
2. construction: each of the five hooks returns an object, the trainer one with every member the
   ``Trainer`` contract declares (``rlplug.contract.protocol``: present, callable with the declared
   parameters, counters of the declared types);
3. a short train of ``steps`` reports optimised loss terms (a loss declaring the terms of several
   action spaces produces those of the env's), all finite, and counts its progress;
4. evaluation is deterministic (two evaluations give the same returns);
5. the checkpoint holds only what ``torch.load(weights_only=True)`` accepts and round-trips into a
   fresh build that then acts identically;
6. resume equivalence: ``steps`` then a save / load into a fresh build then ``steps`` more ends
   with the same state (models, optimisers, schedules, counters, RNG, the state of a training hook
   registered on each build: ``ResumeProbe``) as ``2 * steps`` straight, bit for bit unless
   ``resume_tolerance`` says otherwise. For a recurrent policy (``Trainer.recurrent_state_shape``) the
   save happens with an episode running in some environment (refused otherwise: choose other ``steps``),
   so the hidden states carried mid-episode must be in the checkpoint; acting from a loaded checkpoint
   (check 5) is compared over several calls, the hidden state carried between them.

A failed check raises ``ConformanceError`` naming the check and what was found.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .contract.protocol import contract_problems
from .contract.hookspecs import API_VERSION, Build
from .pipeline.session import Session


class ConformanceError(AssertionError):
    """A cell broke the contract; the message names the check."""


def _fail(check: str, message: str) -> None:
    raise ConformanceError(f"[{check}] {message}")


def check_cell(
    recipe: str,
    backend: str | None = None,
    overrides: Iterable[str] = (),
    *,
    steps: int | None = None,
    plugins: Sequence[str] = (),
    recipe_files: Sequence[str] = (),
    objects: Sequence[Any] = (),
    eval_episodes: int = 2,
    resume: bool = True,
    resume_tolerance: float = 0.0,
    dataset: str | None = None,
) -> list[str]:
    """Run every check on the cell (``recipe`` on ``backend``); returns the names of the checks passed.

    ``dataset`` (offline recipes): a dataset name or directory to train from instead of the recipe's, or
    ``"random"``: a tiny dataset made here, ``RANDOM_DATASET_STEPS`` uniformly random transitions of the
    recipe's environment, in a temporary directory removed afterwards (no ``rlplug dataset build``, the slow
    step, and no reference returns: no normalised score)."""
    if dataset == "random":
        import tempfile

        with tempfile.TemporaryDirectory(prefix="rlplug-check-") as directory:
            session = Session(plugins=plugins, recipe_files=recipe_files, objects=objects)
            made = random_dataset(session, recipe, list(overrides), Path(directory) / "random")
            return check_cell(recipe, backend, overrides, steps=steps, plugins=plugins, recipe_files=recipe_files,
                              objects=objects, eval_episodes=eval_episodes, resume=resume,
                              resume_tolerance=resume_tolerance, dataset=made)  # fmt: skip
    session = Session(plugins=plugins, recipe_files=recipe_files, objects=objects)
    overrides = list(overrides) + ([f"dataset={dataset}"] if dataset is not None else [])
    if steps is not None:
        overrides += [*meaningful_cadence(session, recipe, overrides, steps), f"steps={steps}"]
    resolved = session.resolve(recipe, overrides)
    steps = resolved.steps
    passed: list[str] = []

    build = session.prepare(resolved, backend)
    check_declarations(build)
    passed.append("declarations")
    construct_checked(session, build)
    passed.append("construction")
    try:
        check_short_train(build, steps)
        passed.append("short train")
        check_deterministic_evaluation(build, eval_episodes)
        passed.append("deterministic evaluation")
        state = checkpoint_roundtrip(build)
        fresh = session.build(resolved, build.backend)
        try:
            check_same_actions(build, fresh, state)
        finally:
            fresh.trainer.close()
        passed.append("checkpoint round-trip")
    finally:
        build.trainer.close()
    if resume:
        check_resume_equivalence(session, resolved, build.backend, steps, resume_tolerance)
        passed.append("resume equivalence")
    return passed


RANDOM_DATASET_STEPS = 1_000
"""The transitions of ``check_cell(..., dataset="random")``'s dataset: a few batches' worth, in about a second."""


def random_dataset(session: Session, recipe: str, overrides: list[str], directory: Path) -> str:
    """A dataset of ``RANDOM_DATASET_STEPS`` uniformly random transitions of the resolved recipe's environment,
    written at ``directory``; its path."""
    import gymnasium as gym

    from .data.collect import rollout
    from .data.datasets import write

    resolved = session.resolve(recipe, overrides)
    if not resolved.dataset:
        raise ValueError(f"check_cell(dataset='random'): recipe {recipe} is not offline (it names no dataset)")
    env_kwargs = dict(resolved.env_kwargs)
    arrays = rollout(resolved.env, env_kwargs, None, RANDOM_DATASET_STEPS, 0.0, resolved.seed, progress=False)
    env = gym.make(resolved.env, **env_kwargs)
    try:
        info = write(str(directory), arrays, env_id=resolved.env, env_kwargs=env_kwargs, observation_space=env.observation_space,
                     action_space=env.action_space, source={"kind": "random", "seed": resolved.seed}, reference={})  # fmt: skip
    finally:
        env.close()
    return str(info.path)


def meaningful_cadence(session: Session, recipe: str, overrides: Sequence[str], steps: int) -> list[str]:
    """The overrides ``check_cell`` adds so a short train of ``steps`` tests what it means to, for settings
    the caller did not set: ``learning_starts = steps // 2`` where the recipe's warm-up would leave no
    gradient step, and ``log_every = steps`` where ``steps`` is not a whole number of iterations (a resumed
    run would otherwise count one iteration more than a straight one: a cut iteration on each side)."""
    table, _ = session.book.raw(recipe)
    given = {item.partition("=")[0].strip().removeprefix("hyperparameters.") for item in overrides}
    algorithm = next((item.partition("=")[2].strip() for item in overrides if item.partition("=")[0].strip() == "algorithm"),
                     table.get("algorithm"))
    spec = session.host.algorithms.get(algorithm) if isinstance(algorithm, str) else None
    if spec is None:
        return []  # resolve() names the unknown algorithm
    declared, chosen = spec.param_map, table.get("hyperparameters", {})

    def value(name: str) -> Any:
        return chosen.get(name, declared[name].default)

    added = []
    if "learning_starts" in declared and "learning_starts" not in given and value("learning_starts") >= steps:
        added.append(f"learning_starts={steps // 2}")
    if "log_every" in declared and "log_every" not in given and steps % max(1, int(value("log_every"))):
        added.append(f"log_every={steps}")
    return added


# ---- the checks ---------------------------------------------------------------------------------


def check_declarations(build: Build) -> None:
    spec = build.algorithm
    if spec.api_version != API_VERSION:
        _fail("declarations", f"{spec.name} implements API version {spec.api_version}, this core is {API_VERSION}")
    entry = build.loss_entry
    if entry is None or (entry.algorithm, entry.backend) != build.cell:
        _fail("declarations", f"no loss registered for {'/'.join(build.cell)}")
    if not entry.terms:
        _fail("declarations", f"loss '{entry.name}' of {'/'.join(build.cell)} declares no optimised term")


def construct_checked(session: Session, build: Build) -> None:
    def check_stage(slot: str, hook_name: str, value: Any) -> None:
        if value is None and slot not in ("target_updater", "memory", "loss"):
            _fail("construction", f"{hook_name} returned None for {'/'.join(build.cell)}")

    session.construct(build, check_stage)
    if build.loss is None and build.loss_entry.factory is not None:
        _fail("construction", f"rlplug_build_loss returned None although loss '{build.loss_entry.name}' has a factory")
    check_trainer_contract(build.trainer)


def check_trainer_contract(trainer: Any) -> None:
    """Every member ``rlplug.Trainer`` declares is there, methods callable with the declared
    parameters, counters of the declared types (``rlplug.contract.protocol``)."""
    problems = contract_problems(trainer)
    if problems:
        _fail("construction", f"the trainer {type(trainer).__name__} breaks the rlplug.Trainer contract: {'; '.join(problems)}")


def check_short_train(build: Build, steps: int) -> None:
    seen: dict[str, list[float]] = {}

    def record(_: Any, metrics: dict[str, float]) -> None:
        for name, value in metrics.items():
            seen.setdefault(name, []).append(value)

    trainer = build.trainer
    planned = trainer.planned_progress(steps)
    trainer.train(steps, callbacks=[record])
    progress = trainer.progress
    if progress < steps or trainer.iterations < 1:
        _fail("short train", f"train({steps}) stopped at {progress} after {trainer.iterations} iterations")
    if progress != planned:  # the run layer announces and draws its bar with planned_progress
        _fail("short train", f"train({steps}) stopped at {progress}, but planned_progress({steps}) said {planned}")
    # a loss may declare terms of several action spaces (CQL: Box and Discrete); it must produce some
    produced = [term for term in build.loss_entry.terms if seen.get(f"loss/{term}")]
    if not produced:
        _fail("short train", f"none of the optimised terms {build.loss_entry.terms} was reported in {steps} steps "
              "(is the budget past learning_starts?)")
    for name, values in seen.items():
        bad = [v for v in values if name.startswith("loss/") and not math.isfinite(v)]
        if bad:
            _fail("short train", f"'{name}' was {bad[0]}")


def check_deterministic_evaluation(build: Build, episodes: int) -> None:
    first, second = build.trainer.evaluate(episodes), build.trainer.evaluate(episodes)
    if first != second:
        _fail("deterministic evaluation", f"two evaluations differ: {first} vs {second}")


def checkpoint_roundtrip(build: Build) -> dict[str, Any]:
    """The trainer's state through ``torch.save`` and ``torch.load(weights_only=True)``."""
    import pickle

    import torch

    buffer = io.BytesIO()
    torch.save(build.trainer.state_dict(), buffer)
    buffer.seek(0)
    try:
        return torch.load(buffer, weights_only=True)
    except pickle.UnpicklingError as err:
        _fail("checkpoint round-trip", f"state_dict holds more than tensors, numbers and strings: {str(err).splitlines()[0]}")
        raise  # unreachable


def check_same_actions(build: Build, fresh: Build, state: dict[str, Any]) -> None:
    import numpy as np

    fresh.trainer.load_state_dict(state)
    space = build.observation_space
    space.seed(build.seed)
    from .contract.encoders import stack_observations

    observations = stack_observations([space.sample() for _ in range(16)])  # a Dict space: a dict of batches
    multiagent = build.extras.get("multiagent")
    if multiagent is not None:  # multi-agent cells act on [B, n_agents, obs_dim] (masked agents: a dict of those)
        def per_agent(batch: Any) -> Any:
            return np.stack([batch] * multiagent.n_agents, axis=1)

        observations = {k: per_agent(v) for k, v in observations.items()} if isinstance(observations, dict) else per_agent(observations)
    recurrent = getattr(build.trainer, "recurrent_state_shape", None) is not None
    for trainer in (build.trainer, fresh.trainer):
        trainer.reset_acting_state()
    for _ in range(3 if recurrent else 1):  # a recurrent policy's hidden state carries from call to call
        ours, theirs = build.trainer.act_deterministic(observations), fresh.trainer.act_deterministic(observations)
        if not np.array_equal(np.asarray(ours), np.asarray(theirs)):
            _fail("checkpoint round-trip", "a fresh build loaded from the checkpoint acts differently")


class ResumeProbe:
    """A stateful training hook ``check_resume_equivalence`` registers on each of its builds: it counts the
    iterations (``post_steps``) and the gradient steps (``post_optim``, where the trainer's loop calls it)
    and sums the progress it saw. A resume that loses hook state breaks the equality of the final states."""

    def __init__(self) -> None:
        self.state = {"iterations": 0, "gradient_steps": 0, "progress": 0}
        self._trainer: Any = None

    def register(self, trainer: Any, name: str = "rlplug_resume_probe") -> None:
        self._trainer = trainer
        trainer.register_op("post_steps", self.iteration)
        if "post_optim" in trainer.hooks.loop.dests:
            trainer.register_op("post_optim", self.gradient_step)
        trainer.register_module(name, self)

    def iteration(self) -> None:
        self.state["iterations"] += 1
        self.state["progress"] += int(self._trainer.collected_frames)

    def gradient_step(self) -> None:
        self.state["gradient_steps"] += 1

    def state_dict(self) -> dict[str, int]:
        return dict(self.state)

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.state = {key: int(value) for key, value in state.items()}


def _probed(build: Build) -> Build:
    """``build`` with a ``ResumeProbe`` on its trainer, when the trainer takes hooks (``TrainerBase``)."""
    if callable(getattr(build.trainer, "register_op", None)) and hasattr(build.trainer, "hooks"):
        ResumeProbe().register(build.trainer)
    return build


def check_resume_equivalence(session: Session, recipe: Any, backend: str, steps: int, tolerance: float) -> None:
    straight = _probed(session.build(recipe, backend))
    try:
        straight.trainer.train(2 * steps)
        expected = straight.trainer.state_dict()
    finally:
        straight.trainer.close()
    first = _probed(session.build(recipe, backend))
    try:
        first.trainer.train(steps)
        check_mid_episode(first.trainer, steps)
        state = checkpoint_roundtrip(first)
    finally:
        first.trainer.close()
    resumed = _probed(session.build(recipe, backend))
    try:
        resumed.trainer.load_state_dict(state)
        resumed.trainer.train(2 * steps)
        got = resumed.trainer.state_dict()
    finally:
        resumed.trainer.close()
    difference = first_difference(expected, got, tolerance)
    if difference:
        _fail("resume equivalence", f"{steps} + {steps} steps with a resume between differ from {2 * steps} straight at {difference}")


def check_mid_episode(trainer: Any, steps: int) -> None:
    """A recurrent policy's resume is checked with its hidden states mid-episode: some environment must be
    inside an episode when the first half stops (the trainer's ``episodes.lengths``)."""
    import numpy as np

    lengths = getattr(getattr(trainer, "episodes", None), "lengths", None)
    if getattr(trainer, "recurrent_state_shape", None) is None or lengths is None:
        return
    if not np.any(np.asarray(lengths) > 0):
        _fail("resume equivalence", f"after {steps} steps every environment has just begun an episode, so the resume "
              "would not carry a recurrent policy's hidden state mid-episode; check with another number of steps")


def _filled(storage_state: dict[str, Any]) -> dict[str, Any]:
    import torch

    rows = int(storage_state["_len"])

    def cut(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value[:rows]
        if isinstance(value, dict):
            return {k: cut(v) for k, v in value.items()}
        return value

    return {**storage_state, "_storage": cut(storage_state["_storage"])}


def first_difference(expected: Any, got: Any, tolerance: float = 0.0, path: str = "") -> str | None:
    """The first place two trainer states differ (replay memories compared only where filled)."""
    import torch

    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor) or expected.shape != got.shape or expected.dtype != got.dtype:
            return f"{path or 'state'} (shape or dtype)"
        if expected.is_floating_point():
            close = torch.allclose(expected, got, rtol=0.0, atol=tolerance, equal_nan=True) if tolerance else torch.equal(
                torch.nan_to_num(expected, nan=0.125), torch.nan_to_num(got, nan=0.125)
            )
        else:
            close = torch.equal(expected, got)
        if close:
            return None
        if expected.is_floating_point():
            return f"{path} (max abs diff {(expected.double() - got.double()).abs().max().item():.3g})"
        return path
    if isinstance(expected, dict):
        if set(expected) != set(got if isinstance(got, dict) else {}):
            return f"{path or 'state'} (keys)"
        if "_storage" in expected and "_len" in expected:  # a TorchRL storage: rows past _len are uninitialised
            expected, got = _filled(expected), _filled(got)
        for key in expected:
            found = first_difference(expected[key], got[key], tolerance, f"{path}.{key}" if path else str(key))
            if found:
                return found
        return None
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(expected) != len(got):
            return f"{path} (length)"
        for index, (a, b) in enumerate(zip(expected, got)):
            found = first_difference(a, b, tolerance, f"{path}[{index}]")
            if found:
                return found
        return None
    if isinstance(expected, float) and isinstance(got, float) and math.isnan(expected) and math.isnan(got):
        return None
    return None if expected == got else f"{path} ({expected!r} vs {got!r})"
