"""Offline cells added from issue 49 on (bc, iql on Discrete actions, dt, odt; gail, online from demonstrations), one parametrised module over (algorithm, action space, backend):
each cell conforms to the contract (declarations, construction, a short train, deterministic evaluation, the
checkpoint round-trip and resume), its registered loss is the algorithm's formula written out here on a fixed
batch, and its deterministic action is what that loss fits. A few seconds per case on random datasets."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

pytest.importorskip("torchrl")
pytest.importorskip("skrl")

SMALL = {"hidden_sizes": [16, 16], "batch_size": 32, "log_every": 20, "eval_every": 0}
# (recipe to conform, its env): each algorithm on each kind of action space it declares
CELLS = {
    ("bc", "continuous"): ("bc-pendulum-medium", "Pendulum-v1"),
    ("bc", "discrete"): ("bc-cartpole-medium", "CartPole-v1"),
    ("iql", "discrete"): ("iql-cartpole-medium", "CartPole-v1"),
    ("dt", "continuous"): ("dt-pendulum-medium", "Pendulum-v1"),
    ("odt", "continuous"): ("odt-pendulum-medium", "Pendulum-v1"),
}
# the small settings of an algorithm whose parameters are not SMALL's
SMALL_OF = {"dt": {"embedding_dim": 16, "n_layers": 1, "context_length": 5, "batch_size": 8, "log_every": 20, "eval_every": 0,
                   "warmup_steps": 10}}
# odt: an episode played online at updates 20 and 40, so the resume check crosses the online phase
SMALL_OF["odt"] = {**SMALL_OF["dt"], "online_after": 20, "online_round_updates": 20, "online_buffer_episodes": 12}
CASES = [(algorithm, space, backend) for (algorithm, space) in CELLS for backend in ("skrl", "torchrl")]
IDS = [f"{a}-{s}-{b}" for a, s, b in CASES]


@pytest.mark.parametrize(("algorithm", "space", "backend"), CASES, ids=IDS)
def test_conforms_to_the_contract(random_dataset, algorithm, space, backend):
    from rlplug.testing import check_cell

    recipe, env_id = CELLS[algorithm, space]
    small = SMALL_OF.get(algorithm, SMALL)
    overrides = [f"dataset={random_dataset(env_id)}", *(f"{k}={v}".replace(" ", "") for k, v in small.items())]
    passed = check_cell(recipe, backend, overrides, steps=60)
    assert "checkpoint round-trip" in passed and "resume" in " ".join(passed)


def _bc_expected(build, observations, actions):
    """BC's loss written out: the mean squared error of the bounded policy's action (Box), the cross-entropy of
    the logits (Discrete), from the cell's own network."""
    if build.backend == "skrl":
        output, _ = build.models["policy"].compute({"observations": observations}, role="policy")
    else:
        from tensordict import TensorDict

        output = build.models["actor"](TensorDict({"observation": observations}, batch_size=[len(observations)]))["action"]
    if actions.dtype == torch.int64:
        return -torch.log_softmax(output, -1).gather(-1, actions.reshape(-1, 1)).mean()
    return ((output - actions) ** 2).mean()


@pytest.mark.parametrize(("algorithm", "space", "backend"), [c for c in CASES if c[0] == "bc"],
                         ids=[i for i, c in zip(IDS, CASES) if c[0] == "bc"])  # fmt: skip
