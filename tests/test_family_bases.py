"""What the off-policy and offline family bases own on both backends: the declared update stages (their
cadence, the terms each optimiser steps as ``LossSpec.optimisers`` maps them), ``compile`` on the stages
they run, the checkpointed extras, and a cell that declares nothing it does not need."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

import rlplug  # noqa: E402
from rlplug.backends.common.stages import (  # noqa: E402
    UpdateSchedule,
    UpdateStage,
    attribute_states,
    load_attribute_states,
    stage_terms,
)

TINY = ["hidden_sizes=[16,16]", "learning_starts=64", "batch_size=32", "log_every=64"]


def test_stages_run_on_their_cadence_and_share_an_optimiser_step_when_they_share_an_optimiser():
    settings = {"policy_delay": 3, "learn_entropy": False}
    stages = (UpdateStage("critic", optimizer="adam"), UpdateStage("actor", every="policy_delay", optimizer="adam"),
              UpdateStage("entropy", only_if="learn_entropy"))  # fmt: skip
    schedule = UpdateSchedule(stages, "policy_delay", settings.__getitem__)
    seen = [schedule.advance() for _ in range(6)]
    names = [[tuple(s.name for s in step) for step in steps] for steps, _ in seen]
    assert names == [[("critic",)], [("critic",)], [("critic", "actor")]] * 2  # one joint step every third
    assert [target for _, target in seen] == [False, False, True] * 2
    separate = UpdateSchedule((UpdateStage("critic"), UpdateStage("actor", every=2)), 1, settings.__getitem__)
    assert [[len(step) for step in separate.advance()[0]] for _ in range(2)] == [[1], [1, 1]]  # two optimiser steps
    with pytest.raises(ValueError, match="at least 1"):
        UpdateSchedule((UpdateStage("critic", every=0),), 1, settings.__getitem__)


def test_the_loss_optimisers_map_decides_which_stage_sums_which_term():
    stages = (UpdateStage("critic"), UpdateStage("policy"))
    assert stage_terms(("loss_critic", "loss_policy"), (), stages, "cell") == {
        "critic": ("loss_critic", "loss_policy"), "policy": ("loss_critic", "loss_policy")}  # fmt: skip
    mapped = stage_terms(("loss_critic", "loss_cql", "loss_policy", "loss_entropy"),
                         {"loss_critic": "critic", "loss_cql": "critic", "loss_policy": "policy",
                          "loss_entropy": "entropy"}.items(), stages, "cell")  # fmt: skip
    assert mapped == {"critic": ("loss_critic", "loss_cql"), "policy": ("loss_policy",)}  # entropy: not this cell's
    with pytest.raises(rlplug.errors.LossRegistrationError, match="give no stage to loss_policy"):
        stage_terms(("loss_critic", "loss_policy"), {"loss_critic": "critic"}.items(), stages, "cell")
    with pytest.raises(rlplug.errors.LossRegistrationError, match="give stage policy no term"):
        stage_terms(("loss_critic",), {"loss_critic": "critic"}.items(), stages, "cell")


def test_checkpointed_attributes_round_trip_in_place():
    leaf = torch.zeros(2, requires_grad=True)
    owner = SimpleNamespace(log_alpha=leaf, noise=SimpleNamespace(state=0), module=torch.nn.Linear(2, 1), count=3, gone=None)
    owner.noise.state = torch.ones(3)
    saved = attribute_states(owner, ("log_alpha", "noise.state", "module", "count", "gone", "missing.path"))
    assert saved["gone"] is None and saved["missing.path"] is None and saved["count"] == 3
    with torch.no_grad():
        leaf.add_(5.0)
    owner.noise.state, owner.count = 0, 7
    torch.nn.init.zeros_(owner.module.weight)
    load_attribute_states(owner, saved)
    assert owner.log_alpha is leaf and torch.equal(leaf, torch.zeros(2))  # copied in place: an optimiser may hold it
    assert torch.equal(owner.noise.state, torch.ones(3)) and owner.count == 3
    assert torch.equal(owner.module.weight, saved["module"]["weight"])


@pytest.fixture
def dynamo_eager(monkeypatch):
    real = torch.compile
    monkeypatch.setattr(torch, "compile", lambda fn, mode=None, fullgraph=False, **_: real(fn, backend="eager", fullgraph=fullgraph))
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_a_third_party_torchrl_cell_declares_optimisers_and_gets_stages_compile_checkpoints_and_acting(dynamo_eager, tmp_path):
    """A TorchRL off-policy cell that gives only its optimiser: the base runs the loss's terms, compiles
    the stage under ``compile = true``, checkpoints loss, optimiser and target updater, acts and exports."""
    pytest.importorskip("torchrl")
    from rlplug.backends.torchrl import TorchRLOffPolicyTrainer, adam

    class MinimalSAC(TorchRLOffPolicyTrainer):
        def make_optimizers(self, build):
            return {"update": adam(list(build.loss.parameters()), build.settings["optimizer_impl"], lr=1e-3)}

    build = rlplug.build("sac-pendulum", backend="torchrl", overrides=[*TINY, "compile=true"])
    build.trainer.close()
    build.trainer = trainer = MinimalSAC(build)
    rows = []
    trainer.train(160, [lambda t, metrics: rows.append(metrics)])
    assert trainer.gradient_steps > 0 and trainer.compile_seconds > 0
    assert {"loss/loss_actor", "loss/loss_qvalue", "loss/loss_alpha"} <= set(rows[-1])
    state = trainer.state_dict()
    assert set(state["modules"]) >= {"loss", "optimizers", "target_updater", "update_schedule"}
    fresh = rlplug.build("sac-pendulum", backend="torchrl", overrides=[*TINY, "compile=true"])
    fresh.trainer.close()
    fresh.trainer = MinimalSAC(fresh)
    fresh.trainer.load_state_dict(state)
    observations = torch.rand(4, 3).numpy()
    assert (fresh.trainer.act_deterministic(observations) == trainer.act_deterministic(observations)).all()
    exported = trainer.export_policy()
    torch.testing.assert_close(exported(torch.as_tensor(observations)).detach().numpy(), trainer.act_deterministic(observations))
    trainer.close(), fresh.trainer.close()


def test_a_minimal_skrl_staged_agent_declares_only_its_stages():
    """skrl's SAC with the staged mixin and its stages, nothing else: no extra_metrics, no extra_state,
    no gradient_step of its own; it trains, logs its terms and round-trips its checkpoint."""
    pytest.importorskip("skrl")
    from rlplug.backends.skrl import SkrlOffPolicyTrainer, StagedLossAgent, UpdateStage
    from rlplug_sac.skrl_backend import sac_cfg
    from skrl.agents.torch.sac import SAC

    class MinimalSAC(StagedLossAgent, SAC):
        update_stages = (UpdateStage("critic"), UpdateStage("policy"), UpdateStage("entropy", only_if="learn_entropy"))

    class Trainer(SkrlOffPolicyTrainer):
        agent_class = MinimalSAC
        agent_config = staticmethod(sac_cfg)

    build = rlplug.build("sac-pendulum", backend="skrl", overrides=TINY)
    build.trainer.close()
    build.trainer = trainer = Trainer(build)
    rows = []
    trainer.train(160, [lambda t, metrics: rows.append(metrics)])
    assert {"loss/loss_critic", "loss/loss_policy", "loss/loss_entropy"} <= set(rows[-1])
    assert trainer.agent.update_schedule.steps == trainer.gradient_steps > 0
    state = trainer.state_dict()
    assert state["agent"]["update_schedule"] == {"steps": trainer.gradient_steps}
    observations = torch.rand(4, 3).numpy()
    fresh = rlplug.build("sac-pendulum", backend="skrl", overrides=TINY)
    fresh.trainer.close()
    fresh.trainer = Trainer(fresh)
    fresh.trainer.load_state_dict(state)
    assert (fresh.trainer.act_deterministic(observations) == trainer.act_deterministic(observations)).all()
    trainer.close(), fresh.trainer.close()
