"""``rlplug tune --report FILE.md``: the study as Markdown (best values against the recipe's, the
re-evaluation, every trial) with Optuna's matplotlib plots as PNGs next to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..util.outputs import PICTURE, TUNE_REPORT, check_output, png_metadata, write_file
from ..schema import choice_text
from ..recipes.search_space import SearchSpace
from .export import Reevaluation, best_values

PLOTS = (
    ("history", "optimisation history", "plot_optimization_history"),
    ("importances", "parameter importances", "plot_param_importances"),
    ("intermediate", "evaluations during each trial (what the pruner compares)", "plot_intermediate_values"),
)


def write_report(path: Path, study: Any, config: dict[str, Any], best: Any, space: SearchSpace, recipe_values: dict[str, Any],
                 reeval: Reevaluation | None, original_ref: str, recipe_path: Path | None, comments: list[str]) -> list[Path]:  # fmt: skip
    """Write the report and its plots; the files written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    plots, notes = _plots(path, study)
    values = best_values(best, space)
    lines = [
        f"# Tuning {original_ref} on {config['backend']}",
        "",
        *[f"    {c}" for c in comments],
        "",
        f"The tuned recipe: `{recipe_path}`." if recipe_path else "",
        "",
        "## Best values",
        "",
        f"| parameter | search | best (trial {best.number}) | {original_ref} |",
        "|---|---|---|---|",
    ]
    for name, search in space.searched.items():
        lines.append(f"| `{name}` | {search.text()} | {_cell(values.get(name))} | {_cell(recipe_values.get(name))} |")
    for name, value in space.fixed.items():
        lines.append(f"| `{name}` | fixed | {_cell(value)} | {_cell(recipe_values.get(name))} |")
    if reeval is not None:
        lines += ["", "## Re-evaluation on fresh seeds", "", "| seed | tuned | as written |", "|---|---|---|"]
        for i, seed in enumerate(reeval.seeds):
            original = f"{reeval.original[i]:.4g}" if reeval.original else "(same values)"
            lines.append(f"| {seed} | {reeval.tuned[i]:.4g} | {original} |")
        if reeval.tuned_steps_per_second:
            original = f"{reeval.original_steps_per_second:,.0f}" if reeval.original_steps_per_second else "(same values)"
            lines.append(f"| steps/s | {reeval.tuned_steps_per_second:,.0f} | {original} |")
    lines += ["", "## Trials", "", "| trial | state | value | seconds | steps/s | outcome |", "|---|---|---|---|---|---|"]
    for trial in study.get_trials(deepcopy=False):
        seconds = f"{trial.duration.total_seconds():.1f}" if trial.duration is not None else ""
        rate = trial.user_attrs.get("steps_per_second")
        rate = f"{rate:,.0f}" if isinstance(rate, (int, float)) else ""
        value = f"{trial.value:.4g}" if trial.value is not None else ""
        outcome = trial.user_attrs.get("outcome", "") + (" (the recipe's own values)" if trial.user_attrs.get("baseline") else "")
        lines.append(f"| {trial.number} | {trial.state.name.lower()} | {value} | {seconds} | {rate} | {outcome.strip()} |")
    lines += ["", "## Plots", ""]
    for file, title in plots:
        lines += [f"![{title}]({file.name})", ""]
    lines += [f"* {note}" for note in notes]
    text = "\n".join(lines).rstrip() + "\n"
    write_file(path, TUNE_REPORT, "tune --report", lambda partial: partial.write_text(text, encoding="utf-8"))
    return [path, *(file for file, _ in plots)]


def plot_paths(path: Path) -> list[Path]:
    """The PNGs written next to the report ``path``, one per plot in ``PLOTS``."""
    return [path.with_name(f"{path.stem}-{suffix}.png") for suffix, _, _ in PLOTS]


def check_report_paths(path: Path, inputs: list[tuple[Path, str]]) -> None:
    """Refuse, before any trial runs, a report or plot path that holds something an earlier report did not write."""
    check_output(path, TUNE_REPORT, "tune --report", inputs)
    for file in plot_paths(path):
        check_output(file, PICTURE, "tune --report", inputs)


def _cell(value: Any) -> str:
    return "" if value is None else f"`{choice_text(value)}`"


def _plots(path: Path, study: Any) -> tuple[list[tuple[Path, str]], list[str]]:
    """Each of Optuna's matplotlib plots that the study has enough trials for; a note for each it has not."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as plots

    written, notes = [], []
    for (suffix, title, function), file in zip(PLOTS, plot_paths(path)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                axes = getattr(plots, function)(study)
            figure = getattr(axes, "figure", None) or axes.flat[0].figure
            if not figure.axes or not any(ax.has_data() for ax in figure.axes):
                raise ValueError("no data to plot yet")
            figure.set_size_inches(7, 4)
            with warnings.catch_warnings():  # a slice plot of many parameters cannot fit its margins; it is still drawn
                warnings.simplefilter("ignore", UserWarning)
                figure.tight_layout()
            write_file(file, PICTURE, "tune --report",
                       lambda partial: figure.savefig(partial, dpi=100, format="png", metadata=png_metadata("tune")))  # fmt: skip
            plt.close(figure)
            written.append((file, title))
        except (ValueError, RuntimeError, ZeroDivisionError) as err:
            plt.close("all")
            notes.append(f"no {title} plot: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
    return written, notes
