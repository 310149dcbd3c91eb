"""The result of a study is a recipe: the best trial re-evaluated on fresh seeds (next to the recipe as
written, on the same seeds and budget), then written as a TOML recipe that ``extends`` the original and
sets only what changed, with the study's summary as comments. ``rlplug show`` and ``rlplug train`` read it
with ``--recipes FILE`` as it is."""

from __future__ import annotations

import dataclasses
import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..util.outputs import TUNED_RECIPE, write_file
from ..recipes.fields import RECIPE_NAME, Recipe, file_stem
from ..recipes.files import split_ref
from ..schema import AlgorithmSpec
from ..recipes.search_space import SearchSpace
from . import StudyError
from .objective import Cost, TrialPlan, decoded, seed_scores

FRESH_SEED_OFFSET = 10_000
"""Re-evaluation seeds start this far from the recipe's seed: never one a trial trained on."""

_COPIED_FIELDS = ("algorithm", "env", "dataset", "env_kwargs", "backend", "num_envs", "loss", "target", "target_metric",
                  "beat_dataset", "eval_episodes")  # fmt: skip
"""Recipe fields a tuned recipe sets when ``--set`` or ``--backend`` changed them (not its budget or seed:
``--steps`` is the budget of the trials, the recipe keeps its own)."""


SLOWER = 2.0
"""A tuned recipe that trains this many times slower per step than the recipe as written is called out."""


@dataclass
class Reevaluation:
    """Final scores of the best trial's recipe and of the recipe as written on the same fresh seeds, and
    the training steps per second of each there (the same budget, seeds and machine: comparable)."""

    trial: int
    seeds: list[int]
    tuned: list[float]
    original: list[float] = field(default_factory=list)
    tuned_steps_per_second: float | None = None
    original_steps_per_second: float | None = None

    def line(self, original_ref: str) -> str:
        text = f"fresh seeds {', '.join(map(str, self.seeds))}: tuned {_mean_std(self.tuned)}"
        return text + (f", {original_ref} as written {_mean_std(self.original)}" if self.original else
                       f" ({original_ref} as written has the same values)")  # fmt: skip

    def gain_line(self, original_ref: str) -> str | None:
        """Whether the tuned recipe's gain over the recipe as written stands out of the seeds' noise: the
        bootstrap 95 % interval of the paired differences (same fresh seed, tuned minus as written)."""
        if not self.original:
            return None
        from ..results.seeded import bootstrap_ci

        differences = [t - o for t, o in zip(self.tuned, self.original)]
        gain = statistics.fmean(differences)
        text = f"gain over {original_ref} as written: {gain:+.4g}"
        if len(differences) < 2:
            return text + " on one fresh seed, too few to tell it from the seeds' noise (--eval-seeds 3 or more)"
        low, high = bootstrap_ci(differences)
        text += f" (95 % CI of the paired difference over {len(differences)} fresh seeds: {low:+.4g} to {high:+.4g})"
        if low <= 0 <= high:
            return text + ": inside the seeds' noise, not shown to be better"
        return text + (": outside the seeds' noise" if gain > 0 else ": worse, outside the seeds' noise")


def speed_line(tuned: float | None, original: float | None, original_ref: str, where: str) -> str | None:
    """Training steps per second of the tuned values against the recipe as written, called out when the
    tuned ones cost ``SLOWER`` times or more per step."""
    if not tuned or not original:
        return None
    text = f"speed ({where}): tuned {tuned:,.0f} steps/s against {original:,.0f} for {original_ref} as written"
    if original / tuned >= SLOWER:
        text += f": the tuned recipe costs {original / tuned:.1f}x the time per step"
    return text


def _mean_std(values: list[float]) -> str:
    if not values:
        return "-"
    spread = statistics.pstdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.4g} ± {spread:.2g}"


def best_trial(study: Any) -> Any:
    from optuna.trial import TrialState

    if not study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        raise StudyError(f"study '{study.study_name}' has no complete trial yet; run more trials first")
    return study.best_trial


def fresh_seeds(recipe: Recipe, count: int) -> list[int]:
    return [(recipe.seed + FRESH_SEED_OFFSET + i) % 2**32 for i in range(count)]


