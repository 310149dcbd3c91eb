"""One trial: the recipe with the trial's values, trained in this process on each seed in turn and scored
by its final deterministic evaluation. Evaluations along the way go to the pruner (``report``): online
cells are evaluated every ``steps / evaluations`` steps here, through the trainer's callbacks; offline
cells already evaluate every ``eval_every`` updates and put the result in their metrics.

A trial's intermediate values are reported at the steps trained so far over its seeds (seed ``i``'s
evaluation at step ``s`` is reported at ``i * steps + s``), so the median pruner compares trials on the
same seed at the same point of its training.

Each trial records what it cost (``wall_seconds``, and ``steps_per_second`` of its training alone, evaluations
left out) in its user attributes; with ``--max-seconds-per-trial`` a trial still training past its budget is
pruned at the end of the iteration under way.
"""

from __future__ import annotations

import copy
import math
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import RecipeError, RlplugError, TrainingDivergedError
from ..recipes.fields import Recipe
from ..schema import SEARCH_VALUE_TYPES, Param, Search, choice_text
from ..recipes.search_space import SearchSpace

INTERMEDIATE_EPISODES = 5
"""Episodes of each evaluation along the way (the final one uses the recipe's ``eval_episodes``)."""

Report = Callable[[float, int], None]
Tick = Callable[[int], None]
"""Called after every training iteration with the steps trained so far over the seeds of one ``seed_scores``."""


@dataclass
class TrialPlan:
    """What every trial of a study trains: the recipe (``--set`` overrides and the search table's fixed
    values applied), its backend, the budget per seed, the seeds, and how often it is evaluated."""

    session: Any
    recipe: Recipe
    backend: str
    steps: int
    seeds: list[int]
    evaluations: int
    objective: str = "return"  # or "normalised_score"
    max_seconds: float | None = None  # --max-seconds-per-trial: a trial still training after this is pruned

    def recipe_with(self, hp: dict[str, Any], seed: int) -> Recipe:
        recipe = copy.deepcopy(self.recipe)
        recipe.hyperparameters = {**recipe.hyperparameters, **copy.deepcopy(hp)}
        recipe.seed, recipe.steps = seed, self.steps
        return recipe


# ---- values <-> what Optuna stores ----------------------------------------------------------------


def _encoded(value: Any) -> Any:
    """Optuna stores choices that are numbers, strings or booleans; a list (``[64, 64]``) is stored as its TOML text."""
    return value if value is None or isinstance(value, SEARCH_VALUE_TYPES) else choice_text(value)


def suggest(trial: Any, param: Param, search: Search) -> Any:
    """The trial's value for ``param``, drawn from ``search``."""
    if search.choices is not None:
        encoded = [_encoded(c) for c in search.choices]
        return search.choices[encoded.index(trial.suggest_categorical(param.name, encoded))]
    if param.value_type is int:
        return trial.suggest_int(param.name, int(search.low), int(search.high), log=search.log)
    return trial.suggest_float(param.name, float(search.low), float(search.high), log=search.log)


def decoded(stored: dict[str, Any], space: SearchSpace) -> dict[str, Any]:
    """A finished trial's ``params`` as hyperparameter values (TOML text back to lists)."""
    values = {}
    for name, value in stored.items():
        search = space.searched.get(name)
        if search is not None and search.choices is not None:
            for choice in search.choices:
                if _encoded(choice) == value:
                    value = copy.deepcopy(choice)
                    break
        values[name] = value
    return values


