"""Minari datasets both ways (issue 49): a Minari dataset made here with Minari's own writer, in a temporary
``MINARI_DATASETS_PATH``, reads as ``minari:ID`` (episodes' terminations and truncations as stored, D4RL-style
reference scores), trains offline cells by name, and is refused in one line when absent or non-finite; an rlplug
dataset exports to Minari and ``minari.load_dataset`` opens it with the same transitions. Nothing downloads."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("h5py")

from conftest import cli_in_process, write_dataset  # noqa: E402
from rlplug.data.datasets import load_data, read_info  # noqa: E402


@pytest.fixture
def minari_root(tmp_path, monkeypatch):
    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    return root


def make_minari(dataset_id, env_id, episodes, seed=0, max_steps=None, refs=None, poison=None):
    """A random-policy Minari dataset written by ``minari.create_dataset_from_buffers`` (Minari's writer, which
    needs no jax). ``max_steps`` cuts episodes by a TimeLimit, so they end truncated; ``poison`` = (episode,
    step): a NaN action there."""
    import gymnasium as gym
    import minari
    from minari.data_collector import EpisodeBuffer

    env = gym.make(env_id, max_episode_steps=max_steps) if max_steps else gym.make(env_id)
    env.action_space.seed(seed)
    buffers = []
    for number in range(episodes):
        observation, _ = env.reset(seed=seed + number)
        steps = {"observations": [observation], "actions": [], "rewards": [], "terminations": [], "truncations": []}
        done = False
        while not done:
            action = env.action_space.sample()
            observation, reward, terminated, truncated, _ = env.step(action)
            for key, value in zip(steps, (observation, action, reward, terminated, truncated)):
                steps[key].append(value)
            done = terminated or truncated
        arrays = {key: np.asarray(value) for key, value in steps.items()}
        if poison is not None and poison[0] == number:
            arrays["actions"] = arrays["actions"].astype(np.float32)
            arrays["actions"][poison[1]] = np.nan
        buffers.append(EpisodeBuffer(id=number, infos={}, **arrays))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        minari.create_dataset_from_buffers(dataset_id, buffers, env=env.spec, algorithm_name="random", data_format="hdf5",
                                           **({"ref_min_score": refs[0], "ref_max_score": refs[1]} if refs else {}))  # fmt: skip
    env.close()


def test_a_minari_dataset_reads_with_its_episodes_flags_and_d4rl_references(minari_root):
    make_minari("test/cartpole-random-v0", "CartPole-v1", episodes=6, max_steps=15, refs=(20.0, 500.0))
    info = read_info("minari:test/cartpole-random-v0")
    assert info.env == "CartPole-v1" and info.metadata["action_space"] == {"type": "Discrete", "n": 2}
    assert info.reference["random_return"] == 20.0 and info.reference["expert_return"] == 500.0
    data = load_data(info)
    assert len(data["reward"]) == info.transitions and data["action"].dtype.is_floating_point is False
    import minari

    episodes = list(minari.load_dataset("test/cartpole-random-v0").iterate_episodes())
    ends = np.cumsum([len(e.actions) for e in episodes]) - 1
    terminated, truncated = data["terminated"].reshape(-1).numpy(), data["truncated"].reshape(-1).numpy()
    assert np.array_equal(np.flatnonzero(terminated | truncated), ends)  # one flag per episode, on its last step
    assert terminated[ends].tolist() == [bool(e.terminations[-1]) for e in episodes]
    assert truncated[ends].tolist() == [bool(e.truncations[-1]) for e in episodes] and truncated.any()
    np.testing.assert_allclose(data["next_observation"][ends[0]].numpy(), episodes[0].observations[-1])
    assert info.metadata["returns"]["mean"] == pytest.approx(np.mean([e.rewards.sum() for e in episodes]))
    assert info.normalised_score(260.0) == pytest.approx(50.0) and info.d4rl_score(260.0) == pytest.approx(50.0)


def test_dataset_list_shows_local_minari_datasets(minari_root, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("RLPLUG_DATA_DIR", str(tmp_path / "data"))
    make_minari("test/pendulum-random-v0", "Pendulum-v1", episodes=2, max_steps=10, refs=(-1200.0, -150.0))
    code, out, _ = cli_in_process(capsys, "dataset", "list", "--json")
    assert code == 0
    (row,) = [r for r in json.loads(out) if r.get("minari")]
    assert row == {"name": "minari:test/pendulum-random-v0", "env": "Pendulum-v1", "transitions": 20, "episodes": 2,
                   "random_return": -1200.0, "expert_return": -150.0, "minari": True}  # fmt: skip
    code, out, _ = cli_in_process(capsys, "dataset", "list")
    assert "minari:test/pendulum-random-v0" in out and "Pendulum-v1" in out


@pytest.mark.parametrize(("recipe", "env_id"), [("bc-cartpole-medium", "CartPole-v1"), ("cql-cartpole-medium", "CartPole-v1"),
                                                 ("bc-pendulum-medium", "Pendulum-v1"), ("iql-pendulum-medium", "Pendulum-v1"),
                                                 ("td3bc-pendulum-medium", "Pendulum-v1")])  # fmt: skip
def test_offline_recipes_train_by_name_on_a_local_minari_dataset(minari_root, capsys, recipe, env_id):
    from rlplug.cli import main

    make_minari("test/data-v0", env_id, episodes=3, max_steps=60, refs=(-10.0, 90.0))
    capsys.readouterr()
    code = main(["train", recipe, "--set", "dataset=minari:test/data-v0", "--steps", "40", "--set", "hidden_sizes=[16, 16]",
                 "--set", "batch_size=32", "--set", "log_every=20", "--set", "eval_every=0", "--set", "eval_episodes=1",
                 "--no-write", "--no-progress", "--json"])  # fmt: skip
    out = capsys.readouterr().out
    assert code in (0, 1), out
    summary = json.loads(out)
    assert summary["dataset"] == "minari:test/data-v0" and summary["steps"] == 40
    expected = 100.0 * (summary["eval_return_mean"] + 10.0) / 100.0
    assert summary["normalised_score"] == pytest.approx(expected, abs=0.06)
    assert summary["d4rl_normalised_score"] == summary["normalised_score"]


def _refused(capsys, *argv):
    code, _, err = cli_in_process(capsys, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (code, err)
    return err.strip()


def test_an_absent_or_non_finite_minari_dataset_is_refused_in_one_line(minari_root, capsys):
    make_minari("test/pendulum-random-v0", "Pendulum-v1", episodes=2, max_steps=30, poison=(1, 7))
    err = _refused(capsys, "dataset", "info", "minari:test/pendulum-random-v1")
    assert "is not in the local Minari root" in err and "did you mean 'test/pendulum-random-v0'" in err
    assert _refused(capsys, "dataset", "info", "minari:test/pendulum-random-v0", "--verify").endswith(
        "cannot be trained on: action holds nan at row 37; datasets must hold finite values")  # 30 steps in episode 0, then 7


def test_an_rlplug_dataset_exports_to_minari_and_loads_back(minari_root, tmp_path, capsys):
    import minari

    path = write_dataset(tmp_path / "pend", steps=450, random_return=-1200.0, expert_return=-150.0)
    code, out, err = cli_in_process(capsys, "dataset", "export", path, "--format", "minari", "--id", "rlplug/pend-v0", "--json")
    assert code == 0, err
    assert json.loads(out)["total_steps"] == 450
    exported = minari.load_dataset("rlplug/pend-v0")
    assert exported.total_steps == 450 and exported.total_episodes == 3  # two 200-step episodes and the cut trailing piece
    assert exported.storage.metadata["ref_min_score"] == -1200.0 and exported.storage.metadata["ref_max_score"] == -150.0
    assert exported.spec.env_spec.id == "Pendulum-v1"
    original = load_data(read_info(path))
    info = read_info("minari:rlplug/pend-v0")
    back = load_data(info)
    assert info.normalised_score(-675.0) == pytest.approx(50.0) and info.d4rl_score(-675.0) is None  # rlplug's references
    for key in original:
        np.testing.assert_array_equal(back[key].numpy(), original[key].numpy(), err_msg=key)
    assert _refused(capsys, "dataset", "export", path, "--format", "minari", "--id", "rlplug/pend-v0").endswith(
        "Minari dataset 'rlplug/pend-v0' already exists in " + str(minari_root) + "; choose another --id or delete it")
