"""A run on another task than its recipe's (``--set env=...``) has no target unless one is given, and says
which env it ran on in every line, summary and picture; a step budget that training rounds to whole
iterations is said once and the bar ends at 100 %; an off-policy budget that ends before
``learning_starts`` (no gradient step at all) is refused before anything is built."""

from __future__ import annotations

import json

import pytest

from conftest import cli_in_process as _cli

TINY_PPO = ["--set", "num_envs=2", "--set", "rollout_steps=32", "--set", "minibatches=2", "--set", "epochs=1",
            "--set", "hidden_sizes=[8]", "--set", "eval_episodes=1"]  # fmt: skip
"""One iteration is 64 env steps (2 envs x 32)."""


def _one_line_refusal(code, err, expected):
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err)
    assert lines[0].startswith("rlplug: error: ") and expected in lines[0], lines[0]
    return lines[0]


# ---- the task ------------------------------------------------------------------------------------------


def test_a_change_of_task_drops_the_target_unless_one_is_given(tmp_path):
    from rlplug.pipeline.session import Session

    (tmp_path / "mine.toml").write_text(
        '[recipes.my-acrobot]\nextends = "ppo-cartpole"\nenv = "Acrobot-v1"\n'  # another env, no target of its own
        '[recipes.my-acrobot-long]\nextends = "my-acrobot"\nsteps = 200_000\n'  # inherits "no target"
        '[recipes.my-acrobot-scored]\nextends = "my-acrobot"\ntarget = -100.0\n'
        '[recipes.my-cartpole]\nextends = "ppo-cartpole"\nenv = "CartPole-v1"\nsteps = 50_000\n'  # the same task
    )
    session = Session(recipe_files=[str(tmp_path / "mine.toml")])
    target = {name: session.resolve(name).target for name in ("my-acrobot", "my-acrobot-long", "my-acrobot-scored", "my-cartpole")}
    assert target == {"my-acrobot": None, "my-acrobot-long": None, "my-acrobot-scored": -100.0, "my-cartpole": 475.0}
    for overrides, expected in [
        (["env=Acrobot-v1"], None), (["env=Acrobot-v1", "target=-100"], -100.0), (["target=-100", "env=Acrobot-v1"], -100.0),
        (["time_limit=200"], None), (["env_kwargs.sutton_barto_reward=true"], None),
        (["env=CartPole-v1"], 475.0), (["time_limit=0"], 475.0), (["epochs=4", "steps=5000"], 475.0),
    ]:  # fmt: skip
        assert session.resolve("ppo-cartpole", overrides).target == expected, overrides
    assert session.resolve("my-acrobot", ["env=CartPole-v1"]).target is None  # a target is never guessed back


def test_a_run_on_another_env_names_it_everywhere_and_has_no_target(capsys, tmp_path, monkeypatch):
    import rlplug.runs.writer

    titles = []
    real_plot = rlplug.runs.writer.plot_learning_curve

    def spy(run_dir, target=None, data_mean=None, title=None):
        titles.append((title, target))
        return real_plot(run_dir, target, data_mean, title=title)

    monkeypatch.setattr(rlplug.runs.writer, "plot_learning_curve", spy)
    run_dir = tmp_path / "run"
    code, out, err = _cli(capsys, "train", "ppo-cartpole", "--set", "env=Acrobot-v1", *TINY_PPO, "--steps", "64",
                          "--run-dir", run_dir, "--no-progress")
    assert code == 0, err
    assert out.startswith("ppo-cartpole@1 (Acrobot-v1) on skrl: eval return -"), out
    assert "(no target on Acrobot-v1: --set target=R gives one)" in out and "475" not in out, out
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["env"], summary["target"], summary["passed"]) == ("Acrobot-v1", None, None)
    recorded = json.loads((run_dir / "recipe.json").read_text())["recipe"]
    assert (recorded["env"], recorded["target"]) == ("Acrobot-v1", None)
    assert titles and all(title.endswith("ppo-cartpole@1 (Acrobot-v1) on skrl") and target is None for title, target in titles)
    assert (run_dir / "curve.png").is_file()
    code, out, err = _cli(capsys, "eval", run_dir, "--episodes", "1")  # the recorded recipe, without target, reads back
    assert code == 0, err
    assert out.startswith("ppo-cartpole@1 (Acrobot-v1) on skrl after 64 steps: eval return"), out
    code, out, err = _cli(capsys, "eval", run_dir, "--episodes", "1", "--json")
    assert code == 0, err
    assert json.loads(out)["env"] == "Acrobot-v1" and json.loads(out)["target"] is None
    code, out, err = _cli(capsys, "export", run_dir, "--no-check")  # issue 51: export names the env too
    assert code == 0, err
    assert out.startswith("ppo-cartpole@1 (Acrobot-v1) on skrl after 64 steps: torchscript policy written to"), out


