"""Offline datasets: writing and reading back, what is refused (corrupt, truncated, other env), the
normalised score, replay-memory export from runs on both backends, and the `rlplug dataset` commands."""

from __future__ import annotations

import json
import os
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from conftest import assert_one_line_error, run_cli, write_dataset
from rlplug.data.datasets import DatasetError, env_contiguous, episode_returns, load_data, read_info


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    root = tmp_path / "data"
    monkeypatch.setenv("RLPLUG_DATA_DIR", str(root))
    return root


def test_written_dataset_reads_back_with_its_metadata(tmp_path):
    path = write_dataset(tmp_path / "pend", steps=450)
    info = read_info(path)
    data = load_data(info)
    assert info.transitions == 450 and info.env == "Pendulum-v1"
    assert data["observation"].shape == (450, 3) and data["action"].shape == (450, 1)
    assert data["reward"].shape == (450, 1) and data["terminated"].dtype.is_floating_point is False
    # episodes are contiguous: the next observation of a step is the observation of the following one
    done = (data["terminated"] | data["truncated"]).reshape(-1)
    same = (data["next_observation"][:-1] == data["observation"][1:]).all(dim=1)
    assert bool(same[~done[:-1]].all())
    assert info.metadata["episodes"] == 2 and bool(done[-1])  # 200-step episodes; the trailing piece is cut, not counted
    assert info.metadata["returns"]["mean"] == pytest.approx(data["reward"][:400].sum().item() / 2, rel=1e-5)


def test_discrete_actions_are_stored_as_indices(tmp_path):
    info = read_info(write_dataset(tmp_path / "cart", env_id="CartPole-v1", steps=300))
    data = load_data(info)
    assert data["action"].dtype.is_floating_point is False and set(data["action"].unique().tolist()) <= {0, 1}
    assert info.metadata["action_space"] == {"type": "Discrete", "n": 2}


def test_normalised_score_uses_the_reference_returns(tmp_path):
    info = read_info(write_dataset(tmp_path / "pend", steps=200, random_return=-1200.0, expert_return=-200.0))
    assert info.normalised_score(-200.0) == pytest.approx(100.0)
    assert info.normalised_score(-700.0) == pytest.approx(50.0)
    info.metadata["reference"] = {"random_return": -1200.0}
    assert info.normalised_score(-700.0) is None


def test_a_changed_byte_is_refused_as_corrupt(tmp_path):
    path = write_dataset(tmp_path / "pend", steps=200)
    file = tmp_path / "pend" / "data" / "reward.memmap"
    raw = bytearray(file.read_bytes())
    raw[10] ^= 0xFF
    file.write_bytes(bytes(raw))
    with pytest.raises(DatasetError, match="corrupt: reward.memmap does not match its recorded checksum"):
        load_data(read_info(path))


def test_a_truncated_dataset_is_refused(tmp_path):
    path = write_dataset(tmp_path / "pend", steps=200)
    file = tmp_path / "pend" / "data" / "observation.memmap"
    file.write_bytes(file.read_bytes()[:100])
    with pytest.raises(DatasetError, match="corrupt"):
        load_data(read_info(path))
    (tmp_path / "pend" / "data" / "observation.memmap").unlink()
    with pytest.raises(DatasetError, match="incomplete: observation is missing"):
        load_data(read_info(path))


def test_unreadable_or_missing_metadata_is_one_error(tmp_path):
    path = write_dataset(tmp_path / "pend", steps=200)
    (tmp_path / "pend" / "metadata.json").write_text("{not json")
    with pytest.raises(DatasetError, match="metadata.json is unreadable"):
        read_info(path)
    (tmp_path / "pend" / "metadata.json").unlink()
    with pytest.raises(DatasetError, match="is not an rlplug dataset"):
        read_info(path)
    with pytest.raises(DatasetError, match="not found"):
        read_info(str(tmp_path / "nothing"))