def test_bc_loss_is_the_formula_and_training_fits_the_dataset(builds, random_dataset, algorithm, space, backend):
    env_id = CELLS[algorithm, space][1]
    build = builds("rlplug_bc", backend, env_id, num_envs=1, steps=1000, dataset=random_dataset(env_id),
                   **{**SMALL, "batch_size": 64, "log_every": 100})  # fmt: skip
    trainer = build.trainer
    if backend == "skrl":
        batch = trainer.agent.sample_batch()
        observations, actions = batch["observations"], batch["actions"]
        value = build.loss(trainer.agent, batch, "policy")["loss_bc"]
    else:
        sample = build.memory.sample()
        observations, actions = sample["observation"], sample["action"]
        value = build.loss(sample.clone())["loss_bc"]
    expected = _bc_expected(build, observations, actions)
    assert torch.allclose(value, expected, rtol=1e-5, atol=1e-6), (value, expected)
    assert build.target_updater is None  # no critic, no target networks

    rows = []
    trainer.train(300, [lambda trainer, metrics: rows.append(metrics)])
    assert trainer.updates == 300 and len(rows) == 3
    assert rows[-1]["loss/loss_bc"] < rows[0]["loss/loss_bc"]  # fitting a random dataset's actions still lowers the loss
    test_obs = observations[:5].cpu().numpy()
    acted = trainer.act_deterministic(test_obs)
    exported = trainer.export_policy()(torch.as_tensor(test_obs)).detach().numpy()
    np.testing.assert_allclose(np.asarray(acted, dtype=np.float64).reshape(5, -1), np.asarray(exported, np.float64).reshape(5, -1),
                               rtol=1e-6)  # fmt: skip
    if space == "discrete":
        assert set(np.asarray(acted).reshape(-1).tolist()) <= {0, 1}
    else:
        assert np.all(np.abs(acted) <= 2.0)


def test_bc_is_listed_on_both_backends_for_both_kinds_of_action():
    from rlplug.pipeline.discovery import PluginHost

    spec = PluginHost().algorithms["bc"]
    assert spec.kind == "offline" and set(spec.backends) == {"skrl", "torchrl"}
    for backend in spec.backends.values():
        assert set(backend.action_spaces) == {"continuous", "discrete"}
    assert importlib.import_module("rlplug_bc").BC.default_loss == "bc"


def _iql_discrete_expected(q, target_q, value, logits, batch, gamma=0.99, expectile=0.7, temperature=3.0):
    """Discrete IQL's three terms written out (DiscreteIQLLoss with l2): ``q``/``target_q`` give the two
    networks' Q(s, .) ``[2, B, n]``, ``value`` V ``[B]``, ``logits`` the policy's ``[B, n]``."""
    obs, action, reward, nxt, terminated = batch
    index = action.reshape(1, -1, 1).expand(2, -1, 1)
    min_target = target_q(obs).gather(-1, index).squeeze(-1).min(0)[0]
    v = value(obs)
    diff = min_target - v
    loss_value = (torch.where(diff > 0, expectile, 1 - expectile) * diff ** 2).mean()
    target = reward.reshape(-1) + gamma * (~terminated.reshape(-1)) * value(nxt).detach()
    loss_q = ((q(obs).gather(-1, index).squeeze(-1) - target) ** 2).sum(0).mean()
    log_prob = torch.log_softmax(logits(obs), -1).gather(-1, action.reshape(-1, 1)).squeeze(-1)
    weight = torch.exp(temperature * (min_target - v.detach())).clamp_max(100)
    return {"value": loss_value, "critic": loss_q, "policy": -(weight * log_prob).mean()}


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_discrete_iql_terms_are_the_formula(builds, random_dataset, backend):
    """Discrete IQL's value, critic and policy terms (DiscreteIQLLoss's maths) on a fixed batch, from the cell's networks."""
    build = builds("rlplug_iql", backend, "CartPole-v1", num_envs=1, steps=1000, dataset=random_dataset("CartPole-v1"),
                   **{**SMALL, "batch_size": 64})  # fmt: skip
    if backend == "skrl":
        agent, m = build.trainer.agent, build.models
        batch = agent.sample_batch()
        raw = (batch["observations"], batch["actions"].reshape(-1), batch["rewards"], batch["next_observations"], batch["terminated"])
        q_of = lambda roles: lambda o: torch.stack([m[r].compute({"observations": o}, role=r)[0] for r in roles])  # noqa: E731
        expected = _iql_discrete_expected(q_of(("critic_1", "critic_2")), q_of(("target_critic_1", "target_critic_2")),
                                          lambda o: m["value"].compute({"observations": o}, role="value")[0].reshape(-1),
                                          lambda o: m["policy"].compute({"observations": o}, role="policy")[0], raw)  # fmt: skip
        got = {stage: build.loss(agent, batch, stage) for stage in ("value", "critic", "policy")}  # value first: it stashes target Q
        got = {"value": got["value"]["loss_value"], "critic": got["critic"]["loss_critic"], "policy": got["policy"]["loss_policy"]}
    else:
        from tensordict import TensorDict
        from torchrl.objectives import DiscreteIQLLoss

        loss = build.loss
        assert type(loss) is DiscreteIQLLoss
        sample = build.memory.sample()
        raw = (sample["observation"], sample["action"], sample["next", "reward"], sample["next", "observation"],
               sample["next", "terminated"])  # fmt: skip

        def q_of(params):
            def call(o):
                out = []
                for i in range(2):
                    with params[i].to_module(loss.qvalue_network):
                        out.append(loss.qvalue_network(TensorDict({"observation": o}, [len(o)]))["state_action_value"])
                return torch.stack(out)
            return call

        def value(o):
            with loss.value_network_params.to_module(loss.value_network):
                return loss.value_network(TensorDict({"observation": o}, [len(o)]))["state_value"].reshape(-1)

        def logits(o):
            with loss.actor_network_params.to_module(loss.actor_network):
                return loss.actor_network.module[0](TensorDict({"observation": o}, [len(o)]))["logits"]

        expected = _iql_discrete_expected(q_of(loss.qvalue_network_params), q_of(loss.target_qvalue_network_params), value, logits, raw)
        out = loss(sample.clone())
        got = {"value": out["loss_value"], "critic": out["loss_qvalue"], "policy": out["loss_actor"]}
    for term in expected:
        assert torch.allclose(got[term], expected[term], rtol=1e-4, atol=1e-5), (term, got[term], expected[term])


