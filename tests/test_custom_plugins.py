"""User plugins end to end: a registered custom loss on each backend, and a one-stage model override."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import rlplug
from rlplug.pipeline.session import Session

sys.path.insert(0, str(Path(__file__).parent / "plugins"))
import custom_ppo_loss  # noqa: E402
import wide_skrl_models  # noqa: E402

SHORT = ["steps=1024", "num_envs=4", "rollout_steps=64", "epochs=2"]


@pytest.fixture(scope="module")
def loss_session():
    return Session(objects=(custom_ppo_loss,))


def test_custom_losses_are_listed_with_their_terms(loss_session):
    entry = loss_session.host.losses.get("ppo", "skrl", "unclipped")
    assert entry.terms == ("pg_surrogate", "value_mse") and entry.source == "test"
    assert loss_session.host.losses.names("ppo", "torchrl") == ["clip", "huber"]


def test_registering_a_taken_name_is_an_error(loss_session):
    with pytest.raises(rlplug.errors.LossRegistrationError, match="loss 'clip' for ppo/skrl is already registered by rlplug-ppo; pass override=True"):
        loss_session.host.losses.register("ppo", "skrl", "clip", custom_ppo_loss.make_skrl_loss, terms=("x",))


def test_custom_skrl_loss_trains_instead_of_the_default(loss_session):
    build = loss_session.build("ppo-cartpole", "skrl", [*SHORT, "loss=unclipped"])
    calls_before = custom_ppo_loss.UnclippedLoss.calls
    try:
        metrics = build.trainer.step()
    finally:
        build.trainer.close()
    assert custom_ppo_loss.UnclippedLoss.calls > calls_before
    assert {"loss/pg_surrogate", "loss/value_mse"} <= set(metrics)
    assert not any(key in metrics for key in ("loss/loss_policy", "loss/loss_value", "loss/loss_entropy"))


def test_custom_torchrl_loss_trains_instead_of_the_default(loss_session):
    pytest.importorskip("torchrl")
    build = loss_session.build("ppo-cartpole", "torchrl", [*SHORT, "loss=huber"])
    try:
        metrics = build.trainer.step()
    finally:
        build.trainer.close()
    assert type(build.loss).__name__ == "HuberRenamedPPOLoss"
    assert {"loss/surrogate", "loss/huber_value"} <= set(metrics)
    assert not any(key in metrics for key in ("loss/loss_objective", "loss/loss_critic"))


def test_unknown_loss_name_suggests(loss_session):
    with pytest.raises(rlplug.errors.LossRegistrationError, match=r"unknown loss 'unclippd' for ppo/skrl \(did you mean 'unclipped'\?\)"):
        loss_session.prepare("ppo-cartpole", "skrl", ["loss=unclippd"])


def test_model_override_replaces_only_the_models_stage():
    session = Session(objects=(wide_skrl_models,))
    build = session.build("ppo-cartpole", "skrl", SHORT)
    try:
        build.trainer.step()
        models = wide_skrl_models.BUILT[-1]
        assert build.models is models
        assert build.trainer.agent.policy is models["policy"]
        assert models["policy"].net[0].out_features == 16
        default = Session().prepare("ppo-cartpole", "skrl", SHORT)
        assert type(build.loss).__name__ == "ClipLoss"  # the default loss stage still ran
        assert build.loss_entry.name == default.loss_entry.name == "clip"
        assert type(build.memory).__name__ == "RandomMemory"
    finally:
        build.trainer.close()
    other = session.build("ppo-cartpole", "torchrl", SHORT) if _has_torchrl() else None
    if other is not None:
        assert other.models is not wide_skrl_models.BUILT[-1]
        other.trainer.close()


def _has_torchrl() -> bool:
    import importlib.util

    return importlib.util.find_spec("torchrl") is not None and importlib.util.find_spec("rlplug_ppo.torchrl_backend") is not None


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_a_plugin_swaps_the_target_updater(backend):
    if backend == "torchrl":
        pytest.importorskip("torchrl")
    import hard_target_updates
    import torch

    session = Session(objects=(hard_target_updates,))
    overrides = ["steps=300", "learning_starts=100", "batch_size=32", "hidden_sizes=[16, 16]", "log_every=100"]
    build = session.build("td3-pendulum", backend, overrides)
    try:
        build.trainer.train(300)
    finally:
        build.trainer.close()
    assert build.target_updater is hard_target_updates.BUILT[-1]
    assert build.target_updater.steps > 0
    # hard copies right after the last policy update: every target equals its online network
    # (the recipe's soft update would leave them apart)
    if backend == "skrl":
        m = build.models
        pairs = [(m[f"target_{name}"], m[name]) for name in ("policy", "critic_1", "critic_2")]
        assert all(torch.equal(t, o) for target, online in pairs for t, o in zip(target.parameters(), online.parameters()))
    else:
        loss = build.loss
        for name in ("actor_network", "qvalue_network"):
            online = getattr(loss, f"{name}_params").values(True, True)
            target = getattr(loss, f"target_{name}_params").values(True, True)
            assert all(torch.equal(t, o) for t, o in zip(target, online))
