"""Offline cells added from issue 49 on (bc, iql on Discrete actions), one parametrised module over (algorithm, action space, backend):
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
}
CASES = [(algorithm, space, backend) for (algorithm, space) in CELLS for backend in ("skrl", "torchrl")]
IDS = [f"{a}-{s}-{b}" for a, s, b in CASES]


@pytest.mark.parametrize(("algorithm", "space", "backend"), CASES, ids=IDS)
def test_conforms_to_the_contract(random_dataset, algorithm, space, backend):
    from rlplug.testing import check_cell

    recipe, env_id = CELLS[algorithm, space]
    overrides = [f"dataset={random_dataset(env_id)}", *(f"{k}={v}".replace(" ", "") for k, v in SMALL.items())]
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
