"""Training hooks: TorchRL's hook objects on TorchRL cells, rlplug's neutral hooks on both backends, a
plugin's hooks, the recipe field, refusals, and hook state across a checkpoint and resume."""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import pytest

from rlplug.errors import HookError, RecipeError
from rlplug.pipeline.session import Session

sys.path.insert(0, str(Path(__file__).parent / "plugins"))

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

PPO = ["num_envs=2", "rollout_steps=32", "hidden_sizes=[16, 16]", "epochs=2"]  # 64 env steps an iteration
SAC = ["learning_starts=64", "hidden_sizes=[16, 16]", "batch_size=16", "log_every=64"]


@pytest.fixture(scope="module")
def session():
    return Session()


@pytest.fixture
def built(session):
    """``built(recipe, backend, overrides)``: a build, closed after the test."""
    made = []

    def make(recipe, backend, overrides=()):
        build = session.build(recipe, backend, list(overrides))
        made.append(build)
        return build

    yield make
    for build in made:
        build.trainer.close()


def train_rows(trainer, steps):
    rows = []
    with warnings.catch_warnings():  # TorchRL's post_loss / process_loss FutureWarnings
        warnings.simplefilter("ignore", FutureWarning)
        trainer.train(steps, callbacks=[lambda _, metrics: rows.append(metrics)])
    return rows


def recorder(seen, dest):
    def op(batch=None, *rest):
        seen.setdefault(dest, []).append(batch)

    return op


def weights_only(state):
    import io

    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


# ---- registration and refusals ------------------------------------------------------------------


def test_an_unknown_destination_gets_a_did_you_mean(built):
    trainer = built("ppo-cartpole", "torchrl", PPO).trainer
    with pytest.raises(HookError, match=r"unknown hook destination 'batch_proces' \(did you mean 'batch_process'\?\)"):
        trainer.register_op("batch_proces", print)


@pytest.mark.parametrize(
    ("recipe", "backend", "overrides", "dest", "why"),
    [
        ("ppo-cartpole", "skrl", PPO, "optimizer", "the skrl on-policy loop: rlplug's loop steps the optimisers itself"),
        ("sac-pendulum", "torchrl", SAC, "pre_epoch", "the off-policy loop takes gradient steps on sampled batches, without epochs"),
        ("sac-pendulum", "skrl", SAC, "pre_epoch", "the off-policy loop takes gradient steps on sampled batches, without epochs"),
        ("sac-pendulum", "skrl", [*SAC, "compile=true"], "process_loss", "compile = true puts the loss inside the compiled"),
    ],
)
def test_a_loop_refuses_what_it_does_not_call_at_registration(built, recipe, backend, overrides, dest, why):
    trainer = built(recipe, backend, overrides).trainer
    with pytest.raises(HookError, match=f"hook destination '{dest}' cannot apply to .*{re.escape(why)}"):
        trainer.register_op(dest, print)


def test_every_other_destination_runs_on_each_family_loop(built):
    """One op at each destination the loop calls, on an on-policy and an off-policy cell of each backend:
    each runs, and the batches the ops see are TensorDicts on skrl too."""
    from tensordict import TensorDictBase

    for recipe, backend, overrides in [("ppo-cartpole", "skrl", PPO), ("sac-pendulum", "torchrl", SAC)]:
        trainer = built(recipe, backend, overrides).trainer
        seen = {}
        for dest in trainer.hooks.loop.dests:
            trainer.register_op(dest, recorder(seen, dest))
        train_rows(trainer, 128)
        assert set(seen) == set(trainer.hooks.loop.dests), (recipe, backend)
        assert isinstance(seen["batch_process"][0], TensorDictBase) and "reward" in seen["batch_process"][0]["next"].keys()
        assert isinstance(seen["process_optim_batch"][0], TensorDictBase)
        assert len(seen["post_optim"]) == trainer._optim_count and len(seen["setup"]) == len(seen["shutdown"]) == 1


# ---- TorchRL's own hook objects on TorchRL cells ------------------------------------------------


def test_torchrl_log_scalar_logs_into_the_metrics_row(built):
    from torchrl.trainers import LogScalar

    trainer = built("ppo-cartpole", "torchrl", PPO).trainer
    LogScalar(("next", "reward"), "r_training").register(trainer)
    rows = train_rows(trainer, 128)
    assert all(row["r_training"] == 1.0 and row["r_training_std"] == 0.0 for row in rows)  # CartPole pays 1 a step
    assert "log_pbar" not in rows[0]


