"""ppo on both backends: the same weights and the same rollout give the same update.

One minibatch per epoch, so the two samplers' different permutations do not matter; two epochs, so the
observation statistics (trained in the first epoch only) and the KL-adaptive schedule are exercised. The
rollout is TorchRL's, copied into skrl's memory as ``SkrlRolloutTrainer.step`` records it (values at acting
time, the truncation bootstrap added to the reward), with time-limit cuts planted on running steps (the
feed-forward case) or, for the recurrent case, real ones from a 12-step time limit (a planted cut would not
reset the TorchRL cores' states: ``is_init`` comes from the env).
"""

from __future__ import annotations

import pytest

from conftest import make_ppo_build

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")
pytest.importorskip("skrl")

from torch import nn  # noqa: E402

HP = dict(
    rollout_steps=16, epochs=2, minibatches=1, learning_rate=1e-3, lr_schedule="kl_adaptive", kl_target=0.008,
    gamma=0.99, gae_lambda=0.95, clip_ratio=0.2, value_clip=0.2, entropy_coef=0.01, value_coef=1.0, max_grad_norm=0.5,
    normalize_observations=True, normalize_values=True, bootstrap_truncated=True, hidden_sizes=[32, 32], activation="tanh",
)  # fmt: skip


def _mlp(module):
    return next(m for m in module.modules() if isinstance(m, nn.Sequential) and any(isinstance(c, nn.Linear) for c in m))


def _skrl_values(agent, observations):
    inputs = {"observations": agent._observation_preprocessor(observations.reshape(-1, observations.shape[-1])), "states": None}
    values, _ = agent.value.act(inputs, role="value")
    return agent._value_preprocessor(values, inverse=True).reshape(*observations.shape[:-1], 1)


def _max_difference(first, second):
    return max((a - b).abs().max().item() for a, b in zip(first.parameters(), second.parameters(), strict=True))


def _update_both(agent, trainer, batch):
    """skrl's update from the memory it was given, then TorchRL's from ``batch`` (advantages computed first); TorchRL's
    metrics."""
    agent.enable_models_training_mode(True)
    agent.update(timestep=0, timesteps=1)
    with torch.no_grad():
        trainer.compute_advantages(batch)
    trainer.memory.extend(trainer.memory_rows(batch))
    return trainer.update(batch)


def _copy_weights(pairs):
    """Each skrl network's parameters into its TorchRL twin."""
    with torch.no_grad():
        for skrl_net, torchrl_net in pairs:
            for a, b in zip(skrl_net.parameters(), torchrl_net.parameters(), strict=True):
                b.copy_(a)


