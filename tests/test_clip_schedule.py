"""PPO's ``clip_schedule`` (``rlplug.families.ClipSchedule``): with ``"linear"`` the update after ``n`` env steps
(its own rollout included) clips at ``clip_ratio x (1 - n / steps)``, SB3's ``lin_X`` as ``PPO.train`` evaluates it,
on both backends, feed-forward and recurrent, and MAPPO; a resumed run clips as an uninterrupted one; a bad value is
refused in one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import refused_in_process, weights_only_round_trip

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")
pytest.importorskip("torchrl")

from rlplug.errors import RecipeError, UnknownNameError  # noqa: E402
from rlplug.families import ClipSchedule  # noqa: E402
from rlplug.pipeline.session import Session  # noqa: E402

# 2 envs x 16 steps = 32 env steps an update; a budget of 100 runs 3 of them (96 steps: train never overshoots)
SMALL = ["num_envs=2", "rollout_steps=16", "minibatches=2", "epochs=2", "hidden_sizes=[16]", "steps=100", "clip_ratio=0.2",
         "clip_schedule=linear"]  # fmt: skip
RECURRENT = ['recurrent="lstm"', "recurrent_hidden_size=8", "sequence_length=8"]
EXPECTED = [0.2 * (1 - 32 / 100), 0.2 * (1 - 64 / 100), 0.2 * (1 - 96 / 100)]
CELLS = [("skrl", False), ("skrl", True), ("torchrl", False), ("torchrl", True)]


def _loss_clip(trainer):
    """The clip the cell's loss holds: skrl's ``ClipLoss.ratio_clip``, TorchRL's ``clip_epsilon`` buffer."""
    loss = trainer.build.loss
    return float(loss.clip_epsilon) if hasattr(loss, "clip_epsilon") else float(loss.ratio_clip)


def _train(trainer, steps):
    """Train to ``steps``; the clip the loss held at each of its calls, and each update's logged ``train/clip_ratio``."""
    used, logged = [], []
    trainer.register_op("post_loss", lambda batch: used.append(_loss_clip(trainer)))
    trainer.train(steps, callbacks=[lambda t, metrics: logged.append(metrics["train/clip_ratio"])])
    return used, logged


def test_the_schedule_is_sb3s_progress_remaining():
    linear = ClipSchedule(0.2, "linear", 1000)
    assert [linear.at(n) for n in (0, 250, 1000, 1200)] == [0.2, pytest.approx(0.15), 0.0, 0.0]  # past the budget: 0
    assert ClipSchedule(0.2, "constant", 1000).at(900) == 0.2
    assert ClipSchedule.of({"ratio_clip": 0.3}, "ratio_clip", 10) is None  # a cell without the parameter (A2C)


@pytest.mark.parametrize("backend,recurrent", CELLS, ids=[f"{b}-{'lstm' if r else 'mlp'}" for b, r in CELLS])
def test_each_update_clips_at_clip_ratio_times_progress_remaining(backend, recurrent):
    overrides = [*SMALL, *(RECURRENT if recurrent else [])]
    build = Session().build("ppo-cartpole", backend, overrides)
    try:
        used, logged = _train(build.trainer, 64)
        assert logged == pytest.approx(EXPECTED[:2], abs=1e-7)
        per_update = len(used) // 2
        assert per_update >= 2 and used == pytest.approx([EXPECTED[0]] * per_update + [EXPECTED[1]] * per_update, abs=1e-7)
        state = weights_only_round_trip(build.trainer.state_dict())
        _, last = _train(build.trainer, 100)
    finally:
        build.trainer.close()
    resumed = Session().build("ppo-cartpole", backend, overrides)
    try:
        resumed.trainer.load_state_dict(state)  # the clip comes back with the counters
        used, logged = _train(resumed.trainer, 100)
    finally:
        resumed.trainer.close()
    assert last == logged == pytest.approx(EXPECTED[2:], abs=1e-7)
    assert used and used == pytest.approx([EXPECTED[2]] * len(used), abs=1e-7)


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_a_constant_clip_stays_and_is_logged(backend):
    build = Session().build("ppo-cartpole", backend, [*SMALL[:-1], "clip_ratio=0.3"])
    try:
        used, logged = _train(build.trainer, 64)
    finally:
        build.trainer.close()
    assert logged == pytest.approx([0.3, 0.3]) and used == pytest.approx([0.3] * len(used))


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_mappo_schedules_its_clip_too(backend):
    pytest.importorskip("mpe2")
    from mappo_builds import make_mappo_build

    # 2 envs x 50 steps = 100 env steps an update, a budget of 250: two updates
    build = make_mappo_build(backend, steps=250, clip_ratio=0.2, clip_schedule="linear", epochs=1)
    try:
        used, logged = _train(build.trainer, 250)
    finally:
        build.trainer.close()
    assert logged == pytest.approx([0.2 * (1 - 100 / 250), 0.2 * (1 - 200 / 250)], abs=1e-7)
    per_update = len(used) // 2
    assert per_update and used == pytest.approx([logged[0]] * per_update + [logged[1]] * per_update, abs=1e-7)


def test_a_bad_schedule_is_refused_in_one_line(capsys):
    line = refused_in_process(capsys, "clip_schedule", "show", "ppo-cartpole", "--set", "clip_schedule=cosine")
    assert "'constant', 'linear'" in line
    # a raw per-backend override reaches the trainer, which refuses it the same way
    for backend in ("skrl", "torchrl"):
        with pytest.raises(UnknownNameError, match=r"unknown clip_schedule 'linar'.*did you mean 'linear'"):
            Session().build("ppo-cartpole", backend, [*SMALL[:-1], f"{backend}.clip_schedule=linar"])


def test_a_loss_without_a_schedulable_clip_is_refused():
    """A registered loss that keeps no clip the trainer can set: the test plugin's unclipped skrl loss."""
    sys.path.insert(0, str(Path(__file__).parent / "plugins"))
    import custom_ppo_loss

    with pytest.raises(RecipeError, match="clip_schedule 'linear' needs a loss with a ratio_clip attribute; UnclippedLoss has none"):
        Session(objects=(custom_ppo_loss,)).build("ppo-cartpole", "skrl", [*SMALL, "loss=unclipped"])


def test_the_torchrl_trainer_config_export_names_the_schedule_as_dropped(capsys):
    from rlplug.cli import main

    assert main(["show", "ppo-cartpole", "--backend", "torchrl", "--format", "hydra", "--set", "clip_schedule=linear"]) == 0
    header = capsys.readouterr().out.split("\ndefaults:\n")[0]
    assert "clip_schedule = 'linear': no clip schedule in PPOTrainer's config" in header.split("# Dropped")[1]
