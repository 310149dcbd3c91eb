"""The trainer contract: what ``check_cell`` checks a built trainer against, and the base classes' defaults."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rlplug import Trainer
from rlplug.errors import ExportUnsupportedError, NoReplayMemoryError, VideoUnsupportedError
from rlplug.contract.protocol import contract_members, contract_problems
from rlplug.contract.multiagent_trainer import MultiAgentTrainerBase
from rlplug.contract.trainer import TrainerBase

BUILD = SimpleNamespace(num_envs=1, env_id="mpe:simple_spread", env_kwargs={}, seed=0)


class Minimal(TrainerBase):
    def step(self):
        return {}

    def act_deterministic(self, observations):
        return observations

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


def test_every_member_the_core_calls_is_declared():
    members = set(contract_members())
    assert members == {"env_steps", "iterations", "progress", "progress_unit", "gradient_steps", "step", "train",
                       "evaluate", "act_deterministic", "replay_transitions", "export_policy", "compile_seconds", "state_dict",
                       "load_state_dict", "close", "planned_progress", "steps_per_iteration"}


def test_a_trainer_base_subclass_conforms_with_not_capable_defaults():
    trainer = Minimal(BUILD)
    assert contract_problems(trainer) == [] and isinstance(trainer, Trainer)
    assert trainer.gradient_steps is None
    with pytest.raises(NoReplayMemoryError, match="Minimal keeps no replay memory"):
        trainer.replay_transitions()
    with pytest.raises(ExportUnsupportedError, match="Minimal cannot export its policy: Minimal implements no export_policy"):
        trainer.export_policy()


def test_contract_problems_name_what_is_missing_or_wrong():
    trainer = Minimal(BUILD)
    trainer.gradient_steps = "many"
    trainer.progress_unit = "episodes"
    trainer.evaluate = lambda episodes: []  # an evaluate that cannot take video_dir
    problems = contract_problems(trainer)
    assert "'gradient_steps' is 'many', not int | None" in problems
    assert "'evaluate' does not take 'video_dir'" in problems
    assert any("'progress_unit' is 'episodes'" in p for p in problems)
    assert {"no 'step'", "no 'env_steps'", "no 'gradient_steps'"} <= set(contract_problems(object()))


def test_multiagent_evaluation_refuses_video_instead_of_dropping_it():
    class MultiMinimal(MultiAgentTrainerBase, Minimal):
        pass

    trainer = MultiMinimal(BUILD)
    assert contract_problems(trainer) == []
    with pytest.raises(VideoUnsupportedError, match="single-agent gymnasium environments only; mpe:simple_spread is multi-agent"):
        trainer.evaluate(1, video_dir="videos")


def test_the_conformance_kit_refuses_a_trainer_that_breaks_the_contract():
    from rlplug.testing import ConformanceError, check_trainer_contract

    check_trainer_contract(Minimal(BUILD))
    with pytest.raises(ConformanceError, match=r"\[construction\] the trainer object breaks the rlplug.Trainer contract: .*no 'step'"):
        check_trainer_contract(object())


def test_check_cell_fits_warm_up_and_iterations_to_a_short_budget():
    """A replay cell's default learning_starts (1000) and log_every (1000) would leave a 100-step check with no
    gradient step and a resume that counts one iteration more; check_cell fits them unless they are given."""
    from rlplug.pipeline.session import Session
    from rlplug.testing import meaningful_cadence

    session = Session()
    assert meaningful_cadence(session, "sac-pendulum", [], 100) == ["learning_starts=50", "log_every=100"]
    assert meaningful_cadence(session, "sac-pendulum", ["learning_starts=10", "log_every=20"], 100) == []
    assert meaningful_cadence(session, "ppo-cartpole", [], 100) == []  # on-policy: nothing to fit