# ---- GAIL: PPO on a discriminator's reward, from demonstrations -----------------------------------------------------

GAIL_SMALL = {"hidden_sizes": [16, 16], "discriminator_hidden_sizes": [16, 16], "rollout_steps": 32, "epochs": 2,
              "minibatches": 2, "discriminator_batch_size": 32, "discriminator_steps": 2}  # fmt: skip
GAIL_CASES = [(env, backend) for env in ("Pendulum-v1", "CartPole-v1") for backend in ("skrl", "torchrl")]


def _gail_overrides(dataset, env_id, **more):
    settings = {**GAIL_SMALL, **more}
    return [f"env={env_id}", f"dataset={dataset}", "num_envs=2", *(f"{k}={v}".replace(" ", "") for k, v in settings.items())]


@pytest.mark.parametrize(("env_id", "backend"), GAIL_CASES, ids=[f"{e.split('-')[0].lower()}-{b}" for e, b in GAIL_CASES])
def test_gail_conforms_to_the_contract(random_dataset, env_id, backend):
    """Continuous and discrete actions; resume mid-rollout-sequence covers the discriminator, its Adam and its draws."""
    from rlplug.testing import check_cell

    extra = {"use_grad_penalty": "true"} if env_id == "Pendulum-v1" else {}
    passed = check_cell("gail-pendulum", backend, _gail_overrides(random_dataset(env_id), env_id, **extra), steps=192)
    assert passed[-1] == "resume equivalence" and len(passed) == 6


