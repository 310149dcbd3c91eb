"""iql/skrl: the staged loss is TorchRL's IQLLoss math, the agent trains offline, moves its targets as
the updater says, and its state round-trips and continues identically."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

pytest.importorskip("skrl")

from conftest import weights_only_round_trip  # noqa: E402
from rlplug_iql import IQL  # noqa: E402
from rlplug_iql.settings import skrl_settings  # noqa: E402

SMALL = {"hidden_sizes": [32, 32], "batch_size": 64, "log_every": 100, "eval_every": 0}


@pytest.fixture
def iql_build(builds, random_dataset):
    def make(seed=0, **kw):
        return builds("rlplug_iql", "skrl", "Pendulum-v1", num_envs=1, steps=10_000, seed=seed,
                      dataset=random_dataset("Pendulum-v1"), **{**SMALL, **kw})  # fmt: skip

    return make


_round_trip = weights_only_round_trip


# ---- the same math as TorchRL's IQLLoss ---------------------------------------------------------


def _torchrl_iql_on_skrl_models(agent, expectile, temperature, gamma):
    """TorchRL's ``IQLLoss`` over copies of the skrl agent's networks: the same Q and V MLPs, and an actor
    whose distribution is the skrl policy's Gaussian (bounded mean, state-independent std)."""
    from rlplug.backends.torchrl import q_value_operator, value_operator
    from tensordict.nn import TensorDictModule
    from torch import nn
    from torchrl.modules import IndependentNormal, ProbabilisticActor
    from torchrl.objectives import IQLLoss, SoftUpdate

    class SkrlGaussian(nn.Module):
        def __init__(self, policy):
            super().__init__()
            self.policy = policy

        def forward(self, observation):
            mean, outputs = self.policy.compute({"observations": observation}, role="policy")
            return mean, outputs["log_std"].exp().expand_as(mean)

    actor = ProbabilisticActor(
        TensorDictModule(SkrlGaussian(copy.deepcopy(agent.policy)), in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"], out_keys=["action"], distribution_class=IndependentNormal, return_log_prob=True,
    )  # fmt: skip
    critics = [q_value_operator(copy.deepcopy(critic.net)) for critic in (agent.critic_1, agent.critic_2)]
    loss = IQLLoss(actor, critics, value_operator(copy.deepcopy(agent.value.net)), loss_function="l2",
                   expectile=expectile, temperature=temperature)  # fmt: skip
    loss.make_value_estimator("td0", gamma=gamma)
    SoftUpdate(loss, tau=0.005)  # never stepped here; associating one silences TorchRL's per-call warning
    return loss


def test_staged_loss_equals_torchrl_iqlloss_on_the_same_networks_and_batch(iql_build):
    """Before any step (targets equal the critics): value, critic and policy stages give TorchRL's
    loss_value, loss_qvalue and loss_actor (and its entropy) on the same batch."""
    from tensordict import TensorDict

    build = iql_build(expectile=0.8, temperature=2.0, gamma=0.95)
    agent = build.trainer.agent
    torchrl_loss = _torchrl_iql_on_skrl_models(agent, 0.8, 2.0, 0.95)
    batch = agent.sample_batch()
    # a few terminal transitions, so the (1 - terminated) mask is exercised
    batch["terminated"] = torch.zeros_like(batch["terminated"])
    batch["terminated"][:8] = True
    size = len(batch["rewards"])
    td = TensorDict(
        {
            "observation": batch["observations"],
            "action": batch["actions"],
            "next": {"observation": batch["next_observations"], "reward": batch["rewards"],
                     "terminated": batch["terminated"], "done": batch["terminated"]},
        },
        batch_size=[size],
    )  # fmt: skip
    ours = {}
    for stage in ("value", "critic", "policy"):
        ours.update(build.loss(agent, batch, stage))
    theirs = torchrl_loss(td)
    for our_name, their_name in (("loss_value", "loss_value"), ("loss_critic", "loss_qvalue"), ("loss_policy", "loss_actor"), ("entropy", "entropy")):
        assert torch.allclose(ours[our_name], theirs[their_name], rtol=1e-5, atol=1e-6), (our_name, ours[our_name], theirs[their_name])


# ---- training -----------------------------------------------------------------------------------


def test_trains_with_finite_losses_and_a_falling_critic_loss(iql_build):
    build = iql_build()
    before = {role: [p.detach().clone() for p in model.parameters()] for role, model in build.models.items()}
    rows = []
    build.trainer.train(400, [lambda trainer, metrics: rows.append(metrics)])
    assert build.trainer.updates == 400 and len(rows) == 4
    for row in rows:
        for term in ("loss_value", "loss_critic", "loss_policy", "entropy"):
            assert np.isfinite(row[f"loss/{term}"]), row
    assert rows[-1]["loss/loss_critic"] < 0.5 * rows[0]["loss/loss_critic"]
    for role in ("policy", "value", "critic_1", "critic_2", "target_critic_1"):
        assert all(not torch.equal(old, new) for old, new in zip(before[role], build.models[role].parameters())), role
    steps = [int(next(iter(opt.state.values()))["step"]) for opt in (build.trainer.agent.value_optimizer, build.trainer.agent.policy_optimizer)]
    assert steps == [400, 400]


def test_evaluates_every_eval_every_updates_with_a_normalised_score(iql_build):
    build = iql_build(eval_every=200, eval_episodes=1)
    rows = []
    build.trainer.train(200, [lambda trainer, metrics: rows.append(metrics)])
    assert "eval/return" not in rows[0] and "eval/normalised_score" in rows[1]
    info = build.trainer.dataset
    assert rows[1]["eval/normalised_score"] == pytest.approx(info.normalised_score(rows[1]["eval/return"]))
    actions = build.trainer.act_deterministic(np.zeros((5, 3), dtype=np.float32))
    assert actions.shape == (5, 1) and np.all(np.abs(actions) <= 2.0)


def test_target_critics_move_as_a_soft_update_with_tau(iql_build):
    build = iql_build(tau=0.1)
    agent = build.trainer.agent
    pairs = [(build.models[f"target_critic_{i}"], build.models[f"critic_{i}"]) for i in (1, 2)]
    targets_before = [[p.detach().clone() for p in target.parameters()] for target, _ in pairs]
    agent.gradient_step()
    for (target, online), before in zip(pairs, targets_before):
        for after, online_after, old in zip(target.parameters(), online.parameters(), before):
            assert torch.allclose(after, 0.9 * old + 0.1 * online_after, atol=1e-6)
            assert not torch.equal(after, old)


def test_hard_target_update_copies_every_period(iql_build):
    build = iql_build(target_update="hard", target_update_period=2)
    agent, target, online = build.trainer.agent, build.models["target_critic_1"], build.models["critic_1"]
    agent.gradient_step()
    assert not torch.equal(target.net[0].weight, online.net[0].weight)
    agent.gradient_step()
    assert torch.equal(target.net[0].weight, online.net[0].weight)


# ---- checkpoints --------------------------------------------------------------------------------


def test_state_dict_round_trips_and_continues_identically(iql_build):
    trained = iql_build()
    trained.trainer.train(200)
    state = _round_trip(trained.trainer.state_dict())
    trained.trainer.train(300)  # continues from the RNG state the checkpoint captured

    fresh = iql_build(seed=7)
    observations = np.random.default_rng(0).uniform(-1, 1, size=(16, 3)).astype(np.float32)
    fresh.trainer.load_state_dict(state)
    assert fresh.trainer.updates == 200 and fresh.trainer.agent.target_updater.steps == 200
    fresh.trainer.train(300)
    assert fresh.trainer.updates == 300
    np.testing.assert_array_equal(fresh.trainer.act_deterministic(observations), trained.trainer.act_deterministic(observations))
    for role in ("policy", "value", "critic_2", "target_critic_1"):
        for a, b in zip(trained.models[role].parameters(), fresh.models[role].parameters()):
            assert torch.equal(a, b), role
    assert fresh.trainer.agent.target_updater.steps == 300


def test_checkpoint_of_other_data_is_refused(iql_build):
    from rlplug.data.datasets import DatasetError

    state = iql_build().trainer.state_dict()
    state["dataset"] = "observation:0000"
    with pytest.raises(DatasetError, match="other data"):
        iql_build().trainer.load_state_dict(state)


# ---- settings -----------------------------------------------------------------------------------


def test_settings_translate_and_validate():
    from types import SimpleNamespace

    recipe = SimpleNamespace(num_envs=1, steps=1000)
    s = skrl_settings(IQL.defaults(), recipe)
    assert (s["expectile"], s["temperature"], s["discount_factor"]) == (0.7, 3.0, 0.99)
    assert s["learning_rate"] == [3e-4, 3e-4, 3e-4] and s["tau"] == 0.005 and s["target_update"] == "soft"
    with pytest.raises(ValueError, match="expectile must be in"):
        skrl_settings({**IQL.defaults(), "expectile": 1.0}, recipe)
    with pytest.raises(ValueError, match="tau must be in"):
        skrl_settings({**IQL.defaults(), "tau": 0.0}, recipe)


def test_conforms_to_the_contract(random_dataset):
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence, on a random Pendulum dataset."""
    from rlplug.testing import check_cell

    overrides = [f"dataset={random_dataset()}", "hidden_sizes=[16, 16]", "batch_size=32", "log_every=50", "eval_every=0"]
    check_cell("iql-pendulum-medium", "skrl", overrides, steps=100)