def reevaluate(study: Any, plan: TrialPlan, original: Recipe, best_hp: dict[str, Any], trial: int, count: int,
               differs: bool, log: Any = None, progress: bool = False) -> Reevaluation | None:  # fmt: skip
    """Train the best trial's values, and the recipe as written (when they differ), on ``count`` fresh seeds
    each, with the trials' budget and backend, under a bar over the steps (``progress``); kept in the study,
    so exporting the same best trial again does not train again."""
    if count <= 0:
        return None
    seeds = fresh_seeds(plan.recipe, count)
    cached = study.user_attrs.get("reevaluation")
    if isinstance(cached, dict) and cached.get("trial") == trial and cached.get("seeds") == seeds:
        known = {f.name for f in dataclasses.fields(Reevaluation)}
        return Reevaluation(**{k: v for k, v in cached.items() if k in known})
    if log:
        log(f"re-evaluating trial {trial}{f' and {original.ref} as written' if differs else ''} on fresh seeds "
            f"{', '.join(map(str, seeds))}")  # fmt: skip
    import sys

    from tqdm import tqdm

    fresh = dataclasses.replace(plan, seeds=seeds, max_seconds=None)  # the budget picked trials; this compares them
    runs = [(best_hp, fresh)] + ([({}, dataclasses.replace(fresh, recipe=original))] if differs else [])
    scores, rates = [], []
    with tqdm(total=len(runs) * count * plan.steps, desc="re-evaluating", unit="step", dynamic_ncols=True,
              disable=not progress, leave=False, file=sys.stderr) as bar:  # fmt: skip
        for index, (hp, run_plan) in enumerate(runs):
            base, cost = index * count * plan.steps, Cost()
            scores.append(seed_scores(run_plan, hp, tick=lambda done: bar.update(base + done - bar.n), cost=cost))
            rates.append(None if cost.steps_per_second is None else round(cost.steps_per_second, 1))
    result = Reevaluation(trial, seeds, scores[0], tuned_steps_per_second=rates[0])
    if differs:
        result.original, result.original_steps_per_second = scores[1], rates[1]
    study.set_user_attr("reevaluation", dataclasses.asdict(result))
    return result


def tuned_recipe(plan: TrialPlan, best_hp: dict[str, Any]) -> Recipe:
    """The plan's recipe with the best trial's values, its own budget and seed."""
    recipe = plan.recipe_with(best_hp, plan.recipe.seed)
    recipe.steps = plan.recipe.steps
    return recipe


# ---- the recipe file --------------------------------------------------------------------------------


def export_ref(book: Any, original: Recipe, as_ref: str | None) -> tuple[str, int]:
    """The tuned recipe's name and version: ``NAME-tuned``, or ``--as NAME[@N]`` (without ``@N``: the next
    version of NAME). A name and version that already exist are refused."""
    name, version = split_ref(as_ref) if as_ref else (f"{file_stem(original.name)}-tuned", None)
    if not RECIPE_NAME.fullmatch(name):
        raise StudyError(f"--as {as_ref}: {name!r} is not a recipe name (letters, digits and _ . + -, no spaces)")
    versions = [v for n, v in book.refs() if n == name]
    if version is None:
        version = max(versions, default=0) + 1
    elif version in versions:
        raise StudyError(f"--as {as_ref}: recipe '{name}@{version}' already exists; choose another version "
                         f"(the next free one is {max(versions) + 1})")  # fmt: skip
    return name, version


def changes(spec: AlgorithmSpec, original: Recipe, tuned: Recipe) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """What the tuned recipe sets: changed fields, changed hyperparameters (in the algorithm's order) and
    changed raw backend settings."""
    before, after = original.to_table(), tuned.to_table()
    # a target dropped with a change of task is no value to write: the tuned recipe drops it the same way
    fields = {k: after[k] for k in _COPIED_FIELDS if after[k] != before[k] and after[k] is not None}
    old_hp = {**spec.defaults(), **original.hyperparameters}
    new_hp = {**spec.defaults(), **tuned.hyperparameters}
    hp = {p.name: new_hp[p.name] for p in spec.params if new_hp.get(p.name) != old_hp.get(p.name)}
    tables = {}
    for backend in sorted(set(original.backend_settings) | set(tuned.backend_settings)):
        old, new = original.backend_settings.get(backend, {}), tuned.backend_settings.get(backend, {})
        changed = {k: v for k, v in new.items() if old.get(k) != v}
        if changed:
            tables[backend] = changed
    return fields, hp, tables


