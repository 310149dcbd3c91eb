"""Torch-native vector envs (``env = "torch:MODULE:FACTORY"``): the pure-torch CartPole against gymnasium's, PPO on
both backends through both interfaces, no numpy on the training path, and the one-line refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlplug.contract.trainer import EpisodeTracker, TensorEpisodeTracker
from rlplug.envs.torch_cartpole import TorchCartPole
from rlplug.errors import RlplugError
from rlplug.pipeline.session import Session

sys.path.insert(0, str(Path(__file__).parent))  # torch_env_factories.py, named by the recipes below

ISAACLAB = "torch:rlplug.envs.torch_cartpole:cartpole"
ENVBASE = "torch:torch_env_factories:cartpole_envbase"
SMALL = ["num_envs=64", "rollout_steps=4", "epochs=2", "minibatches=2"]  # 256 env steps an iteration


def test_cartpole_steps_as_gymnasiums():
    """Same dynamics, termination, reward and truncation as gymnasium's CartPole-v1: each step from gymnasium's
    state (float64 there, float32 here: the states are synchronised each step so rounding does not accumulate)."""
    reference = gym.make("CartPole-v1")
    env = TorchCartPole(1, seed=0)
    rng = np.random.default_rng(0)
    for episode in range(3):
        obs, _ = reference.reset(seed=episode)
        env.reset()
        steps, done = 0, False
        while not done:
            # mostly balancing (long episodes reach the 500-step truncation), sometimes random
            action = int(obs[2] + 0.5 * obs[3] > 0) if rng.random() < 0.95 else int(rng.integers(2))
            env.state = torch.as_tensor(np.asarray(reference.unwrapped.state, dtype=np.float32))[None]
            obs, reward, terminated, truncated, _ = reference.step(action)
            after, r, term, trunc, extras = env.step(torch.tensor([action]))
            np.testing.assert_allclose(extras["final_obs"][0].numpy(), obs, rtol=1e-4, atol=1e-5)
            assert (float(r[0]), bool(term[0]), bool(trunc[0])) == (reward, terminated, truncated)
            done, steps = terminated or truncated, steps + 1
        if episode == 0:
            assert steps == 500 and truncated  # the balancing controller reaches the time limit
        assert int(env.steps[0]) == 0 and float(after["policy"].abs().max()) <= 0.05  # reset in the ending step


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
@pytest.mark.parametrize("env", [ISAACLAB, ENVBASE], ids=["isaaclab", "envbase"])
def test_ppo_trains_a_torch_native_env_on_both_backends(backend, env):
    build = Session().build("ppo-cartpole", backend, [f"env={env}", *SMALL])
    trainer = build.trainer
    try:
        trainer.train(512)
        assert trainer.env_steps == 512 and trainer.episodes.episodes > 0
        returns = trainer.evaluate(3)
        assert len(returns) == 3 and all(1 <= r <= 500 for r in returns)
        state = trainer.state_dict()  # a checkpoint: the env starts new episodes when it is loaded
        trainer.load_state_dict(state)
        trainer.train(768)
        assert trainer.env_steps == 768
    finally:
        trainer.close()


PENDULUM = "torch:rlplug.envs.torch_pendulum:pendulum"
SAC_SMALL = ["num_envs=8", "learning_starts=64", "batch_size=32", "hidden_sizes=[32, 32]", "utd_ratio=0.25"]


def test_pendulum_steps_as_gymnasiums():
    from rlplug.envs.torch_pendulum import TorchPendulum

    reference, env = gym.make("Pendulum-v1"), TorchPendulum(1)
    reference.reset(seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(200):
        env.state = torch.as_tensor(np.asarray(reference.unwrapped.state, dtype=np.float32))[None]
        action = rng.uniform(-2.5, 2.5, size=1).astype(np.float32)  # beyond the bounds too: both clip
        obs, reward, terminated, truncated, _ = reference.step(action)
        _, r, term, trunc, extras = env.step(torch.as_tensor(action))
        np.testing.assert_allclose(extras["final_obs"][0].numpy(), obs, atol=1e-5)
        assert float(r[0]) == pytest.approx(reward, rel=1e-4, abs=1e-4)
        assert (bool(term[0]), bool(trunc[0])) == (terminated, truncated)
    assert truncated  # the 200-step limit


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
@pytest.mark.parametrize("env", [PENDULUM, "torch:torch_env_factories:pendulum_envbase"], ids=["isaaclab", "envbase"])
def test_sac_trains_a_torch_native_env_on_both_backends(backend, env):
    build = Session().build("sac-pendulum", backend, [f"env={env}", *SAC_SMALL])
    trainer = build.trainer
    try:
        trainer.train(128)
        assert trainer.env_steps == 128 and trainer.gradient_steps > 0
        returns = trainer.evaluate(2)
        assert len(returns) == 2 and all(-2000 < r < 0 for r in returns)
        trainer.load_state_dict(trainer.state_dict())
        trainer.train(160)
        assert trainer.env_steps == 160
    finally:
        trainer.close()


def _conversions(trainer, monkeypatch) -> list[str]:
    """The tensor-to-numpy conversions (and ``np.asarray`` calls) of 3 more iterations of ``trainer``."""
    trainer.train(256)  # the first iteration builds what is built once
    conversions: list[str] = []
    for name in ("numpy", "__array__"):
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            conversions.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    real_asarray = np.asarray
    monkeypatch.setattr(np, "asarray", lambda a, *args, **kwargs: conversions.append("asarray") or real_asarray(a, *args, **kwargs))
    try:
        trainer.train(1024)  # 3 iterations, 12 env steps
    finally:
        monkeypatch.undo()
    assert trainer.env_steps == 1024
    return conversions


NUMPY_CASES = [
    ("ppo-cartpole", ISAACLAB, SMALL), ("ppo-cartpole", "CartPole-v1", SMALL),
    ("sac-pendulum", PENDULUM, [*SAC_SMALL, "utd_ratio=0.05"]), ("sac-pendulum", "Pendulum-v1", [*SAC_SMALL, "utd_ratio=0.05"]),
]


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
@pytest.mark.parametrize("recipe,env,overrides", NUMPY_CASES, ids=["ppo-torch", "ppo-gymnasium", "sac-torch", "sac-gymnasium"])
def test_no_numpy_array_is_made_on_the_training_path(backend, recipe, env, overrides, monkeypatch):
    """Every env step of an iteration stays in torch: no tensor is turned into a numpy array, where the gymnasium
    path (the control) makes several each step (the actions for the vector env, the rewards and flags it returns)."""
    build = Session().build(recipe, backend, [f"env={env}", *overrides])
    try:
        conversions = _conversions(build.trainer, monkeypatch)
        if env.startswith("torch:"):
            assert conversions == []
        else:
            assert len(conversions) >= 12
    finally:
        build.trainer.close()


def test_the_episode_tracker_on_the_device_reports_what_the_host_one_does():
    rng = np.random.default_rng(0)
    host, device = EpisodeTracker(8), TensorEpisodeTracker(8, "cpu")
    for step in range(200):
        rewards, dones = rng.normal(size=8), rng.random(8) < 0.05
        host.update(rewards, dones)
        device.update(torch.as_tensor(rewards), torch.as_tensor(dones))
        if step % 50 == 49:
            expected = host.pop_mean()
            assert device.pop_mean() == pytest.approx(expected)
    assert device.state_dict()["episodes"] == host.state_dict()["episodes"]
    np.testing.assert_allclose(device.state_dict()["running"], host.state_dict()["running"])


REFUSALS = [
    (["env=torch:rlplug.envs.torch_cartpole"], "'torch:rlplug.envs.torch_cartpole' is not a torch-native env id; write torch:MODULE:FACTORY"),
    (["env=torch:no_such_module_xyz:make"], "environment 'torch:no_such_module_xyz:make': module 'no_such_module_xyz' cannot be imported"),
    (["env=torch:rlplug.envs.torch_cartpole:cartpol"], "environment 'torch:rlplug.envs.torch_cartpole:cartpol': module 'rlplug.envs.torch_cartpole' has no 'cartpol' (did you mean 'cartpole'?)"),
    (["env=torch:torch_env_factories:NOT_CALLABLE"], "environment 'torch:torch_env_factories:NOT_CALLABLE': 'torch_env_factories.NOT_CALLABLE' is a int, not a callable"),
    (["env=torch:torch_env_factories:not_an_env"], "environment 'torch:torch_env_factories:not_an_env': the factory returned a dict, which is neither an IsaacLab-style env"),
    (["env=torch:torch_env_factories:no_arguments"], "environment 'torch:torch_env_factories:no_arguments' rejected its arguments (num_envs, device, seed"),
    ([f"env={ISAACLAB}", "env_kwargs={num_envs = 3}"], f"environment '{ISAACLAB}': env_kwargs.num_envs is set by rlplug"),
    ([f"env={ISAACLAB}", "vector_mode=async"], "recipe 'ppo-cartpole': vector_mode 'async' steps Gymnasium envs"),
    ([f"env={ISAACLAB}", "frame_stack=4"], f"recipe 'ppo-cartpole': frame_stack wraps Gymnasium environments, not the torch-native '{ISAACLAB}'"),
    ([f"env={ISAACLAB}", "env_module=tiny_envs"], "recipe 'ppo-cartpole': env_module registers Gymnasium ids"),
]


@pytest.mark.parametrize("overrides,line", REFUSALS, ids=[r[1][:50] for r in REFUSALS])
def test_torch_native_refusals_are_one_line(overrides, line):
    with pytest.raises(RlplugError) as caught:
        Session().prepare("ppo-cartpole", overrides=overrides)
    text = str(caught.value)
    assert "\n" not in text and caught.value.exit_code == 2
    assert text.startswith(line), text


def test_an_offline_recipe_on_a_torch_native_env_is_refused():
    with pytest.raises(RlplugError) as caught:
        Session().prepare("iql-pendulum-medium", overrides=[f"env={PENDULUM}"])
    assert str(caught.value).startswith(f"recipe 'iql-pendulum-medium': '{PENDULUM}' is a torch-native env, which trains on-policy "
                                        "and off-policy algorithms (ppo, sac, ...); iql is offline")  # fmt: skip


def test_a_factory_with_spaces_is_not_called_to_probe():
    import torch_env_factories

    before = torch_env_factories.cartpole_with_spaces.made
    build = Session().prepare("ppo-cartpole", overrides=["env=torch:torch_env_factories:cartpole_with_spaces"])
    assert torch_env_factories.cartpole_with_spaces.made == before
    assert build.observation_space.shape == (4,) and build.action_space.n == 2


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_box_actions_are_clamped_on_their_way_in_unless_clip_actions_is_off(backend, monkeypatch):
    """clip_actions (on by default) clamps what the env receives into the Box bounds, as the Gymnasium path clips in
    each sub-env; the stored sample stays the policy's."""
    from rlplug.envs.torch_pendulum import TorchPendulum

    received = []
    step = TorchPendulum.step
    monkeypatch.setattr(TorchPendulum, "step", lambda self, actions: received.append(actions.abs().max().item()) or step(self, actions))
    for clip, bounded in ((True, True), (False, False)):
        received.clear()
        overrides = [f"env={PENDULUM}", *SAC_SMALL, "learning_starts=0", "initial_log_std=1.5", f"clip_actions={str(clip).lower()}"]
        build = Session().build("ppo-pendulum", backend, [o for o in overrides if not o.startswith(("learning_starts", "batch_size", "utd"))])
        try:
            build.trainer.train(64)
        finally:
            build.trainer.close()
        assert (max(received) <= 2.0) == bounded, max(received)


def test_evaluate_policy_bridges_a_numpy_policy_to_a_torch_native_env():
    """An exported file's numpy ``act`` (``rlplug export``'s check) evaluates on a torch-native env too."""
    from rlplug.envs.evaluation import evaluate_policy

    seen = []

    def act(observations):
        seen.append(observations.shape)
        return (observations[:, 2] + 0.5 * observations[:, 3] > 0).astype(np.int64)  # balances: long episodes

    returns = evaluate_policy(ISAACLAB, None, act, 3, seed=0)
    assert len(returns) == 3 and all(r > 100 for r in returns) and seen[0] == (3, 4)