def test_bench_refuses_a_recipe_whose_task_changed_without_a_target(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = _cli(capsys, "bench", "ppo-cartpole", "--backend", "skrl", "--set", "env=Acrobot-v1", *TINY_PPO,
                        "--steps", "64")
    _one_line_refusal(code, err, "bench: recipe 'ppo-cartpole' on Acrobot-v1 has no target (its task was changed); "
                                 "give one with --set target=R")


# ---- the budget ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
@pytest.mark.parametrize("recipe, steps, learning_starts", [
    ("sac-pendulum", 100, 100),  # a budget that ends exactly where learning starts takes no gradient step either
    ("td3-pendulum", 500, 1000),
    ("dqn-cartpole", 64, 1000),
])  # fmt: skip
def test_an_off_policy_budget_before_learning_starts_is_refused(capsys, tmp_path, backend, recipe, steps, learning_starts):
    run_dir = tmp_path / "run"
    code, _, err = _cli(capsys, "train", recipe, "--backend", backend, "--steps", steps, "--set", "hidden_sizes=[8]",
                        "--set", "eval_episodes=1", "--run-dir", run_dir)
    _one_line_refusal(code, err, f"recipe '{recipe}': learning_starts = {learning_starts}, steps = {steps} break the rule "
                                 "learning_starts < steps (the whole budget would be random warm-up and no gradient step "
                                 "would be taken: lower it with --set learning_starts=N or raise the budget with --steps)")
    assert not run_dir.exists()  # refused before anything is built or written


def test_the_python_api_refuses_the_same_budget():
    import rlplug
    from rlplug.errors import RecipeError

    with pytest.raises(RecipeError, match="learning_starts = 1000, steps = 1000 break the rule"):
        rlplug.build("dqn-cartpole", overrides=["steps=1000"])
    assert rlplug.resolve("dqn-cartpole", ["steps=1001"]).steps == 1001


def test_a_rounded_budget_is_said_once_and_the_bar_ends_at_100_percent(capsys, monkeypatch):
    import tqdm

    bars = []

    class Recorded(tqdm.tqdm):
        def close(self):
            if not self.disable and self.unit != "episode" and (self.total, self.n) not in bars:  # not the evaluation's
                bars.append((self.total, self.n))
            super().close()

    monkeypatch.setattr(tqdm, "tqdm", Recorded)
    code, out, err = _cli(capsys, "train", "ppo-cartpole", *TINY_PPO, "--steps", "100", "--no-write")
    assert code == 0, err
    notes = [line for line in err.splitlines() if line.startswith("rlplug: note: steps")]
    assert notes == ["rlplug: note: steps 100 rounded down to 64: training runs whole iterations of 64 env steps (2 envs x 32)"]
    assert bars == [(64, 64)]
    assert "; 64 steps in" in out


def test_budget_note_says_up_or_down_and_nothing_for_whole_iterations():
    import rlplug
    from rlplug.runs import budget_note

    build = rlplug.build("ppo-cartpole", overrides=["num_envs=2", "rollout_steps=32", "minibatches=2", "hidden_sizes=[8]"])
    try:
        assert budget_note(build, 20) == "steps 20 rounded up to 64: training runs whole iterations of 64 env steps (2 envs x 32)"
        assert budget_note(build, 200) == "steps 200 rounded down to 192: training runs whole iterations of 64 env steps (2 envs x 32)"
        assert budget_note(build, 192) is None
    finally:
        build.trainer.close()


@pytest.mark.parametrize("backend, steps, planned", [("skrl", 51, 50), ("torchrl", 51, 48)])
def test_off_policy_trainers_stop_where_they_planned(backend, steps, planned):
    import rlplug

    # skrl steps every env once per step (2 transitions); TorchRL collects train_every steps of each (6)
    build = rlplug.build("dqn-cartpole", backend, ["num_envs=2", "train_every=3", "learning_starts=8", "batch_size=8",
                                                   "hidden_sizes=[8]", "log_every=20", f"steps={steps}"])  # fmt: skip
    try:
        assert build.trainer.planned_progress(steps) == planned
        build.trainer.train(steps)
        assert build.trainer.progress == planned and build.trainer.gradient_steps > 0
    finally:
        build.trainer.close()