def test_torchrl_reward_normalizer_normalises_the_optimised_batches(built):
    from torchrl.trainers import RewardNormalizer

    trainer = built("sac-pendulum", "torchrl", SAC).trainer
    normalizer = RewardNormalizer()
    normalizer.register(trainer)
    seen = {}
    trainer.register_op("process_optim_batch", recorder(seen, "optimised"))  # after the normaliser's op
    train_rows(trainer, 256)
    raw = trainer.memory[:]["next", "reward"]  # stored as collected
    optimised = torch.cat([batch["next", "reward"] for batch in seen["optimised"]])
    assert raw.mean() < -2.0 and abs(float(optimised.mean())) < 1.0  # Pendulum's rewards, then standardised ones
    assert normalizer._reward_stats["count"] > 0


def test_torchrl_early_stopping_stops_training(built):
    from torchrl.trainers import EarlyStopping, LogScalar

    trainer = built("ppo-cartpole", "torchrl", PPO).trainer
    LogScalar(("next", "reward"), "r_training").register(trainer)
    stopping = EarlyStopping(monitor="r_training", patience=128, wait_for=0)
    stopping.register(trainer)
    train_rows(trainer, 2048)
    # best at 64 frames (the first report), no improvement at 128, 192 frames: 192 - 64 >= patience
    assert trainer.progress == 192 and trainer._stop_training
    assert stopping.stop_reason == "Monitored metric 'r_training' did not improve for 128 frames."


@pytest.mark.parametrize("interval", ["batch", "optim"])
def test_torchrl_lr_scheduler_hook_steps_the_cells_optimiser(built, interval):
    from torchrl.trainers import LRSchedulerHook

    trainer = built("ppo-cartpole", "torchrl", [*PPO, "lr_schedule=constant"]).trainer  # the recipe's is KL-adaptive
    lr = trainer.optimizer.param_groups[0]["lr"]
    LRSchedulerHook(torch.optim.lr_scheduler.StepLR(trainer.optimizer, step_size=1, gamma=0.5), interval=interval).register(trainer)
    train_rows(trainer, 192)
    steps = trainer.iterations if interval == "batch" else trainer._optim_count
    assert steps == (3 if interval == "batch" else 3 * 2 * 4)  # 2 epochs of 4 minibatches an iteration
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(lr * 0.5**steps)


def test_torchrl_utdr_hook_logs_the_update_to_data_ratio(built):
    from torchrl.trainers import UTDRHook

    trainer = built("sac-pendulum", "torchrl", SAC).trainer
    UTDRHook(trainer).register(trainer)
    last = train_rows(trainer, 256)[-1]
    assert last["write_count"] == trainer.env_steps  # the replay buffer's writes: each collected transition
    assert last["utd_ratio"] == pytest.approx(16 * last["update_count"] / last["write_count"])
    assert 0 < last["update_count"] <= trainer._optim_count == trainer.gradient_steps


def test_torchrl_batch_subsampler_shrinks_the_optimised_batches(built):
    from torchrl.trainers import BatchSubSampler

    trainer = built("sac-pendulum", "torchrl", SAC).trainer
    BatchSubSampler(batch_size=8).register(trainer)
    seen = {}
    trainer.register_op("process_optim_batch", recorder(seen, "optimised"))
    train_rows(trainer, 128)
    assert seen["optimised"] and all(batch.numel() == 8 for batch in seen["optimised"])  # from replay batches of 16


# ---- state across a checkpoint --------------------------------------------------------------------


def test_a_stateful_hook_survives_a_checkpoint_and_resume(built):
    """RewardNormalizer's running statistics: checkpoint -> new build -> load gives the same state, whether
    the hook is registered before the load or after it; 128 steps, a resume, then 128 more end where 256
    straight end, bit for bit."""
    from rlplug.testing import first_difference
    from torchrl.trainers import RewardNormalizer

    def trainer():
        made = built("sac-pendulum", "torchrl", SAC).trainer
        RewardNormalizer().register(made)
        return made

    straight = trainer()  # built and trained one after another: building seeds the global RNG
    train_rows(straight, 256)
    first = trainer()
    train_rows(first, 128)
    state = weights_only(first.state_dict())
    assert state["hooks"]["modules"]["reward_normalizer"]["_reward_stats"]["count"] > 0
    late = built("sac-pendulum", "torchrl", SAC).trainer
    late.load_state_dict(state)
    RewardNormalizer().register(late)  # a hook registered after the load takes its saved state
    resumed = trainer()
    resumed.load_state_dict(state)
    for loaded in (late, resumed):
        assert first_difference(first.hooks.state_dict(), loaded.hooks.state_dict()) is None
    train_rows(resumed, 256)
    assert first_difference(straight.state_dict(), resumed.state_dict()) is None