def test_a_dataset_of_another_env_or_other_spaces_is_refused(tmp_path):
    info = read_info(write_dataset(tmp_path / "pend", steps=200))
    cart = gym.make("CartPole-v1")
    with pytest.raises(DatasetError, match="was recorded on Pendulum-v1, not CartPole-v1"):
        info.check_env("CartPole-v1", cart.observation_space, cart.action_space, "recipe 'x'")
    wider = gym.spaces.Box(-4.0, 4.0, (1,), np.float32)
    pend = gym.make("Pendulum-v1")
    with pytest.raises(DatasetError, match="has action space Box"):
        info.check_env("Pendulum-v1", pend.observation_space, wider, "recipe 'x'")


def test_env_contiguous_reorders_and_cuts_each_envs_piece():
    # two envs interleaved: rows alternate env 0 / env 1
    columns = {
        "reward": np.arange(6, dtype=np.float32).reshape(6, 1),
        "terminated": np.zeros((6, 1), bool),
        "truncated": np.zeros((6, 1), bool),
    }
    order = np.array([0, 2, 4, 1, 3, 5])
    columns["terminated"][2] = True  # env 0 ends an episode at its second step
    out = env_contiguous(columns, order, np.array([0, 0, 0, 1, 1, 1]), wrapped=False)
    assert out["reward"].reshape(-1).tolist() == [0, 2, 4, 1, 3, 5]
    assert out["truncated"].tolist() == [False, False, True, False, False, True]
    assert out["partial"].tolist() == [False, False, True, False, False, True]
    assert episode_returns(out["reward"], out["terminated"], out["truncated"]) == [2.0, 4.0, 9.0]
    assert episode_returns(out["reward"], out["terminated"], out["truncated"], out["partial"]) == [2.0]
    wrapped = env_contiguous(columns, order, np.array([0, 0, 0, 1, 1, 1]), wrapped=True)
    assert episode_returns(wrapped["reward"], wrapped["terminated"], wrapped["truncated"], wrapped["partial"]) == []


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_from_run_exports_the_replay_memory_env_by_env(tmp_path, data_dir, backend):
    import rlplug
    from rlplug.data.collect import from_run

    run_dir = tmp_path / "run"
    overrides = ["steps=240", "num_envs=2", "learning_starts=100", "train_every=3", "buffer_size=200", "log_every=60",
                 "hidden_sizes=[16, 16]", "batch_size=16"]
    rlplug.train("dqn-cartpole", backend=backend, overrides=overrides, run_dir=run_dir)
    info = from_run(rlplug.session(), run_dir, "replay")
    data = load_data(info)
    assert info.transitions == 200  # the buffer wrapped: the newest 200 of 240 transitions
    assert info.metadata["source"]["kind"] == "replay" and info.metadata["source"]["backend"] == backend
    assert "expert_return" in info.reference and "random_return" in info.reference
    done = (data["terminated"] | data["truncated"]).reshape(-1)
    follows = (data["next_observation"][:-1] == data["observation"][1:]).all(dim=1)
    assert bool(follows[~done[:-1]].all()), "consecutive rows of one env must be consecutive steps"
    assert int(done.sum()) >= 2  # at least the two env pieces end


def test_from_run_refuses_an_on_policy_run(tmp_path, data_dir):
    import rlplug
    from rlplug.data.collect import from_run

    rlplug.train("ppo-cartpole", overrides=["steps=512", "num_envs=2", "rollout_steps=256"], run_dir=tmp_path / "run")
    with pytest.raises(DatasetError, match=r"keeps no replay memory; from-run needs an off-policy run"):
        from_run(rlplug.session(), tmp_path / "run", "ppo-data")


def test_from_run_refuses_a_multi_agent_run(tmp_path, data_dir):
    pytest.importorskip("mpe2")
    import rlplug
    from rlplug.data.collect import from_run

    overrides = ["steps=64", "num_envs=2", "learning_starts=32", "batch_size=16", "hidden_sizes=[16]", "eval_episodes=1"]
    rlplug.train("vdn-simple-spread", overrides=overrides, run_dir=tmp_path / "run")
    with pytest.raises(DatasetError, match=r"\(qmix/skrl\) trained on the multi-agent environment 'mpe:simple_spread'"):
        from_run(rlplug.session(), tmp_path / "run", "team-data")


