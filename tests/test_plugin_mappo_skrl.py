"""mappo/skrl: the cfg workaround, parity of the loss-delegating agent with upstream skrl MAPPO,
training on MPE and VMAS, IPPO and parameter sharing, and the checkpoint round trip."""

from __future__ import annotations

import copy
import io
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")
pytest.importorskip("mpe2")

from mappo_builds import NAVIGATION, SPREAD, make_mappo_build  # noqa: E402
from rlplug.backends.skrl import agent_models, configure_threads, seed_skrl
from rlplug.backends.skrl.multiagent import make_multiagent_vector_env
from rlplug.envs.multiagent import probe_multiagent_spaces
from rlplug.backends.skrl.multiagent import complete_per_agent_kwargs  # noqa: E402
from rlplug_mappo.skrl_backend import LossDelegatingMAPPO, MAPPOClipLoss  # noqa: E402
from skrl.memories.torch import RandomMemory  # noqa: E402
from skrl.multi_agents.torch.mappo import MAPPO as UpstreamMAPPO  # noqa: E402
from skrl.multi_agents.torch.mappo import MAPPO_CFG  # noqa: E402
from skrl.resources.preprocessors.torch import RunningStandardScaler  # noqa: E402

TERMS = ("loss_policy", "loss_value", "loss_entropy")


@pytest.fixture
def builds():
    made = []

    def make(**kwargs):
        made.append(make_mappo_build("skrl", **kwargs))
        return made[-1]

    yield make
    for build in made:
        build.trainer.close()


# ---- the skrl 2.1.1 MAPPO_CFG crash ---------------------------------------------------------------


def _agent_kwargs(env, spaces, cfg):
    configure_threads()
    seed_skrl(0)
    models = agent_models(spaces, "cpu", [16], "tanh", centralised_critic=True, share_parameters=True)
    return dict(
        possible_agents=list(spaces.agents), models=models,
        memories={uid: RandomMemory(memory_size=8, num_envs=env.num_envs) for uid in spaces.agents},
        observation_spaces=env.observation_spaces, state_spaces=env.state_spaces, action_spaces=env.action_spaces,
        device="cpu", cfg=cfg,
    )  # fmt: skip


def test_default_cfg_crash_is_worked_around():
    spaces = probe_multiagent_spaces(*SPREAD)
    env = make_multiagent_vector_env(*SPREAD, num_envs=1, seed=0)
    try:
        # upstream's bug (reference §14.1): the default {} kwargs dicts fail MultiAgentCfg.expand
        with pytest.raises(ValueError, match="do not match possible agents"):
            UpstreamMAPPO(**_agent_kwargs(env, spaces, MAPPO_CFG()))
        cfg = complete_per_agent_kwargs(MAPPO_CFG(), list(spaces.agents))
        assert cfg.state_preprocessor_kwargs == {uid: {} for uid in spaces.agents}
        agent = UpstreamMAPPO(**_agent_kwargs(env, spaces, cfg))
        assert set(agent.optimizers) == set(spaces.agents)
        # values a recipe did set are left alone
        kept = complete_per_agent_kwargs(MAPPO_CFG(value_preprocessor_kwargs={"size": 1}), list(spaces.agents))
        assert kept.value_preprocessor_kwargs == {"size": 1}
    finally:
        env.close()


# ---- parity with upstream skrl MAPPO ----------------------------------------------------------------

PARITY_CFG = dict(
    rollouts=8, learning_epochs=3, mini_batches=2, discount_factor=0.99, gae_lambda=0.95, learning_rate=1e-3,
    grad_norm_clip=0.5, ratio_clip=0.2, value_clip=0.2, entropy_loss_scale=0.01, value_loss_scale=1.0,
    experiment={"write_interval": 0, "checkpoint_interval": 0},
)  # fmt: skip


def _paired_agents(env, spaces, share_parameters):
    configure_threads()
    seed_skrl(0)
    models = agent_models(spaces, "cpu", [32, 32], "tanh", True, share_parameters, initial_log_std=-0.5)
    agents = list(spaces.agents)

    def common():
        cfg = MAPPO_CFG(**PARITY_CFG, value_preprocessor=RunningStandardScaler,
                        value_preprocessor_kwargs={uid: {"size": 1, "device": "cpu"} for uid in agents})  # fmt: skip
        cfg = complete_per_agent_kwargs(cfg, agents)
        return dict(
            possible_agents=agents, models=copy.deepcopy(models), cfg=cfg, device="cpu",
            memories={uid: RandomMemory(memory_size=8, num_envs=env.num_envs) for uid in agents},
            observation_spaces=env.observation_spaces, state_spaces=env.state_spaces, action_spaces=env.action_spaces,
        )  # fmt: skip

    upstream = UpstreamMAPPO(**common())
    ours = LossDelegatingMAPPO(
        **common(), loss=MAPPOClipLoss(ratio_clip=0.2, value_clip=0.2, entropy_loss_scale=0.01, value_loss_scale=1.0),
        terms=TERMS, reported=("approx_kl",),
    )  # fmt: skip
    for agent in (upstream, ours):
        agent.init()
        agent.enable_training_mode(True)
    return upstream, ours