def test_check_cells_resume_equivalence_covers_hook_state(session, monkeypatch):
    """A resume that dropped the registered hooks' state fails the conformance kit, naming the hook."""
    from rlplug.hooks import TrainerHooks
    from rlplug.testing import ConformanceError, check_resume_equivalence

    recipe = session.resolve("ppo-cartpole", PPO)
    monkeypatch.setattr(TrainerHooks, "load_state_dict", lambda self, state: None)
    with pytest.raises(ConformanceError, match="hooks.optim_count|hooks.modules.rlplug_resume_probe"):
        check_resume_equivalence(session, recipe, "skrl", 64, 0.0)


# ---- rlplug's neutral hooks, on both backends -----------------------------------------------------


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_reward_scaling_scales_rewards_before_they_are_stored(built, backend):
    from rlplug.hooks import LogScalar, RewardScaling

    trainer = built("sac-pendulum", backend, SAC).trainer
    RewardScaling().register(trainer)
    LogScalar().register(trainer)  # sees the collected batch after the scaling
    rows = train_rows(trainer, 256)
    if backend == "skrl":
        memory = trainer.agent.memory
        stored = memory.tensors["rewards"][: memory.memory_index]
    else:
        stored = trainer.memory[:]["next", "reward"]
    rms = float(stored.square().mean().sqrt())
    assert 0.5 < rms < 2.0, rms  # Pendulum's raw rewards: about 7
    assert all(-10.0 <= row["batch/next.reward_mean"] <= 0.0 for row in rows)
    assert trainer.hooks.modules["reward_scaling"].count == trainer.env_steps
    returns = [row["train/episode_return"] for row in rows if "train/episode_return" in row]
    assert returns and max(returns) < -100  # training returns stay in the env's units


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_early_stopping_on_a_logged_metric(built, backend):
    from rlplug.hooks import EarlyStopping, LogScalar

    trainer = built("ppo-cartpole", backend, PPO).trainer
    LogScalar().register(trainer)
    stopping = EarlyStopping(monitor="batch/next.reward_mean", patience=2)
    stopping.register(trainer)
    train_rows(trainer, 2048)
    assert trainer.iterations == 3 and trainer.progress == 192  # 1.0 first, then twice no better
    assert trainer.hooks.stop_reason == "'batch/next.reward_mean' did not improve on 1 in 2 reports"
    assert weights_only(trainer.state_dict())["hooks"]["modules"]["early_stopping"] == {"best": 1.0, "stale": 2}


# ---- hooks from a plugin and from a recipe --------------------------------------------------------


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_a_plugin_adds_a_hook_to_both_backends(backend):
    session = Session(plugins=["step_counter_hooks"])
    build = session.build("ppo-cartpole", backend, PPO)
    try:
        rows = train_rows(build.trainer, 128)
        state = build.trainer.state_dict()["hooks"]["modules"]["step_counter"]
    finally:
        build.trainer.close()
    assert rows[-1]["plugin/optim_steps"] == build.trainer._optim_count == state["count"] == 2 * 2 * 4


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_recipe_hooks_are_built_and_registered(built, backend):
    hooks = 'hooks=[{hook = "log_scalar", key = ["next", "reward"]}, {hook = "early_stopping", monitor = "batch/next.reward_mean", patience = 1}]'
    build = built("ppo-cartpole", backend, [*PPO, hooks])
    assert build.recipe.to_table()["hooks"][1] == {"hook": "early_stopping", "monitor": "batch/next.reward_mean", "patience": 1}
    train_rows(build.trainer, 2048)
    assert build.trainer.iterations == 2