# ---- the command line -----------------------------------------------------------------------------


def _cli_env(data_dir):
    return {"RLPLUG_DATA_DIR": str(data_dir)}


def run_data_cli(data_dir, *args):
    old = os.environ.get("RLPLUG_DATA_DIR")
    os.environ["RLPLUG_DATA_DIR"] = str(data_dir)
    try:
        return run_cli(*args)
    finally:
        if old is None:
            os.environ.pop("RLPLUG_DATA_DIR")
        else:
            os.environ["RLPLUG_DATA_DIR"] = old


def test_cli_collect_info_list(tmp_path):
    data_dir = tmp_path / "data"
    made = run_data_cli(data_dir, "dataset", "collect", "rand", "--env", "CartPole-v1", "--random", "--steps", "300", "--no-progress")
    assert made.returncode == 0, made.stderr
    assert "dataset rand: 300 transitions" in made.stdout
    info = run_data_cli(data_dir, "dataset", "info", "rand", "--verify", "--json")
    meta = json.loads(info.stdout)
    assert meta["transitions"] == 300 and meta["source"]["kind"] == "random" and "random_return" in meta["reference"]
    listed = run_data_cli(data_dir, "dataset", "list")
    assert "rand" in listed.stdout and "CartPole-v1" in listed.stdout
    assert "pendulum-medium" in listed.stdout and "declared, not built" in listed.stdout
    again = run_data_cli(data_dir, "dataset", "collect", "rand", "--env", "CartPole-v1", "--random", "--steps", "300")
    assert_one_line_error(again, "dataset 'rand' already exists")
    assert json.loads(run_data_cli(data_dir, "dataset", "info", "rand", "--json").stdout)["transitions"] == 300


def test_cli_dataset_errors_are_one_line(tmp_path):
    data_dir = tmp_path / "data"
    assert_one_line_error(run_data_cli(data_dir, "dataset", "info", "nope"), "dataset 'nope' not found")
    assert_one_line_error(
        run_data_cli(data_dir, "dataset", "collect", "x", "--env", "CartPole-v1"), "give exactly one of --policy RUN_DIR or --random"
    )
    assert_one_line_error(
        run_data_cli(data_dir, "dataset", "collect", "x", "--env", "CartPole-v1", "--policy", str(tmp_path / "no-run")),
        "does not exist",
    )
    assert_one_line_error(run_data_cli(data_dir, "dataset", "collect", "x", "--env", "CartPol-v1", "--random"), "did you mean")
    assert_one_line_error(run_data_cli(data_dir, "dataset", "build", "pendulum-mediun"), "did you mean 'pendulum-medium'")
    assert not (data_dir / "x").exists()


def test_a_dataset_on_an_online_recipe_is_refused():
    result = run_cli("train", "sac-pendulum", "--set", "dataset=pendulum-medium", "--no-write")
    assert_one_line_error(result, "'dataset' is for offline algorithms and imitation from demonstrations; sac is off-policy")


def test_train_builds_a_declared_dataset_then_trains_offline(tmp_path):
    """End to end in a subprocess: a recipe file declares a small dataset (a short PPO behaviour policy
    and expert) and an offline CQL recipe on it; `rlplug train` builds the dataset, then trains."""
    recipes = tmp_path / "tiny.toml"
    recipes.write_text(
        "[datasets.cartpole-tiny]\n"
        'env = "CartPole-v1"\npolicy = "ppo-cartpole"\npolicy_steps = 512\nexpert_steps = 1024\nnoise = 0.1\n'
        "steps = 600\nseed = 3\n\n"
        "[recipes.cql-tiny]\n"
        'extends = "cql-cartpole-medium"\ndataset = "cartpole-tiny"\nsteps = 60\neval_episodes = 2\n'
        "[recipes.cql-tiny.hyperparameters]\n"
        "hidden_sizes = [16, 16]\nbatch_size = 32\nlog_every = 20\neval_every = 40\neval_episodes = 1\n"
    )
    run_dir = tmp_path / "run"
    result = run_data_cli(tmp_path / "data", "train", "cql-tiny", "--recipes", str(recipes), "--run-dir", str(run_dir),
                          "--no-progress", "--json")
    assert result.returncode in (0, 1), result.stderr
    summary = json.loads(result.stdout)
    assert summary["step_unit"] == "updates" and summary["steps"] == 60 and summary["dataset"] == "cartpole-tiny"
    assert summary["normalised_score"] is not None
    info = read_info(str(tmp_path / "data" / "cartpole-tiny"))
    assert info.transitions == 600 and info.metadata["source"]["trained_steps"] == 512
    assert info.reference["expert_source"]["trained_steps"] == 1024
    rows = (run_dir / "metrics.csv").read_text().splitlines()
    assert rows[0].startswith("updates,") and "eval/normalised_score" in rows[0]


