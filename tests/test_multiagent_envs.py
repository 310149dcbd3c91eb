"""Multi-agent env ids (``mpe:NAME``, ``vmas:NAME``): parsing, probing, evaluation, and the one-line
errors for a single-agent env in a multi-agent recipe and the reverse."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_one_line_error, run_cli
from rlplug.errors import SpaceError, UnknownNameError
from rlplug.envs.multiagent import check_env_kind, is_multiagent_env, parse_env_id, probe_multiagent_spaces
from rlplug.envs.multiagent_evaluation import evaluate_multiagent

pytest.importorskip("mpe2")
pytest.importorskip("rlplug_mappo")

RECIPE = """
[recipes.{name}]
algorithm = "{algorithm}"
env = "{env}"
backend = "skrl"
steps = 100
target = 0.0
"""


def test_ids():
    assert is_multiagent_env("mpe:simple_spread") and is_multiagent_env("vmas:navigation")
    assert not is_multiagent_env("CartPole-v1") and not is_multiagent_env("ALE/Pong-v5")
    assert parse_env_id("vmas:navigation") == ("vmas", "navigation")
    with pytest.raises(UnknownNameError):
        parse_env_id("CartPole-v1")


def test_env_kind_must_match_the_algorithm():
    check_env_kind("mappo", "multi-agent", "r", "mpe:simple_spread")
    check_env_kind("ppo", "on-policy", "r", "CartPole-v1")
    with pytest.raises(SpaceError, match="mappo is a multi-agent algorithm but 'CartPole-v1' is a single-agent"):
        check_env_kind("mappo", "multi-agent", "r", "CartPole-v1")
    with pytest.raises(SpaceError, match="ppo is a single-agent algorithm but 'mpe:simple_spread' is a multi-agent"):
        check_env_kind("ppo", "on-policy", "r", "mpe:simple_spread")


def test_probe_mpe_and_vmas():
    spread = probe_multiagent_spaces("mpe:simple_spread", {"N": 3, "max_cycles": 25})
    assert spread.agents == ("agent_0", "agent_1", "agent_2")
    assert spread.observation_space.shape == (18,) and spread.action_space.n == 5
    assert spread.state_space.shape == (54,)
    navigation = probe_multiagent_spaces("vmas:navigation", {"n_agents": 3})
    assert navigation.n_agents == 3 and navigation.observation_space.shape == (18,)
    assert navigation.action_space.shape == (2,) and navigation.state_space.shape == (54,)
    assert type(navigation.action_space).__module__.startswith("gymnasium")  # converted from VMAS's legacy gym spaces


def test_unknown_scenario_suggests_the_close_one():
    with pytest.raises(UnknownNameError, match="did you mean 'simple_spread'"):
        probe_multiagent_spaces("mpe:simple_sprad", {})


def test_evaluation_scores_the_mean_per_agent_return():
    def noop(observations):  # action 0 is MPE's no-op
        return np.zeros(observations.shape[:2], dtype=np.int64)

    returns = evaluate_multiagent("mpe:simple_spread", {"N": 3, "max_cycles": 25}, noop, 3, seed=0)
    assert len(returns) == 3 and all(r < 0 for r in returns)
    assert returns == evaluate_multiagent("mpe:simple_spread", {"N": 3, "max_cycles": 25}, noop, 3, seed=0)
    still = evaluate_multiagent("vmas:navigation", {"n_agents": 3, "max_steps": 10},
                                lambda obs: np.zeros((*obs.shape[:2], 2), np.float32), 2, seed=0)  # fmt: skip
    assert len(still) == 2 and all(np.isfinite(still))


@pytest.mark.parametrize(
    "algorithm, env, expected",
    [
        ("mappo", "CartPole-v1", "recipe 'bad': mappo is a multi-agent algorithm but 'CartPole-v1' is a single-agent environment"),
        ("ppo", "mpe:simple_spread", "recipe 'bad': ppo is a single-agent algorithm but 'mpe:simple_spread' is a multi-agent environment"),
    ],
)
def test_cli_refuses_the_wrong_kind_of_env_in_one_line(tmp_path, algorithm, env, expected):
    recipes = tmp_path / "r.toml"
    recipes.write_text(RECIPE.format(name="bad", algorithm=algorithm, env=env))
    assert_one_line_error(run_cli("train", "bad", "--recipes", str(recipes), "--no-write"), expected)


def test_vmas_evaluation_leaves_the_shared_vmas_random_state_alone():
    from vmas.simulator.environment import Environment

    before = [Environment.vmas_random_state[0].clone(), Environment.vmas_random_state[1][1].copy()]
    evaluate_multiagent("vmas:navigation", {"n_agents": 3, "max_steps": 5},
                        lambda obs: np.zeros((*obs.shape[:2], 2), np.float32), 2, seed=0)  # fmt: skip
    assert np.array_equal(before[0].numpy(), Environment.vmas_random_state[0].numpy())
    assert np.array_equal(before[1], Environment.vmas_random_state[1][1])