def _record_rollout(agent, batch, gamma=0.99):
    """A feed-forward TorchRL ``[envs, steps]`` rollout into skrl's memory as ``SkrlRolloutTrainer.step`` records it
    (values at acting time, the truncation bootstrap added to the reward); ``by_step`` of it, per key."""
    steps, envs = batch.shape[1], batch.shape[0]
    by_step = {key: batch[key].transpose(0, 1) for key in ("observation", ("next", "observation"), ("next", "reward"),
                                                          ("next", "terminated"), ("next", "truncated"))}  # fmt: skip
    truncated = by_step["next", "truncated"]
    memory = agent.memory
    with torch.no_grad():
        memory.tensors["values"][:] = _skrl_values(agent, by_step["observation"])
        bootstrap = gamma * _skrl_values(agent, by_step["next", "observation"]) * truncated
    memory.tensors["observations"][:] = by_step["observation"]
    memory.tensors["actions"][:] = batch["action"].transpose(0, 1).reshape(steps, envs, -1)
    memory.tensors["rewards"][:] = by_step["next", "reward"] + bootstrap
    memory.tensors["terminated"][:] = by_step["next", "terminated"]
    memory.tensors["truncated"][:] = truncated
    memory.tensors["log_prob"][:] = batch["action_log_prob"].transpose(0, 1).reshape(steps, envs, 1)
    memory.filled, memory.memory_index = True, 0
    agent._current_next_observations, agent._current_next_states = by_step["next", "observation"][-1], None
    return by_step


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])  # categorical; Gaussian with a learnt log-std
def test_one_update_is_the_same_on_skrl_and_torchrl(ppo_builds, env_id):
    skrl, torchrl = (ppo_builds(backend, env_id=env_id, num_envs=4, seed=3, **HP) for backend in ("skrl", "torchrl"))
    agent, trainer = skrl.trainer.agent, torchrl.trainer
    nets = [(agent.policy.net, _mlp(trainer.actor)), (agent.value.net, _mlp(trainer.critic))]
    _copy_weights(nets)

    batch = next(trainer._batches)  # [envs, steps]
    cut = torch.zeros_like(batch["next", "truncated"])
    cut[0, 5] = cut[2, 11] = cut[3, 15] = True
    batch["next", "truncated"] |= cut & ~batch["next", "terminated"]
    batch["next", "done"] = batch["next", "terminated"] | batch["next", "truncated"]
    assert batch["next", "truncated"].sum() >= 2
    _record_rollout(agent, batch, HP["gamma"])
    memory = agent.memory

    _update_both(agent, trainer, batch)

    torch.testing.assert_close(batch["value_target"].transpose(0, 1), memory.tensors["returns"], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(batch["advantage"].transpose(0, 1), memory.tensors["advantages"], rtol=1e-5, atol=1e-5)
    scaler = agent._observation_preprocessor
    torch.testing.assert_close(trainer.observation_normalizer.var.double(), scaler.running_variance, rtol=1e-5, atol=1e-7)
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(agent.optimizer.param_groups[0]["lr"])
    for skrl_net, torchrl_net in nets:
        assert _max_difference(skrl_net, torchrl_net) < 1e-5
    if env_id == "Pendulum-v1":
        (scale,) = [p for name, p in trainer.actor.named_parameters() if name.endswith("state_independent_scale")]
        assert agent.policy.log_std_parameter.item() != 0.0  # moved by the update, from 0 on both
        torch.testing.assert_close(scale, agent.policy.log_std_parameter, rtol=1e-5, atol=1e-6)


RECURRENT_HP = dict(
    rollout_steps=32, epochs=2, minibatches=1, learning_rate=1e-3, lr_schedule="linear", clip_schedule="linear",
    gamma=0.98, gae_lambda=0.8, clip_ratio=0.2, value_clip=0.0, entropy_coef=0.0, value_coef=0.5, max_grad_norm=0.5,
    normalize_observations=True, normalize_values=False, bootstrap_truncated=True, hidden_sizes=[16], activation="relu",
    recurrent="lstm", recurrent_hidden_size=8, recurrent_layers=1, sequence_length=8,
)  # fmt: skip
SHORT_CARTPOLE = "RlplugCartPole12-v0"


def test_one_recurrent_update_is_the_same_on_skrl_and_torchrl(ppo_builds):
    """The LSTM cells (``ppo-lstm-cartpole-novel``'s settings, smaller): the same weights, rollout and stored
    states give the same values, returns, advantages, observation statistics and updated weights, with
    episodes ending inside the training sequences by termination and by truncation."""
    import gymnasium as gym

    if SHORT_CARTPOLE not in gym.registry:
        gym.register(SHORT_CARTPOLE, entry_point="gymnasium.envs.classic_control:CartPoleEnv", max_episode_steps=12)
    skrl, torchrl = (ppo_builds(backend, env_id=SHORT_CARTPOLE, num_envs=4, seed=3, **RECURRENT_HP) for backend in ("skrl", "torchrl"))
    agent, trainer = skrl.trainer.agent, torchrl.trainer
    pairs = [(agent.policy, trainer.actor), (agent.value, trainer.critic)]  # core, then head: the same order
    with torch.no_grad():
        for skrl_model, torchrl_model in pairs:
            for a, b in zip(skrl_model.parameters(), torchrl_model.parameters(), strict=True):
                b.copy_(a)

    batch = next(trainer._batches)  # [envs, steps], collected with the copied weights
    envs, steps = batch.shape
    ended, truncated = batch["next", "done"].squeeze(-1), batch["next", "truncated"].squeeze(-1)
    assert truncated.any() and (ended & ~truncated).any() and ended[:, :-1].any()

    def by_step(value):
        return value.transpose(0, 1)

    def states(prefix, after=False):  # skrl's [layers, envs, hidden] states at step k
        keys = [("next", f"{prefix}_rnn_{x}") if after else f"{prefix}_rnn_{x}" for x in "hc"]
        found = [batch[key] for key in keys]
        if not after:  # a step that starts an episode acts from zeros (TorchRL zeroes them inside the core)
            found = [state * ~batch["is_init"].unsqueeze(-1) for state in found]
        return found

    memory = agent.memory
    with torch.no_grad():
        values, bootstraps = [], []
        for k in range(steps):
            before, after = ([by_step(s[:, k]).contiguous() for s in states("critic", flag)] for flag in (False, True))
            values.append(agent._values(batch["observation"][:, k], None, before)[0])
            bootstraps.append(agent._values(batch["next", "observation"][:, k], None, after)[0])
    memory.tensors["values"][:] = torch.stack(values)
    memory.tensors["observations"][:] = by_step(batch["observation"])
    memory.tensors["actions"][:] = by_step(batch["action"]).reshape(steps, envs, 1)
    memory.tensors["rewards"][:] = by_step(batch["next", "reward"]) + RECURRENT_HP["gamma"] * torch.stack(bootstraps) * by_step(batch["next", "truncated"])
    memory.tensors["terminated"][:] = by_step(batch["next", "terminated"])
    memory.tensors["truncated"][:] = by_step(batch["next", "truncated"])
    memory.tensors["log_prob"][:] = by_step(batch["action_log_prob"]).reshape(steps, envs, 1)
    for role, prefix in (("policy", "actor"), ("value", "critic")):
        for i, state in enumerate(states(prefix)):
            memory.tensors[f"rnn_{role}_{i}"][:] = by_step(state)
    memory.filled, memory.memory_index = True, 0
    agent._current_next_observations, agent._current_next_states = batch["next", "observation"][:, -1], None
    still_running = (~ended[:, -1]).float().view(1, envs, 1)
    agent._rnn_initial_states = {**agent._rnn_initial_states,
                                 "value": [by_step(s[:, -1]).contiguous() * still_running for s in states("critic", True)]}  # fmt: skip

    _update_both(agent, trainer, batch)

    torch.testing.assert_close(by_step(batch["state_value"]), memory.tensors["values"], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(by_step(batch["value_target"]), memory.tensors["returns"], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(by_step(batch["advantage"]), memory.tensors["advantages"], rtol=1e-5, atol=1e-5)
    scaler = agent._observation_preprocessor
    torch.testing.assert_close(trainer.observation_normalizer.var.double(), scaler.running_variance, rtol=1e-5, atol=1e-7)
    for skrl_model, torchrl_model in pairs:
        assert _max_difference(skrl_model, torchrl_model) < 1e-5