def test_an_expert_dataset_trains_its_policy_once(tmp_path, monkeypatch, capsys):
    """A declaration whose expert is its behaviour policy (demonstrations: the same recipe, or none, and the same steps)
    trains one run and takes it as both; the reference return is that policy's; the progress bars name each phase."""
    from rlplug.data.collect import build_declared
    from rlplug.pipeline.session import Session

    monkeypatch.setenv("RLPLUG_DATA_DIR", str(tmp_path / "data"))
    recipes = tmp_path / "demos.toml"
    recipes.write_text('[datasets.cartpole-demos]\nenv = "CartPole-v1"\npolicy = "ppo-cartpole"\npolicy_steps = 512\nexpert_steps = 512\n'
                       'steps = 300\nseed = 1\ncollect_envs = 2\n')  # fmt: skip
    lines = []
    info = build_declared(Session(recipe_files=[str(recipes)]), "cartpole-demos", progress=True, log=lines.append)
    bars = capsys.readouterr().err
    assert "cartpole-demos 1/2 behaviour policy" in bars and "cartpole-demos 2/2 collecting" in bars
    runs = sorted(p.name for p in (tmp_path / "data" / "_runs").iterdir())
    assert [r for r in runs if not r.startswith(".")] == ["cartpole-demos-policy"], runs
    assert info.transitions == 300
    assert "the behaviour policy is also the expert reference (trained once)" in " ".join(lines)
    assert info.reference["expert_source"]["trained_steps"] == info.metadata["source"]["trained_steps"] == 512
    assert info.metadata["source"]["envs"] == 2  # collected on two envs, the policy acting on their batch


def test_vector_collection_keeps_episodes_contiguous_and_their_final_observations(tmp_path):
    """Collecting on N envs stores each env's transitions one env after another: within an episode each
    next_observation is the following row's observation, a terminated episode's last next_observation is the final
    one (CartPole: out of its bounds), not the next episode's reset, and each env's last transition carries a flag."""
    from rlplug.data.collect import collect, rollout
    from rlplug.data.datasets import DatasetError

    arrays = rollout("CartPole-v1", {}, None, 1001, 0.0, 3, False, envs=4)
    ends = arrays["terminated"] | arrays["truncated"]
    assert len(ends) == 1001 and ends[-1]
    inside = ~ends[:-1]
    np.testing.assert_array_equal(arrays["next_observation"][:-1][inside], arrays["observation"][1:][inside])
    final = arrays["next_observation"][arrays["terminated"]]
    assert len(final) > 10 and np.all((np.abs(final[:, 0]) > 2.4) | (np.abs(final[:, 2]) > 0.2095))
    assert arrays["partial"].sum() <= 4 and np.all(arrays["truncated"][arrays["partial"]])
    assert np.flatnonzero(arrays["partial"]).tolist() == [i for i in (250, 500, 750, 1000) if arrays["partial"][i]]  # 251, 250, 250, 250
    with pytest.raises(DatasetError, match="--envs .* must be at least 1, got 0"):
        collect(None, "never", "CartPole-v1", steps=10, envs=0)