def enqueue_values(space: SearchSpace, values: dict[str, Any]) -> dict[str, Any]:
    """The recipe's own values of the searched parameters that lie in their search, as Optuna stores them:
    the first trial of a new study tries the recipe as written (the others are drawn)."""
    out = {}
    for name, search in space.searched.items():
        value = values.get(name)
        if search.choices is not None:
            if any(_encoded(c) == _encoded(value) and type(c) is type(value) for c in search.choices):
                out[name] = _encoded(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and search.low <= value <= search.high:
            out[name] = value
    return out


# ---- training and scoring -------------------------------------------------------------------------


@dataclass
class Cost:
    """What training cost: the steps trained over the seeds and the seconds spent in training them (the
    evaluations along the way and at the end left out), so steps per second compare with ``rlplug train``'s."""

    steps: int = 0
    seconds: float = 0.0

    @property
    def steps_per_second(self) -> float | None:
        return self.steps / self.seconds if self.seconds > 0 else None


def seed_scores(plan: TrialPlan, hp: dict[str, Any], report: Report | None = None, tick: Tick | None = None,
                cost: Cost | None = None) -> list[float]:  # fmt: skip
    """Train ``hp`` on each of the plan's seeds in turn; each seed's final score. ``report(value, step)``
    sees every evaluation and may raise to stop the trial; so may ``tick`` (``Tick``). ``cost`` adds up
    what the training took. A ``RecipeError`` means the values break a rule."""
    scores = []
    cost = cost if cost is not None else Cost()
    for index, seed in enumerate(plan.seeds):
        build = plan.session.prepare(plan.recipe_with(hp, seed), plan.backend)
        plan.session.construct(build)
        try:
            scores.append(_train_and_score(build, plan, index * plan.steps, report, tick, cost))
        finally:
            build.trainer.close()
    return scores


def _train_and_score(build: Any, plan: TrialPlan, offset: int, report: Report | None, tick: Tick | None, cost: Cost) -> float:
    from ..runs.divergence import diverged_parameters

    trainer = build.trainer
    own_evaluations = build.algorithm.kind != "offline"  # offline trainers evaluate every eval_every updates
    metric = "eval/normalised_score" if plan.objective == "normalised_score" else "eval/return"
    every = max(1, plan.steps // plan.evaluations)
    due = [every * k for k in range(1, plan.evaluations)]  # the last evaluation is the final one
    episodes = min(build.recipe.eval_episodes, INTERMEDIATE_EPISODES)
    started, evaluating, trained_before = time.perf_counter(), [0.0], trainer.progress

    def on_step(tr: Any, metrics: dict[str, float]) -> None:
        for name, value in metrics.items():
            if name.startswith("loss/") and not math.isfinite(value):
                raise TrainingDivergedError(f"{name[5:]} became {value} by {tr.progress_unit.replace('_', ' ')} {tr.progress}")
        if tick is not None:
            tick(offset + tr.progress)
        if report is None:
            return
        if not own_evaluations:  # the final evaluation below stands for one at the last step
            if metric in metrics and math.isfinite(metrics[metric]) and tr.progress < plan.steps:
                report(float(metrics[metric]), offset + tr.progress)
        elif due and tr.progress >= due[0] and tr.progress < plan.steps:
            while due and tr.progress >= due[0]:
                due.pop(0)
            evaluation_started = time.perf_counter()
            returns = tr.evaluate(episodes)
            evaluating[0] += time.perf_counter() - evaluation_started
            report(score(build, plan.objective, returns), offset + tr.progress)

    try:
        trainer.train(plan.steps, callbacks=[on_step])
    except (RuntimeError, ValueError) as err:  # a library choking on NaN parameters
        diverged = diverged_parameters(err, trainer)
        if diverged is None:
            raise
        raise TrainingDivergedError(str(diverged).split("; training stopped")[0]) from None
    finally:  # a pruned or stopped seed counts what it trained
        cost.steps += trainer.progress - trained_before
        cost.seconds += time.perf_counter() - started - evaluating[0]
    value = score(build, plan.objective, trainer.evaluate(build.recipe.eval_episodes))
    if report is not None:
        report(value, offset + plan.steps)
    return value


def score(build: Any, objective: str, returns: list[float]) -> float:
    """The mean return, or the dataset's normalised score of it."""
    mean = float(sum(returns) / len(returns))
    if objective != "normalised_score":
        return mean
    dataset = build.extras.get("dataset")
    value = dataset.normalised_score(mean) if dataset is not None else None
    if value is None:
        raise RlplugError(f"recipe '{build.recipe.name}': its dataset has no reference returns, so no normalised score")
    return float(value)


class Objective:
    """What ``study.optimize`` calls: draws the trial's values, trains them, returns the mean score. Every
    trial that does not complete says why in its ``outcome`` attribute (pruned, refused, failed, interrupted)."""

    def __init__(self, plan: TrialPlan, space: SearchSpace, params: dict[str, Param]) -> None:
        self.plan, self.space, self.params = plan, space, params

    def __call__(self, trial: Any) -> float:
        import optuna

        hp = {name: suggest(trial, self.params[name], search) for name, search in self.space.searched.items()}
        trial.set_user_attr("process", f"{socket.gethostname()}:{os.getpid()}")  # which machine and worker ran it

        reported: set[int] = set()
        cost, started, budget = Cost(), time.perf_counter(), self.plan.max_seconds

        def over_budget(step: int) -> None:
            seconds = time.perf_counter() - started
            if budget is not None and seconds > budget:
                trial.set_user_attr("outcome", f"over --max-seconds-per-trial {budget:g}: {seconds:.0f} s by step {step}")
                raise optuna.TrialPruned()

        def report(value: float, step: int) -> None:
            if step in reported:  # Optuna keeps the first value of a step and warns about the second
                return
            reported.add(step)
            trial.report(value, step)
            if trial.should_prune():
                trial.set_user_attr("outcome", f"pruned at step {step} ({value:.4g})")
                raise optuna.TrialPruned()

        try:
            scores = seed_scores(self.plan, hp, report, over_budget, cost)
        except optuna.TrialPruned:
            raise
        except RecipeError as err:  # the drawn values break a rule of the algorithm: nothing to train
            trial.set_user_attr("outcome", f"refused: {str(err).split(': ', 1)[-1]}")
            raise optuna.TrialPruned() from None
        except KeyboardInterrupt:
            trial.set_user_attr("outcome", "interrupted")
            raise
        except Exception as err:
            trial.set_user_attr("outcome", f"failed: {_one_line(err)}")
            raise
        finally:  # what the trial cost, whatever became of it: the report and the export weigh it
            trial.set_user_attr("wall_seconds", round(time.perf_counter() - started, 2))
            if cost.steps_per_second is not None:
                trial.set_user_attr("steps_per_second", round(cost.steps_per_second, 1))
        trial.set_user_attr("seed_scores", scores)
        return sum(scores) / len(scores)


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    text = text if isinstance(err, RlplugError) else f"{type(err).__name__}: {text}".rstrip(": ")
    return text if len(text) <= 200 else text[:197] + "..."


CAUGHT = (RlplugError, RuntimeError, ValueError, ArithmeticError)
"""Exceptions that fail one trial and let the study go on (a diverged or crashed run); others stop it."""
