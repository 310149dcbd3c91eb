"""MAPPO with action masks on a user's PettingZoo env (``pz:MODULE:FACTORY``), both backends: masked
actions are never sampled nor chosen greedily, losses stay finite, the export takes the mask, and bad
``pz:`` ids fail in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("pettingzoo")
pytest.importorskip("rlplug_mappo")

import masked_ma_envs  # noqa: E402
from conftest import assert_one_line_error, run_cli  # noqa: E402
from mappo_builds import make_mappo_build  # noqa: E402
from rlplug.envs.multiagent import probe_multiagent_spaces  # noqa: E402
from rlplug.errors import EnvModuleError, SpaceError, UnknownNameError  # noqa: E402

PICK = "pz:masked_ma_envs:make_pick"
BACKENDS = ["skrl", "torchrl"]


@pytest.fixture
def invalid_count():
    masked_ma_envs.MaskedPickEnv.invalid_actions = masked_ma_envs.MaskedPickEnv.valid_actions = 0
    yield masked_ma_envs.MaskedPickEnv


@pytest.mark.parametrize("mask_in", ["observation", "info"])
def test_probe_sees_the_mask_in_either_convention(mask_in):
    spaces = probe_multiagent_spaces(PICK, {"mask_in": mask_in})
    assert spaces.masked and spaces.mask_size == 4 and spaces.agents == ("picker_0", "picker_1")
    assert spaces.feature_space.shape == (8,) and spaces.state_space.shape == (16,)  # no masks in the state
    assert sorted(spaces.observation_space.spaces) == ["action_mask", "observation"]
    plain = probe_multiagent_spaces(PICK, {"mask_in": "none"})
    assert not plain.masked and plain.observation_space.shape == (8,)


@pytest.mark.parametrize(
    "env_id, error, message",
    [
        ("pz:masked_ma_envs:make_pik", UnknownNameError, "has no callable 'make_pik' (did you mean 'make_pick'?)"),
        ("pz:no_such_module_here:make", EnvModuleError, "cannot import module 'no_such_module_here'"),
        ("pz:masked_ma_envs:make_not_parallel", SpaceError, "returned a TimeLimit, not a PettingZoo ParallelEnv"),
        ("pz:masked_ma_envs:make_heterogeneous", SpaceError, "agents with different action spaces"),
        ("pz:masked_ma_envs", UnknownNameError, "write pz:MODULE:FACTORY"),
    ],
)
def test_bad_pz_ids_are_refused_clearly(env_id, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        probe_multiagent_spaces(env_id, {})


def test_cli_refuses_a_misspelt_factory_in_one_line(tmp_path):
    recipes = tmp_path / "r.toml"
    recipes.write_text('[recipes.bad]\nalgorithm = "mappo"\nenv = "pz:masked_ma_envs:make_pik"\nbackend = "skrl"\nsteps = 100\ntarget = 0.0\n')
    result = run_cli("train", "bad", "--recipes", str(recipes), "--no-write", paths=(Path(__file__).parent,))
    assert_one_line_error(result, "has no callable 'make_pik' (did you mean 'make_pick'?)")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mask_in", ["observation", "info"])
def test_masked_training_never_picks_a_masked_action(backend, mask_in, invalid_count):
    build = make_mappo_build(backend, env=(PICK, {"mask_in": mask_in}), num_envs=2, steps=300)
    trainer = build.trainer
    for _ in range(3):  # 3 rollouts of 50 steps x 2 envs x 2 agents
        metrics = trainer.step()
        assert all(np.isfinite(v) for v in metrics.values()), metrics
    assert invalid_count.valid_actions >= 3 * 50 * 2 * 2 and invalid_count.invalid_actions == 0
    returns = trainer.evaluate(2)  # deterministic episodes: every pick valid, so full length (16 steps, >= 0.2 each)
    assert invalid_count.invalid_actions == 0 and min(returns) >= 16 * 0.2 - 1e-6


@pytest.mark.parametrize("backend", BACKENDS)
def test_masked_log_probs_and_entropy_are_finite_and_masked_actions_get_none(backend):
    build = make_mappo_build(backend, env=(PICK, {}), num_envs=2, steps=300)
    mask = torch.tensor([[1, 0, 0, 1], [0, 1, 0, 0]], dtype=torch.float32)
    observation = torch.rand(2, 8)
    if backend == "skrl":
        policy = build.models["picker_0"]["policy"]
        actions, outputs = policy.act({"observations": torch.cat([mask, observation], dim=-1)}, role="policy")
        distribution = policy.distribution(role="policy")
        log_prob = outputs["log_prob"]
    else:
        from tensordict import TensorDict

        td = build.trainer.observation_batch({"action_mask": mask[None].numpy(), "observation": observation[None].numpy()})
        distribution = build.models["actor"].get_dist(td)
        actions = distribution.sample()
        log_prob = distribution.log_prob(actions)
        assert isinstance(td, TensorDict)
    probs = distribution.probs.reshape(2, 4)
    assert torch.all(probs[mask == 0] == 0) and torch.allclose(probs.sum(-1), torch.ones(2))
    assert torch.isfinite(distribution.entropy()).all() and torch.isfinite(log_prob).all()
    assert torch.all(mask.gather(-1, actions.reshape(2, 1).long()) == 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_exported_policy_takes_the_mask(backend, tmp_path):
    from rlplug.results.export import evaluate_exported, export_policy, load_exported

    build = make_mappo_build(backend, env=(PICK, {}), num_envs=2, steps=300)
    build.trainer.step()
    written = export_policy(build, tmp_path / "policy.pt")  # checked against act_deterministic on made-up masks
    assert [spec["name"] for spec in written["metadata"]["inputs"]] == ["action_mask", "observation"]
    assert written["max_abs_difference"] == 0.0
    exported = load_exported(written["path"])
    assert evaluate_exported(build, exported, 2) == build.trainer.evaluate(2)


def test_a_masked_pz_recipe_trains_from_the_cli(tmp_path):
    recipes = tmp_path / "r.toml"
    recipes.write_text('[recipes.pick]\nalgorithm = "mappo"\nenv = "pz:masked_ma_envs:make_pick"\nbackend = "skrl"\nsteps = 200\n'
                       'num_envs = 2\ntarget = 0.0\n[recipes.pick.hyperparameters]\nrollout_steps = 50\n')  # fmt: skip
    result = run_cli("train", "pick", "--recipes", str(recipes), "--no-write", paths=(Path(__file__).parent,))
    assert result.returncode == 0, result.stderr[-2000:]
