"""mappo/torchrl: MAPPOLoss keys, training on MPE and VMAS, IPPO and parameter sharing, checkpoints."""

from __future__ import annotations

import copy
import io
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")
pytest.importorskip("mpe2")

from mappo_builds import NAVIGATION, make_mappo_build  # noqa: E402
from torchrl.modules import MultiAgentMLP  # noqa: E402
from torchrl.objectives.multiagent import MAPPOLoss  # noqa: E402
from torchrl.objectives.value import MultiAgentGAE  # noqa: E402

TERMS = ("loss_objective", "loss_critic", "loss_entropy")


@pytest.fixture
def builds():
    made = []

    def make(**kwargs):
        made.append(make_mappo_build("torchrl", **kwargs))
        return made[-1]

    yield make
    for build in made:
        build.trainer.close()


def _mlp(module):
    return next(m for m in module.modules() if isinstance(m, MultiAgentMLP))


@pytest.mark.parametrize("env, group, done", [(None, "agent", ("agent", "done")), (NAVIGATION, "agents", "done")])
def test_loss_has_the_multiagent_keys(builds, env, group, done):
    build = builds(**({"env": env, "num_envs": 4, "rollout_steps": 25} if env else {}))
    loss = build.loss
    assert isinstance(loss, MAPPOLoss)
    keys = loss.tensor_keys
    assert keys.value == (group, "state_value") and keys.reward == (group, "reward")
    assert keys.action == (group, "action") and keys.sample_log_prob == (group, "action_log_prob")
    assert keys.done == done
    assert isinstance(loss.value_estimator, MultiAgentGAE)


def test_trains_a_few_hundred_steps_on_mpe(builds):
    build = builds(steps=400, epochs=4)
    trainer = build.trainer
    history = []
    before = [p.detach().clone() for p in build.models["actor"].parameters()]
    trainer.train(400, callbacks=[lambda t, m: history.append(m)])
    assert trainer.env_steps == 400 and trainer.iterations == 4
    for metrics in history:
        assert all(math.isfinite(metrics[f"loss/{term}"]) for term in (*TERMS, "kl_approx"))
    assert any(not torch.equal(a, b) for a, b in zip(before, build.models["actor"].parameters()))
    assert any("train/episode_return" in m for m in history)
    returns = trainer.evaluate(2)
    assert len(returns) == 2 and all(-200 < r < 0 for r in returns)


@pytest.mark.parametrize("share", [True, False])
def test_update_lowers_the_value_loss_on_its_rollout(builds, share):
    build = builds(steps=100, epochs=8, learning_rate=1e-3, share_parameters=share)
    before = copy.deepcopy(build.models["critic"])
    build.trainer.step()
    rollout = build.memory[:]

    def mse(critic):
        with torch.no_grad():
            values = critic(rollout.clone())["agent", "state_value"]
        return torch.nn.functional.mse_loss(values, rollout["value_target"]).item()

    assert mse(build.models["critic"]) < 0.9 * mse(before)


def test_vmas_navigation_trains_and_evaluates(builds):
    build = builds(env=NAVIGATION, num_envs=4, rollout_steps=25, steps=100)
    build.trainer.train(100)
    assert build.trainer.env_steps == 100
    actions = build.trainer.act_deterministic(np.zeros((5, 3, 18), dtype=np.float32))
    assert actions.shape == (5, 3, 2) and np.all(np.abs(actions) <= 1.0)
    returns = build.trainer.evaluate(3)
    assert len(returns) == 3 and all(math.isfinite(r) for r in returns)


@pytest.mark.parametrize("centralised", [True, False])
@pytest.mark.parametrize("share", [True, False])
def test_critic_and_sharing_follow_the_hyperparameters(builds, centralised, share):
    build = builds(centralised_critic=centralised, share_parameters=share)
    critic, actor = _mlp(build.models["critic"]), _mlp(build.models["actor"])
    assert critic.centralized is centralised and critic.share_params is share
    assert actor.centralized is False and actor.share_params is share


def test_state_dict_round_trip(builds):
    build = builds(steps=100)
    build.trainer.train(100)
    buffer = io.BytesIO()
    torch.save(build.trainer.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    fresh = builds(seed=1, steps=100)
    observations = np.random.default_rng(0).normal(size=(16, 3, 18)).astype(np.float32)
    assert not np.array_equal(fresh.trainer.act_deterministic(observations), build.trainer.act_deterministic(observations))
    fresh.trainer.load_state_dict(state)
    assert np.array_equal(fresh.trainer.act_deterministic(observations), build.trainer.act_deterministic(observations))
    assert fresh.trainer.counters() == build.trainer.counters()
    a, b = build.trainer.optimizer.state_dict(), fresh.trainer.optimizer.state_dict()
    assert all(torch.equal(a["state"][k]["exp_avg"], b["state"][k]["exp_avg"]) for k in a["state"])


@pytest.mark.parametrize("recipe", ["mappo-simple-spread", "mappo-navigation"])
def test_conforms_to_the_contract(recipe):
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence (MPE worlds and VMAS scenarios are
    saved mid-episode: 40-step rollouts end inside 25-step episodes; a VMAS episode ends before the resume, so the
    scenario's respawn draws from VMAS's own RNG states, which the checkpoint keeps)."""
    from rlplug.testing import check_cell

    episodes = ["env_kwargs.max_steps=25"] if recipe == "mappo-navigation" else []
    check_cell(recipe, "torchrl", ["num_envs=2", "rollout_steps=40", "hidden_sizes=[16, 16]", "epochs=1", *episodes], steps=80)