def recipe_text(name: str, version: int, extends: str, description: str, fields: dict[str, Any], hp: dict[str, Any],
                tables: dict[str, Any], comments: list[str]) -> str:  # fmt: skip
    head = f"recipes.{_key(name)}"
    lines = [f"# {c}" if c else "#" for c in comments]
    lines += ["", f"[{head}]", f"extends = {_value(extends)}", f"version = {version}", f"description = {_value(description)}"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in fields.items()]
    for label, table in (("hyperparameters", hp), *tables.items()):
        if table:
            lines += ["", f"[{head}.{label}]", *(f"{_key(k)} = {_value(v)}" for k, v in table.items())]
    return "\n".join(lines) + "\n"


def summary_comments(study: Any, config: dict[str, Any], best: Any, space: SearchSpace, reeval: Reevaluation | None,
                     original_ref: str, storage_url: str) -> list[str]:  # fmt: skip
    from optuna.trial import TrialState

    from .. import __version__

    trials = study.get_trials(deepcopy=False)
    states = [t.state for t in trials]
    counts = ", ".join(f"{states.count(s)} {label}" for s, label in
                       ((TrialState.COMPLETE, "complete"), (TrialState.PRUNED, "pruned"), (TrialState.FAIL, "failed")))  # fmt: skip
    metric = "normalised score" if config["objective"] == "normalised_score" else "evaluation return"
    seeds = config["seeds"]
    lines = [
        f"Tuned by rlplug tune (rlplug {__version__}, Optuna {_optuna_version()}): the best trial of study "
        f"'{study.study_name}' in {storage_url}",
        f"study started by: {config.get('command', '?')}",
        f"trials: {len(trials)} ({counts}); each trained {config['steps']} steps on {config['backend']} per seed, "
        f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}",
        f"objective: mean final {metric} over the seeds (TPE sampler, median pruner on {config['evaluations']} "
        "evaluations per seed)",
    ]
    per_seed = best.user_attrs.get("seed_scores") or []
    best_line = f"best: trial {best.number}, {best.value:.4g}"
    if len(per_seed) > 1:
        best_line += f" (per seed: {', '.join(f'{s:.4g}' for s in per_seed)})"
    baseline = baseline_trial(study)
    if baseline is not None and baseline.number == best.number:
        best_line += ", the recipe's own values"
    elif baseline is not None:
        best_line += f"; the recipe's own values (trial {baseline.number}): {baseline.value:.4g}"
    lines.append(best_line)
    lines.append(reeval.line(original_ref) if reeval else "not re-evaluated on fresh seeds (--eval-seeds 0)")
    lines += verdict_lines(reeval, best, baseline, original_ref)
    lines.append("search space:")
    lines += [f"  {name}: {search.text()}" for name, search in space.searched.items()]
    lines += [f"  {name}: fixed at {json.dumps(value)}" for name, value in space.fixed.items()]
    return lines


def baseline_trial(study: Any) -> Any:
    """The complete trial of the recipe as written, or ``None``."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    return next((t for t in trials if t.user_attrs.get("baseline")), None)


def verdict_lines(reeval: Reevaluation | None, best: Any, baseline: Any, original_ref: str) -> list[str]:
    """Whether the gain is inside the seeds' noise, and what the tuned values cost per step against the
    recipe as written (measured in the re-evaluation, else in the trials: busier with ``--jobs``)."""
    lines = [reeval.gain_line(original_ref)] if reeval is not None else []
    if reeval is not None and reeval.original_steps_per_second:
        lines.append(speed_line(reeval.tuned_steps_per_second, reeval.original_steps_per_second, original_ref,
                                "re-evaluation"))  # fmt: skip
    elif baseline is not None and baseline.number != best.number:
        lines.append(speed_line(best.user_attrs.get("steps_per_second"), baseline.user_attrs.get("steps_per_second"),
                                original_ref, f"trials {best.number} and {baseline.number}"))  # fmt: skip
    return [line for line in lines if line]


def _optuna_version() -> str:
    import optuna

    return optuna.__version__


def write_recipe(path: Path, text: str, inputs: list[tuple[Path, str]]) -> None:
    """Write the tuned recipe atomically, over nothing or an earlier tuned recipe that is none of ``inputs``."""
    write_file(path, TUNED_RECIPE, "tune --out", lambda partial: partial.write_text(text, encoding="utf-8"), inputs)


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def best_values(best: Any, space: SearchSpace) -> dict[str, Any]:
    """The best trial's hyperparameter values (the search table's fixed ones included)."""
    return {**space.fixed, **decoded(best.params, space)}