def test_a_medium_dataset_takes_its_behaviour_policy_from_the_experts_run(tmp_path, monkeypatch, capsys):
    """A behaviour policy that is the expert's recipe stopped earlier is the expert's run at those steps: one
    training, and (for a recipe without a schedule over its budget) the policy a run of that budget trains, so the
    dataset is the one two trainings gave. A second build reuses both runs."""
    import rlplug
    from rlplug.data.collect import _trained_run, build_declared, collect
    from rlplug.data.datasets import load_data, read_info
    from rlplug.pipeline.session import Session

    monkeypatch.setenv("RLPLUG_DATA_DIR", str(tmp_path / "data"))
    recipes = tmp_path / "medium.toml"
    recipes.write_text('[datasets.cartpole-early]\nenv = "CartPole-v1"\npolicy = "ppo-cartpole"\npolicy_steps = 512\n'
                       'expert_steps = 1024\nnoise = 0.1\nsteps = 300\nseed = 1\n')  # fmt: skip
    lines = []
    info = build_declared(Session(recipe_files=[str(recipes)]), "cartpole-early", progress=True, log=lines.append)
    bars = capsys.readouterr().err
    assert "cartpole-early 1/3 behaviour policy" in bars and "cartpole-early 2/3 expert" in bars
    assert "its run at 512 steps is the behaviour policy" in " ".join(lines)
    assert info.metadata["source"]["trained_steps"] == 512 and info.reference["expert_source"]["trained_steps"] == 1024

    separate = _trained_run(rlplug.session(), "ppo-cartpole", "skrl", 512, 1, tmp_path / "separate", progress=False)
    twice = collect(rlplug.session(), "cartpole-twice", "CartPole-v1", policy_run=separate, noise=0.1, steps=300, seed=1,
                    progress=False)  # fmt: skip
    ours, theirs = (load_data(read_info(name)) for name in ("cartpole-early", "cartpole-twice"))
    for key in ("observation", "action", "reward", "terminated", "truncated"):
        np.testing.assert_array_equal(np.asarray(ours[key]), np.asarray(theirs[key]), err_msg=key)

    runs = tmp_path / "data" / "_runs"
    stamps = {run: (runs / run / "summary.json").stat().st_mtime_ns for run in ("cartpole-early-policy", "cartpole-early-expert")}
    build_declared(Session(recipe_files=[str(recipes)]), "cartpole-early", progress=False, overwrite=True, log=lines.append)
    assert stamps == {run: (runs / run / "summary.json").stat().st_mtime_ns for run in stamps}
    summary = runs / "cartpole-early-expert" / "summary.json"
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "steps": 512}))  # as if resuming to 1024 was interrupted
    build_declared(Session(recipe_files=[str(recipes)]), "cartpole-early", progress=False, overwrite=True, log=lines.append)
    assert json.loads(summary.read_text())["steps"] == 1024
    stamps = {run: (runs / run / "summary.json").stat().st_mtime_ns for run in stamps}
    (runs / "cartpole-early-policy" / "stopped_early.json").write_text('{"policy_steps": 256}')  # another declaration's copy
    build_declared(Session(recipe_files=[str(recipes)]), "cartpole-early", progress=False, overwrite=True, log=lines.append)
    assert stamps["cartpole-early-policy"] != (runs / "cartpole-early-policy" / "summary.json").stat().st_mtime_ns


def test_a_declared_build_retrains_a_run_from_another_declaration(tmp_path):
    """`dataset build` reuses its finished behaviour/expert runs only while the declaration still asks for
    them: a changed policy_steps must not silently collect from the old, shorter run."""
    import rlplug
    from rlplug.data.collect import _trained_run

    run_dir = tmp_path / "_runs" / "x-policy"
    _trained_run(rlplug.session(), "ppo-cartpole", "skrl", 512, 0, run_dir, progress=False)
    first = (run_dir / "summary.json").stat().st_mtime_ns
    _trained_run(rlplug.session(), "ppo-cartpole", "skrl", 512, 0, run_dir, progress=False)
    assert (run_dir / "summary.json").stat().st_mtime_ns == first  # same declaration: reused
    recorded = json.loads((run_dir / "recipe.json").read_text())
    recorded["recipe"]["description"] = "edited since"  # a describing field: still the same training
    (run_dir / "recipe.json").write_text(json.dumps(recorded))
    _trained_run(rlplug.session(), "ppo-cartpole", "skrl", 512, 0, run_dir, progress=False)
    assert (run_dir / "summary.json").stat().st_mtime_ns == first
    _trained_run(rlplug.session(), "ppo-cartpole", "skrl", 1024, 0, run_dir, progress=False)
    assert json.loads((run_dir / "recipe.json").read_text())["recipe"]["steps"] == 1024


