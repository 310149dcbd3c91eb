"""``rlplug tune``: a hyperparameter search on Optuna whose result is a recipe.

A study searches a recipe's search space (``rlplug.recipes.search_space``: the ``search`` its algorithm's ``Param``s
declare, narrowed or fixed by the recipe's ``[recipes.X.search]`` table) with a seeded TPE sampler and a
median pruner. Each trial trains the recipe with the trial's values in this process, on each of S seeds
in turn, and scores it by the mean final evaluation return over the seeds (the normalised score for an
offline recipe whose ``target_metric`` is ``normalised_score``); the evaluations along the way feed the
pruner. Studies live in an Optuna RDB storage (an SQLite file by default), so an interrupted study
continues where it stopped and several processes, or machines, share one. One module per job:

* ``storage``    opening the storage and the study; the configuration a study is bound to
* ``objective``  one trial: the recipe with its values, trained and evaluated over the seeds
* ``loop``       running trials in this process or in worker processes, and the progress bar
* ``export``     re-evaluating the best trial on fresh seeds and writing it as a recipe
* ``report``     the Markdown summary with Optuna's plots

Optuna is an optional extra (``rlplug[tune]``); nothing imports this package but ``rlplug tune``.
"""

from __future__ import annotations

from typing import Any

from ..errors import RlplugError

__all__ = ["StudyError", "require_optuna"]


class StudyError(RlplugError):
    """A study's storage cannot be opened, the study is missing, or it was made for another configuration."""


def require_optuna() -> Any:
    """The ``optuna`` module, or the one line saying which extra installs it."""
    try:
        import optuna
    except ImportError:
        raise RlplugError("rlplug tune needs Optuna: pip install 'rlplug[tune]'") from None
    import warnings

    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # rlplug prints one line per trial itself
    return optuna