@pytest.mark.parametrize("gp_lambda", [0.0, 10.0])
def test_skrl_discriminator_loss_is_torchrls_gail_loss(gp_lambda):
    """skrl's discriminator terms (written out) and TorchRL's GAILLoss give the same loss and gradients on one batch."""
    import gymnasium as gym
    from rlplug.backends.skrl import Discriminator, discriminator_terms
    from rlplug.backends.torchrl import GAILLossTerms

    torch.manual_seed(0)
    obs_space, act_space = gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-2, 2, (1,))
    discriminator = Discriminator(obs_space, act_space, [16, 16], "tanh", torch.randn(100, 3))
    batch = [torch.randn(32, 3), discriminator.action_features(4 * torch.rand(32, 1) - 2),
             torch.randn(32, 3), discriminator.action_features(6 * torch.rand(32, 1) - 3)]  # the policy's clipped to +-2
    results = []
    for loss in (lambda *b: discriminator_terms(*b, gp_lambda=gp_lambda), GAILLossTerms(discriminator, bool(gp_lambda), gp_lambda)):
        torch.manual_seed(1)  # the penalty's mixing weights
        discriminator.zero_grad()
        terms = loss(discriminator, *batch)
        terms["loss"].backward()
        results.append((terms, [p.grad.clone() for p in discriminator.parameters()]))
    (ours, our_grads), (upstream, upstream_grads) = results
    assert set(ours) == set(upstream) == ({"loss", "gp_loss"} if gp_lambda else {"loss"})
    for name in ours:
        assert torch.allclose(ours[name], upstream[name], rtol=1e-5, atol=1e-6), (name, ours[name], upstream[name])
    for a, b in zip(our_grads, upstream_grads):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6)


def _constant_action_dataset(directory, action=2.0, steps=1_000):
    """Pendulum demonstrations of one action, full torque: a behaviour the discriminator can tell apart at once."""
    import gymnasium as gym
    from rlplug.data.collect import rollout
    from rlplug.data.datasets import write

    env = gym.make("Pendulum-v1")
    arrays = rollout("Pendulum-v1", {}, lambda obs: np.full((1, 1), action, np.float32), steps, 0.0, 0, progress=False)
    info = write(str(directory), arrays, env_id="Pendulum-v1", env_kwargs={}, observation_space=env.observation_space,
                 action_space=env.action_space, source={"kind": "policy", "seed": 0},
                 reference={"random_return": -1200.0, "expert_return": -150.0})  # fmt: skip
    env.close()
    return str(info.path)


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_gail_learns_the_demonstrated_action_from_the_discriminator_alone(builds, tmp_path, monkeypatch, backend):
    """The learner's rewards are the discriminator's (never the env's), and a few rollouts of them move the policy's mean
    action towards the demonstrated full torque, as the discriminator learns to tell the two apart."""
    from rlplug.backends.torchrl import TorchRLRolloutTrainer

    dataset = _constant_action_dataset(tmp_path / "torque")
    build = builds("rlplug_gail", backend, "Pendulum-v1", num_envs=2, steps=8192, dataset=dataset, rollout_steps=256, epochs=4,
                   minibatches=4, learning_rate=3e-3, discriminator_steps=10, discriminator_batch_size=128, bootstrap_truncated=False,
                   **{k: v for k, v in GAIL_SMALL.items() if k in ("hidden_sizes", "discriminator_hidden_sizes")})  # fmt: skip
    trainer = build.trainer
    seen = []  # (rewards the advantages were computed from, the discriminator's rewards for the same pairs)
    if backend == "skrl":
        agent = trainer.agent
        original = type(agent).update

        def update(self, **kwargs):
            original(self, **kwargs)
            memory = self.memory
            obs, act = memory.get_tensor_by_name("observations"), memory.get_tensor_by_name("actions")
            seen.append((memory.get_tensor_by_name("rewards").clone(), trainer.imitation.rewards(obs, act)))

        monkeypatch.setattr(type(agent), "update", update)
    else:
        original = TorchRLRolloutTrainer.compute_advantages

        def compute_advantages(self, batch):
            seen.append((batch["next", "reward"].clone(), self.imitation.rewards(batch["observation"], batch["action"])))
            original(self, batch)

        monkeypatch.setattr(TorchRLRolloutTrainer, "compute_advantages", compute_advantages)
    observations = np.random.default_rng(0).uniform(-1, 1, (64, 3)).astype(np.float32)
    before = np.asarray(trainer.act_deterministic(observations)).mean()
    rows = []
    trainer.train(8192, [lambda t, metrics: rows.append(metrics)])
    after = np.asarray(trainer.act_deterministic(observations)).mean()
    assert len(seen) == 16
    for rewards, relabelled in seen:  # skrl's reward after the update: the discriminator's has not moved since
        assert torch.allclose(rewards.reshape(-1), relabelled.reshape(-1), atol=1e-6)
        assert bool((rewards > 0).all())  # -log(1 - D) > 0; Pendulum's own rewards are all <= 0
    assert rows[-1]["train/expert_probability"] > rows[-1]["train/policy_probability"] + 0.1
    assert after > before + 0.5, (before, after)