def _drive_both(env, upstream, ours, updates):
    """Feed both agents the same transitions and random streams through ``updates`` updates."""
    observations, _ = env.reset()
    states = env.state()
    total = 8 * updates
    for timestep in range(total):
        actions = {}
        for name, agent in (("upstream", upstream), ("ours", ours)):
            torch.manual_seed(timestep)
            with torch.no_grad():
                actions[name], _ = agent.act(observations, states, timestep=timestep, timesteps=total)
        assert all(torch.equal(actions["upstream"][uid], actions["ours"][uid]) for uid in actions["ours"])
        with torch.no_grad():
            next_observations, rewards, terminated, truncated, infos = env.step(actions["upstream"])
            next_states = env.state()
        for agent in (upstream, ours):
            agent.record_transition(observations=observations, states=states, actions=actions["upstream"],
                                    rewards={k: v.clone() for k, v in rewards.items()},
                                    next_observations=next_observations, next_states=next_states, terminated=terminated,
                                    truncated=truncated, infos=infos, timestep=timestep, timesteps=total)  # fmt: skip
        for agent in (upstream, ours):
            torch.manual_seed(10_000 + timestep)  # the update's minibatch permutations and Gaussian samples
            agent.post_interaction(timestep=timestep, timesteps=total)
        observations, states = next_observations, next_states


@pytest.mark.parametrize("env", [SPREAD, NAVIGATION], ids=["mpe-discrete", "vmas-continuous"])
def test_update_matches_upstream_skrl(env):
    """Per-agent models: the loss-delegating update is upstream's, step for step."""
    spaces = probe_multiagent_spaces(*env)
    vector_env = make_multiagent_vector_env(*env, num_envs=2, seed=0)
    try:
        upstream, ours = _paired_agents(vector_env, spaces, share_parameters=False)
        _drive_both(vector_env, upstream, ours, updates=2)
        for uid in spaces.agents:
            for term, tag in (("loss_policy", "Policy loss"), ("loss_value", "Value loss"), ("loss_entropy", "Entropy loss")):
                got, expected = ours.tracking_data[f"Loss / {term} ({uid})"], upstream.tracking_data[f"Loss / {tag} ({uid})"]
                assert len(got) == len(expected) == 2
                assert np.allclose(got, expected, rtol=1e-5, atol=1e-7), (uid, term, got, expected)
            for key, a in upstream.checkpoint_modules[uid]["value_preprocessor"].state_dict().items():
                assert torch.allclose(a, ours.checkpoint_modules[uid]["value_preprocessor"].state_dict()[key]), key
            for role in ("policy", "value"):
                pairs = zip(upstream.models[uid][role].named_parameters(), ours.models[uid][role].named_parameters())
                for (name, a), (_, b) in pairs:
                    assert torch.allclose(a, b, atol=1e-6), f"{uid}.{role}.{name} differs"
        assert all(opt.state for opt in ours.optimizers.values())  # the updates really stepped
    finally:
        vector_env.close()


def test_shared_models_get_one_joint_update_per_minibatch():
    """Shared models: one optimiser step per minibatch on every agent's samples (not one per agent)."""
    spaces = probe_multiagent_spaces(*SPREAD)
    vector_env = make_multiagent_vector_env(*SPREAD, num_envs=2, seed=0)
    try:
        upstream, ours = _paired_agents(vector_env, spaces, share_parameters=True)
        assert ours.shared and not getattr(upstream, "shared", False)
        calls = []
        loss = ours.loss
        ours.loss = lambda agent, batch, uid, epoch: calls.append(len(batch["observations"])) or loss(agent, batch, uid, epoch)
        _drive_both(vector_env, upstream, ours, updates=1)
        # 3 epochs x 2 minibatches; each minibatch holds 8 steps x 2 envs / 2 from each of the 3 agents
        assert calls == [3 * 8] * 6
        first, *others = spaces.agents
        assert ours.optimizers[first].state and not any(ours.optimizers[uid].state for uid in others)
        assert all(upstream.optimizers[uid].state for uid in spaces.agents)  # upstream steps once per agent
        # the update moved the shared models away from upstream's sequential per-agent updates
        a, b = upstream.models[first]["policy"], ours.models[first]["policy"]
        assert not all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
        tracked = [ours.tracking_data[f"Loss / loss_policy ({uid})"] for uid in spaces.agents]
        assert all(t == tracked[0] and len(t) == 1 for t in tracked)
    finally:
        vector_env.close()