# ---- what training needs, checked before it starts -----------------------------------------------------


def _forge(directory, key, array):
    """Replace ``key``'s array by ``array`` and record it as if it had been written so (file, tensordict's
    meta.json and metadata.json agree, checksum included): only its shape or dtype gives it away."""
    import hashlib

    array = np.ascontiguousarray(array)
    data = directory / "data"
    (data / f"{key}.memmap").write_bytes(array.tobytes())
    td_meta = json.loads((data / "meta.json").read_text())
    td_meta[key].update(shape=list(array.shape), dtype=f"torch.{array.dtype}")
    td_meta["shape"] = []  # no batch size: tensordict then loads arrays of any lengths
    (data / "meta.json").write_text(json.dumps(td_meta))
    meta = json.loads((directory / "metadata.json").read_text())
    meta["files"][key].update(shape=list(array.shape), dtype=str(array.dtype), sha256=hashlib.sha256(array.tobytes()).hexdigest())
    (directory / "metadata.json").write_text(json.dumps(meta))


def _refused_in_process(capsys, *argv):
    from rlplug.cli import main

    capsys.readouterr()
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (code, err)
    return err.strip()


def test_arrays_of_unequal_lengths_fail_verify_and_training_with_one_line(tmp_path, capsys):
    path = write_dataset(tmp_path / "pend", steps=200)
    _forge(tmp_path / "pend", "reward", np.zeros((150, 1), np.float32))
    expected = (f"rlplug: error: dataset '{path}' cannot be trained on: its arrays have unequal lengths (observation 200, "
                "action 200, reward 150, next_observation 200, terminated 200, truncated 200; transitions 200)")  # fmt: skip
    assert _refused_in_process(capsys, "dataset", "info", path, "--verify") == expected
    assert _refused_in_process(capsys, "train", "iql-pendulum-medium", "--set", f"dataset={path}", "--set", "steps=8",
                               "--no-write", "--no-progress") == expected  # fmt: skip


def test_arrays_of_the_wrong_size_or_dtype_fail_verify(tmp_path, capsys):
    path = write_dataset(tmp_path / "pend", steps=200)
    _forge(tmp_path / "pend", "action", np.zeros((200, 2), np.float32))
    assert _refused_in_process(capsys, "dataset", "info", path, "--verify").endswith(
        "cannot be trained on: action has 2 values per row ([200, 2]), its space 1")
    path = write_dataset(tmp_path / "pend2", steps=200)
    _forge(tmp_path / "pend2", "observation", np.zeros((200, 3), np.float64))
    assert _refused_in_process(capsys, "dataset", "info", path, "--verify").endswith(
        "cannot be trained on: observation is float64, training reads float32")
    meta = json.loads((tmp_path / "pend2" / "metadata.json").read_text())
    del meta["files"]["truncated"]
    (tmp_path / "pend2" / "metadata.json").write_text(json.dumps(meta))
    assert _refused_in_process(capsys, "dataset", "info", path).endswith(
        "cannot be trained on: it has no truncated array (a dataset holds observation, action, reward, next_observation, "
        "terminated, truncated)")


def test_a_recurrent_or_masked_observation_behaviour_policy_is_refused(tmp_path):
    """dataset collect acts one full observation at a time: a run trained with hidden observations (or a recurrent
    core) is refused in one line, and nothing is written."""
    data_dir = tmp_path / "data"
    run = tmp_path / "novel"
    trained = run_cli("train", "ppo-cartpole-novel", "--steps", "256", "--set", "rollout_steps=32", "--set", "epochs=1",
                      "--run-dir", str(run))  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    refused = run_data_cli(data_dir, "dataset", "collect", "x", "--env", "CartPole-v1", "--policy", str(run), "--steps", "50")
    assert_one_line_error(refused, "was trained with observation indices [1, 3] hidden; dataset collect rolls out feed-forward")
    assert not (data_dir / "x").exists()