def test_gail_without_a_dataset_is_refused_in_one_line():
    from conftest import assert_one_line_error, run_cli

    result = run_cli("train", "gail-pendulum", "--set", "dataset=", "--steps", "64", "--no-write")
    assert_one_line_error(result, "recipe 'gail-pendulum': gail learns from demonstrations and needs a 'dataset'")


# ---- Decision Transformer: return-conditioned sequences of the dataset's episodes --------------------------------------


def test_segments_carry_returns_to_go_and_timesteps_inside_one_episode():
    from rlplug.backends.skrl import TrajectorySegments
    from rlplug.data.datasets import DatasetError

    # two episodes: rows 0-3 (terminated) and 4-8 (truncated); rewards 1..9
    ends = torch.zeros(9, dtype=torch.bool)
    data = {"observation": torch.arange(9.0).reshape(9, 1), "action": torch.zeros(9, 1), "reward": torch.arange(1.0, 10.0),
            "terminated": ends.clone().index_fill_(0, torch.tensor([3]), True),
            "truncated": ends.clone().index_fill_(0, torch.tensor([8]), True)}  # fmt: skip
    segments = TrajectorySegments(data, context=3, return_scale=10.0, seed=0)
    assert segments.best_return == 5 + 6 + 7 + 8 + 9
    assert segments.starts.tolist() == [0, 1, 4, 5, 6]  # every 3-step window inside an episode
    batch = segments.sample(64)
    first = batch["observation"][:, 0, 0].long()
    assert set(first.tolist()) == {0, 1, 4, 5, 6}
    for row in range(64):
        rows = batch["observation"][row, :, 0].long()
        assert torch.equal(rows, rows[0] + torch.arange(3))
        episode_start = 0 if rows[0] < 4 else 4
        assert torch.equal(batch["timestep"][row], rows - episode_start)
        last = 3 if rows[0] < 4 else 8
        expected = torch.tensor([sum(range(r + 1, last + 2)) for r in rows.tolist()], dtype=torch.float32) / 10.0
        assert torch.allclose(batch["return_to_go"][row, :, 0], expected)
    with pytest.raises(DatasetError, match="context_length 6 is longer than every episode of the dataset"):
        TrajectorySegments(data, context=6, return_scale=10.0, seed=0)


def test_acting_counts_the_target_return_down_by_the_rewards_received():
    from rlplug.backends.skrl import ContextActing, DecisionTransformer

    torch.manual_seed(0)
    model = DecisionTransformer(3, [-2.0], [2.0], embedding_dim=8, layers=1, heads=1, dropout=0.5, max_timestep=10)
    acting = ContextActing(model, context=2, target=-100.0, return_scale=10.0)
    observations = torch.randn(4, 2, 3)

    def episode_start():
        actions = []
        for t in range(2):
            actions.append(acting.act(observations[t]))
            acting.observe(np.full(2, -5.0))  # each step earns -5: the return still to come rises by 0.5 scaled
        return actions

    first = episode_start()
    assert acting.history["return_to_go"][:, :, 0].tolist() == [[-10.0, -9.5]] * 2
    acting.act(observations[2])  # the oldest step leaves the context
    assert acting.history["timestep"].tolist() == [[1, 2]] * 2 and acting.history["return_to_go"].shape[1] == 2
    acting.reset()
    again = episode_start()
    for a, b in zip(first, again):  # deterministic: dropout is off while acting
        assert torch.equal(a, b) and bool((a.abs() <= 2.0).all())
    assert model.training  # and back on afterwards


