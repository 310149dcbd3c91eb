"""Every first-party recipe's step budget is a whole number of its iterations on every backend, so a default run
trains exactly its budget and prints no rounding note (issue 53); the note stays for budgets a user gives
(tests/test_task_and_budget.py)."""

from __future__ import annotations

import warnings

import pytest

from rlplug.errors import SuiteMissingError
from rlplug.pipeline.session import Session
from rlplug.runs import budget_note

pytest.importorskip("torch")
pytest.importorskip("torchrl")

ROUNDED = {
    ("dqn-cartpole", "torchrl"): "50_000 is 195.3 iterations of 256 (1 env x train_every 256); skrl's iteration is "
                                 "one env step, and 49_920 would end skrl's run 80 steps earlier and shorten both "
                                 "backends' linear lr schedules",
    ("ppo-lstm-cartpole-novel", "skrl"): "its linear lr and clip schedules run over the budget: 99_840 would change them",
    ("ppo-lstm-cartpole-novel", "torchrl"): "its linear lr and clip schedules run over the budget: 99_840 would change them",
    ("ppo-cartpole-novel", "skrl"): "extends ppo-lstm-cartpole-novel (linear schedules over the budget)",
    ("ppo-cartpole-novel", "torchrl"): "extends ppo-lstm-cartpole-novel (linear schedules over the budget)",
    ("qrdqn-cartpole", "torchrl"): "as dqn-cartpole's: 50_000 is 195.3 iterations of 256 on TorchRL, one env step on skrl; "
                                   "49_920 would end skrl's run earlier and shorten both backends' linear lr schedules",
    ("c51-cartpole", "torchrl"): "qrdqn-cartpole's hyperparameters and budget, so the two distributional heads "
                                 "compare on one setup (50_000 is 195.3 iterations of 256 on TorchRL)",
    ("a2c-cartpole", "skrl"): "its linear lr schedule runs over the budget: 99_968 would change it",
    ("a2c-cartpole", "torchrl"): "its linear lr schedule runs over the budget: 99_968 would change it",
}
"""Budgets that stay rounded because a whole-iteration budget would change what the recipe trains (its verified
results); kept as they are until a new recipe version re-measures them."""


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    # gail-pendulum's build reads its dataset: a random stand-in, so the check holds on a machine that has built none
    from conftest import write_dataset

    data = tmp_path_factory.mktemp("datasets")
    write_dataset(data / "pendulum-expert", "Pendulum-v1")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLPLUG_DATA_DIR", str(data))
        yield Session()


def cells(session):
    for name in session.book.names():
        recipe = session.resolve(name)
        spec = session.host.algorithm(recipe.algorithm)
        if spec.kind == "offline":
            continue  # progress counts gradient updates, and an iteration stops at the budget: never rounded
        for backend in spec.backends:
            yield name, backend


def test_every_recipe_budget_is_whole_iterations(session):
    rounded, checked = {}, 0
    for name, backend in cells(session):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                build = session.build(name, backend)
        except SuiteMissingError:
            continue  # the env's suite is not installed here (MinAtar)
        try:
            note = budget_note(build, build.recipe.steps)
        finally:
            build.trainer.close()
        checked += 1
        if note is not None:
            rounded[name, backend] = note
    assert checked >= 20
    assert set(rounded) == set(ROUNDED), {cell: rounded.get(cell) for cell in set(rounded) ^ set(ROUNDED)}


def test_the_flagship_recipe_trains_its_budget_without_a_note(session):
    build = session.build("ppo-cartpole", "skrl")
    try:
        assert build.recipe.steps == 99_840 and build.trainer.planned_progress(99_840) == 99_840
        assert budget_note(build, build.recipe.steps) is None
        assert budget_note(build, 100_000) == ("steps 100000 rounded down to 99840: training runs whole iterations of 512 "
                                               "env steps (8 envs x 64)")  # a budget a user gives is still said
    finally:
        build.trainer.close()