def test_a_build_off_its_verified_return_is_flagged():
    """``verified_return`` in a declaration: a build whose mean return is elsewhere (a behaviour policy trained
    by other code) gets one warning naming both numbers; a build on it, or no declared value, gets none."""
    from types import SimpleNamespace

    from rlplug.data.collect import declared, drift
    from rlplug.data.datasets import DatasetError, DatasetInfo

    table = {"env": "Pendulum-v1", "policy": "sac-pendulum", "steps": 10, "verified_return": -573.3}
    session = SimpleNamespace(book=SimpleNamespace(datasets={"p": table, "q": {**table, "verified_retrun": 1.0}}))
    spec = declared(session, "p")
    assert spec["verified_return"] == -573.3
    built = lambda mean: DatasetInfo("p", Path("."), {"returns": {"mean": mean}})  # noqa: E731
    assert drift("p", spec, built(-573.26)) is None
    warning = drift("p", spec, built(-533.9))
    assert "-533.9" in warning and "-573.3" in warning and "re-verify" in warning
    assert drift("p", {**spec, "verified_return": None}, built(-533.9)) is None
    with pytest.raises(DatasetError, match="unknown field 'verified_retrun'.*verified_return"):
        declared(session, "q")


def test_non_finite_values_are_refused_at_load_naming_the_array_and_row(tmp_path, capsys):
    """A NaN action used to train until "loss_critic became nan by updates 100": now verify and training refuse
    it at load, naming the array and its first bad row; so does writing one."""
    path = write_dataset(tmp_path / "pend", steps=200)
    actions = np.asarray(load_data(read_info(path))["action"]).copy()
    actions[[17, 90]] = np.nan
    _forge(tmp_path / "pend", "action", actions)
    expected = (f"rlplug: error: dataset '{path}' cannot be trained on: action holds nan at row 17 (and 1 more row); "
                "datasets must hold finite values")
    assert _refused_in_process(capsys, "dataset", "info", path, "--verify") == expected
    assert _refused_in_process(capsys, "train", "iql-pendulum-medium", "--set", f"dataset={path}", "--set", "steps=8",
                               "--no-write", "--no-progress") == expected  # fmt: skip
    path = write_dataset(tmp_path / "pend2", steps=200)
    observations = np.asarray(load_data(read_info(path))["next_observation"]).copy()
    observations[5, 2] = -np.inf
    _forge(tmp_path / "pend2", "next_observation", observations)
    assert _refused_in_process(capsys, "dataset", "info", path, "--verify").endswith(
        "next_observation holds -inf at row 5; datasets must hold finite values")


def test_discrete_actions_out_of_range_are_refused_and_nan_is_not_written(tmp_path):
    path = write_dataset(tmp_path / "cart", env_id="CartPole-v1", steps=100)
    actions = np.asarray(load_data(read_info(path))["action"]).copy()
    actions[42] = 2
    _forge(tmp_path / "cart", "action", actions)
    with pytest.raises(DatasetError, match=r"cannot be trained on: action 2 at row 42 is outside Discrete\(2\)"):
        load_data(read_info(path))
    from rlplug.data.collect import rollout
    from rlplug.data.datasets import write

    arrays = rollout("Pendulum-v1", {}, None, 50, 0.0, 0, progress=False)
    arrays["reward"] = arrays["reward"].astype(np.float32)
    arrays["reward"][3] = np.nan
    env = gym.make("Pendulum-v1")
    with pytest.raises(DatasetError, match="cannot write dataset '.*': reward holds nan at row 3"):
        write(str(tmp_path / "nan"), arrays, env_id="Pendulum-v1", env_kwargs={}, observation_space=env.observation_space,
              action_space=env.action_space, source={}, reference={})
    assert not (tmp_path / "nan").exists()