def test_dt_loss_on_skrl_is_torchrls_dt_loss_on_the_same_weights_and_segments(builds, random_dataset):
    dataset = random_dataset("Pendulum-v1")
    small = {**SMALL_OF["dt"], "dropout": 0.0}
    skrl_build = builds("rlplug_dt", "skrl", "Pendulum-v1", num_envs=1, steps=100, dataset=dataset, **small)
    torchrl_build = builds("rlplug_dt", "torchrl", "Pendulum-v1", num_envs=1, steps=100, dataset=dataset, **small)
    transformer = torchrl_build.models["actor"].module
    transformer.load_state_dict(skrl_build.models["policy"].transformer.state_dict())
    batch = skrl_build.trainer.agent.sample_batch()
    ours = skrl_build.loss(skrl_build.trainer.agent, batch, "policy")["loss"]
    from tensordict import TensorDict

    segment = {"observation": batch["observations"], "action": batch["actions"], "return_to_go": batch["returns_to_go"],
               "timestep": batch["timesteps"]}  # fmt: skip
    upstream = torchrl_build.loss(TensorDict(segment, batch_size=batch["timesteps"].shape))["loss"]
    assert torch.allclose(ours, upstream, rtol=1e-5), (ours, upstream)


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_dt_learns_the_demonstrated_action_and_refuses_export(builds, tmp_path, backend):
    from rlplug.errors import ExportUnsupportedError

    dataset = _constant_action_dataset(tmp_path / "torque", action=1.5)
    build = builds("rlplug_dt", backend, "Pendulum-v1", num_envs=1, steps=300, dataset=dataset,
                   **{**SMALL_OF["dt"], "batch_size": 32, "learning_rate": 3e-3})  # fmt: skip
    trainer = build.trainer
    trainer.train(300)
    trainer.reset_acting_state()
    observations = np.random.default_rng(0).uniform(-1, 1, (8, 3)).astype(np.float32)
    actions = np.concatenate([trainer.act_deterministic(observations) for _ in range(6)])
    assert np.abs(actions - 1.5).max() < 0.2, actions.reshape(-1)
    seen = []
    observe = trainer.observe_rewards
    trainer.observe_rewards = lambda rewards: seen.append(float(rewards[0])) or observe(rewards)
    returns = trainer.evaluate(1)
    assert len(seen) == 200 and returns == [pytest.approx(sum(seen), rel=1e-5)]  # every reward of the episode, in turn
    with pytest.raises(ExportUnsupportedError, match="dt acts on its episode's history"):
        trainer.export_policy()


# ---- Online Decision Transformer: a stochastic DT fine-tuned on the episodes it plays ----------------------------------


def _episodes_data(lengths, rewards):
    """Episodes of the given lengths, each step's reward its episode's entry of ``rewards`` (observation = row)."""
    count = sum(lengths)
    ends = torch.zeros(count, dtype=torch.bool)
    ends[torch.tensor(np.cumsum(lengths) - 1)] = True
    reward = torch.cat([torch.full((n,), float(r)) for n, r in zip(lengths, rewards)])
    return {"observation": torch.arange(float(count)).reshape(count, 1), "action": torch.zeros(count, 1), "reward": reward,
            "terminated": torch.zeros(count, dtype=torch.bool), "truncated": ends}  # fmt: skip