def test_recipe_names_torchrl_hooks_by_import_path(built):
    hooks = 'hooks=[{hook = "torchrl.trainers.LogScalar", key = ["next", "reward"], logname = "r"}, {hook = "torchrl.trainers.UTDRHook"}]'
    trainer = built("sac-pendulum", "torchrl", [*SAC, hooks]).trainer
    assert set(trainer.hooks.modules) == {"log_r", "utdr_hook"}
    last = train_rows(trainer, 128)[-1]
    assert "r" in last and "utd_ratio" in last


@pytest.mark.parametrize(
    ("recipe", "hooks", "expected"),
    [
        ("ppo-cartpole", '[{hook = "early_stoping"}]', "'hooks'[0]: unknown hook 'early_stoping' (did you mean 'early_stopping'?)"),
        ("ppo-cartpole", '[{hook = "log_scalar"}, {hook = "log_scalar", dest = "pre_step_log"}]',
         "'hooks'[1]: unknown hook destination 'pre_step_log' (did you mean 'pre_steps_log'?)"),
        ("ppo-cartpole", '[{hook = "early_stopping", patiense = 3}]',
         "'hooks'[0]: early_stopping takes no argument 'patiense' (did you mean 'patience'?)"),
        ("ppo-cartpole", '[{hook = "early_stopping", mode = "maximum"}]', "early_stopping: mode must be 'max' or 'min'"),
        ("ppo-cartpole", '[{hook = "torchrl.trainers.LogScaler"}]',
         "unknown TorchRL hook 'torchrl.trainers.LogScaler' (did you mean 'LogScalar'?)"),
        ("ppo-cartpole", '[{hook = "torchrl.trainers.LRSchedulerHook"}]', "torchrl.trainers.LRSchedulerHook needs argument 'scheduler'"),
        ("ppo-cartpole", '[{hook = "torchrl.trainers.RewardNormalizer", dest = "batch_process"}]',
         "is not called as one op (it registers methods at several points): leave out 'dest'"),
        ("ppo-cartpole", '["early_stopping"]', "a hook entry is a table {hook = NAME, ...}"),
    ],
)
def test_recipe_hook_errors_name_the_entry(session, recipe, hooks, expected):
    with pytest.raises(RecipeError) as caught:
        session.resolve(recipe, [f"hooks={hooks}"])
    assert expected in str(caught.value) and str(caught.value).startswith(f"recipe '{recipe}': 'hooks'[")


@pytest.mark.parametrize(
    ("backend", "hooks", "expected"),
    [
        ("skrl", '[{hook = "log_scalar", dest = "pre_epoch"}]', "'hooks'[0] (log_scalar) registers at 'pre_epoch', which the skrl off-policy loop does not call"),
        ("torchrl", '[{hook = "torchrl.trainers.LogScalar", dest = "pre_epoch"}]', "which the TorchRL off-policy loop does not call: the off-policy loop takes"),
    ],
)
def test_recipe_hooks_a_loop_does_not_call_are_refused_before_building(session, backend, hooks, expected):
    with pytest.raises(RecipeError, match="^recipe 'sac-pendulum': ") as caught:
        session.prepare("sac-pendulum", backend, [*SAC, f"hooks={hooks}"])
    assert expected in str(caught.value)


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_off_policy_stages_call_the_loss_hooks(built, backend):
    """The family bases run every cell's update stages, so post_loss and process_loss reach off-policy cells on
    both backends, and the losses a process_loss op returns are the ones stepped: zeroed, no weight moves."""
    import torch

    build = built("sac-pendulum", backend, SAC)
    online = [m for name, m in build.models.items() if isinstance(m, torch.nn.Module) and not name.startswith("target")]
    params = [p for m in online for p in m.parameters()]  # polyak averaging moves equal targets by rounding
    before = [p.detach().clone() for p in params]
    seen = {"post_loss": 0, "process_loss": 0}

    def count_post_loss(batch):
        seen["post_loss"] += 1

    def zero_losses(batch, losses):
        seen["process_loss"] += 1
        for key in list(losses.keys()):
            losses.set(key, losses.get(key) * 0.0)
        return losses

    build.trainer.register_op("post_loss", count_post_loss)
    build.trainer.register_op("process_loss", zero_losses)
    train_rows(build.trainer, 128)
    assert build.trainer.gradient_steps > 0 and seen["post_loss"] >= build.trainer.gradient_steps
    assert seen["process_loss"] == seen["post_loss"]
    assert all(torch.equal(a, b.detach()) for a, b in zip(before, params))