# ---- training, variants, checkpoints --------------------------------------------------------------


def test_trains_a_few_hundred_steps_on_mpe(builds):
    build = builds(steps=400, epochs=4)
    trainer = build.trainer
    history = []
    trainer.train(400, callbacks=[lambda t, m: history.append(m)])
    assert trainer.env_steps == 400 and trainer.iterations == 4
    for metrics in history:
        assert all(math.isfinite(metrics[f"loss/{term}"]) for term in (*TERMS, "approx_kl"))
    assert any("train/episode_return" in m for m in history)
    returns = trainer.evaluate(2)
    assert len(returns) == 2 and all(-200 < r < 0 for r in returns)


def _value_mse(value, memory):
    inputs = {"observations": memory.get_tensor_by_name("observations"), "states": memory.get_tensor_by_name("states")}
    with torch.no_grad():
        predicted, _ = value.act({k: v.reshape(-1, v.shape[-1]) for k, v in inputs.items()}, role="value")
    return torch.nn.functional.mse_loss(predicted, memory.get_tensor_by_name("returns").reshape(-1, 1)).item()


@pytest.mark.parametrize("share", [True, False])
def test_update_lowers_the_value_loss_on_its_rollout(builds, share):
    build = builds(steps=100, epochs=8, learning_rate=1e-3, share_parameters=share)
    before = {uid: copy.deepcopy(build.models[uid]["value"]) for uid in build.extras["multiagent"].agents}
    build.trainer.step()
    for uid, value in before.items():
        memory = build.memory[uid]
        assert _value_mse(build.models[uid]["value"], memory) < 0.9 * _value_mse(value, memory)


def test_vmas_navigation_trains_and_evaluates(builds):
    build = builds(env=NAVIGATION, num_envs=4, rollout_steps=25, steps=100)
    build.trainer.train(100)
    assert build.trainer.env_steps == 100
    actions = build.trainer.act_deterministic(np.zeros((5, 3, 18), dtype=np.float32))
    assert actions.shape == (5, 3, 2) and np.all(np.abs(actions) <= 1.0)
    returns = build.trainer.evaluate(3)
    assert len(returns) == 3 and all(math.isfinite(r) for r in returns)


def test_ippo_critic_reads_only_the_agents_observation(builds):
    mappo, ippo = builds(centralised_critic=True), builds(centralised_critic=False)
    spaces = mappo.extras["multiagent"]
    obs_size, state_size = spaces.observation_space.shape[0], spaces.state_space.shape[0]
    assert mappo.models["agent_0"]["value"].net[0].in_features == obs_size + state_size
    assert ippo.models["agent_0"]["value"].net[0].in_features == obs_size


@pytest.mark.parametrize("share", [True, False])
def test_parameter_sharing(builds, share):
    build = builds(share_parameters=share)
    policies = [build.models[uid]["policy"] for uid in build.extras["multiagent"].agents]
    assert all((p is policies[0]) == share for p in policies[1:])


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
    for uid in build.extras["multiagent"].agents:
        a, b = build.trainer.agent.optimizers[uid].state_dict(), fresh.trainer.agent.optimizers[uid].state_dict()
        assert all(torch.equal(a["state"][k]["exp_avg"], b["state"][k]["exp_avg"]) for k in a["state"])


@pytest.mark.parametrize("recipe", ["mappo-simple-spread", "mappo-navigation"])
def test_conforms_to_the_contract(recipe):
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence (MPE worlds and VMAS scenarios are
    saved mid-episode: 40-step rollouts end inside 25-step episodes; a VMAS episode ends before the resume, so the
    scenario's respawn draws from VMAS's own RNG states, which the checkpoint keeps)."""
    from rlplug.testing import check_cell

    episodes = ["env_kwargs.max_steps=25"] if recipe == "mappo-navigation" else []
    check_cell(recipe, "skrl", ["num_envs=2", "rollout_steps=40", "hidden_sizes=[16, 16]", "epochs=1", *episodes], steps=80)