def test_online_segments_keep_the_best_episodes_then_replace_the_oldest_and_resume_the_same():
    from rlplug.backends.skrl import OnlineSegments

    # four episodes of 3 steps with returns 3, 30, 6, 15: capacity 3 keeps 6, 15, 30 in ascending return
    segments = OnlineSegments(_episodes_data([3, 3, 3, 3], [1, 10, 2, 5]), context=2, return_scale=1.0, seed=0, capacity=3)
    held = lambda s: [float(e["reward"].sum()) for e in s.episodes]  # noqa: E731
    assert held(segments) == [6.0, 15.0, 30.0]
    played = [(torch.full((4, 1), 100.0 + k), torch.zeros(4, 1), np.full(4, -1.0 - k)) for k in range(4)]
    segments.add(*played[0])
    assert held(segments) == [-4.0, 15.0, 30.0]  # the worst dataset episode leaves first
    assert segments.columns["return_to_go"][:4, 0].tolist() == [-4.0, -3.0, -2.0, -1.0]  # relabelled with what it earned
    segments.add(*played[1])
    state = segments.state_dict()
    for episode in played[2:]:
        segments.add(*episode)
    assert held(segments) == [-16.0, -8.0, -12.0] and segments.played == 4 and segments.played_steps == 16  # slots 0, 1, 2, 0
    again = OnlineSegments(_episodes_data([3, 3, 3, 3], [1, 10, 2, 5]), context=2, return_scale=1.0, seed=0, capacity=3)
    again.load_state_dict(state)
    for episode in played[2:]:
        again.add(*episode)
    assert held(again) == held(segments)
    for key in segments.columns:
        assert torch.equal(again.columns[key], segments.columns[key])
    assert torch.equal(again.sample(16)["observation"], segments.sample(16)["observation"])


def test_odt_loss_on_skrl_is_torchrls_online_dt_loss_on_the_same_weights_and_segments(builds, random_dataset):
    dataset = random_dataset("Pendulum-v1")
    small = {**SMALL_OF["odt"], "dropout": 0.0}
    skrl_build = builds("rlplug_dt", "skrl", "Pendulum-v1", num_envs=1, steps=100, dataset=dataset, algorithm="odt", **small)
    torchrl_build = builds("rlplug_dt", "torchrl", "Pendulum-v1", num_envs=1, steps=100, dataset=dataset, algorithm="odt", **small)
    transformer = torchrl_build.trainer.transformer(torchrl_build)
    transformer.load_state_dict(skrl_build.models["policy"].transformer.state_dict())
    batch = skrl_build.trainer.agent.sample_batch()
    torch.manual_seed(3)  # the entropy's one sample per step: the same draws on both
    ours = skrl_build.loss(skrl_build.trainer.agent, batch, "policy")
    from tensordict import TensorDict

    segment = {"observation": batch["observations"], "action": batch["actions"], "return_to_go": batch["returns_to_go"],
               "timestep": batch["timesteps"]}  # fmt: skip
    torch.manual_seed(3)
    upstream = torchrl_build.loss(TensorDict(segment, batch_size=batch["timesteps"].shape))
    for term in ("loss_log_likelihood", "loss_entropy", "loss_alpha", "alpha", "entropy"):
        assert torch.allclose(ours[term], upstream[term], rtol=1e-4, atol=1e-6), (term, ours[term], upstream[term])


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_odt_plays_episodes_online_and_learns_the_demonstrated_action(builds, tmp_path, backend):
    dataset = _constant_action_dataset(tmp_path / "torque", action=1.5)
    build = builds("rlplug_dt", backend, "Pendulum-v1", num_envs=1, steps=300, dataset=dataset, algorithm="odt",
                   **{**SMALL_OF["odt"], "batch_size": 32, "learning_rate": 3e-3, "online_after": 200, "online_round_updates": 50,
                      "log_every": 100})  # fmt: skip
    trainer, rows = build.trainer, []
    trainer.train(300, [lambda trainer, metrics: rows.append(metrics)])
    segments = build.memory
    assert segments.played == 2 and segments.played_steps == 400  # at updates 200 and 250: two 200-step episodes
    assert [row["online/episodes"] for row in rows] == [0.0, 0.0, 2.0] and "online/episode_return" in rows[-1]
    played = segments.added[-1]
    assert len(played["reward"]) == 200 and np.all(np.abs(played["action"].numpy()) < 2.0)
    assert float(np.sum(played["reward"])) == pytest.approx(rows[-1]["online/episode_return"] * 2 - float(np.sum(segments.added[0]["reward"])))
    trainer.reset_acting_state()
    observations = np.random.default_rng(0).uniform(-1, 1, (8, 3)).astype(np.float32)
    actions = np.concatenate([trainer.act_deterministic(observations) for _ in range(6)])
    assert np.abs(actions - 1.5).max() < 0.25, actions.reshape(-1)  # the squashed mean of the demonstrated torque
