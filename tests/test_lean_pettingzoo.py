"""rlplug's ``LeanPettingZooWrapper`` and ``LeanSerialEnv`` step MPE as TorchRL's ``PettingZooWrapper`` and
``SerialEnv`` do.

mappo-simple-spread on a fixed seed, once with the lean steps and once with upstream's (``lean_step = False``):
every rollout (keys, order, values; after the advantages too), the logged losses, the parameters and torch's
random state after training are bitwise equal. The run crosses an episode's 25-step limit (truncations, resets).
On a masked ``pz:`` env (the wrapper keeps upstream's step) the lean ``SerialEnv`` step gives the same rollouts.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torchrl")
pytest.importorskip("mpe2")

import rlplug  # noqa: E402
from rlplug.backends.torchrl.lean_pettingzoo import LeanPettingZooWrapper, LeanSerialEnv  # noqa: E402

OVERRIDES = ["num_envs=2", "rollout_steps=30", "epochs=2", "minibatches=2", "hidden_sizes=[16]"]


def _trained(lean: bool, monkeypatch) -> dict:
    monkeypatch.setattr(LeanPettingZooWrapper, "lean_step", lean)
    monkeypatch.setattr(LeanSerialEnv, "lean_step", lean)
    build = rlplug.build("mappo-simple-spread", backend="torchrl", overrides=OVERRIDES)
    trainer = build.trainer
    try:
        rollouts, batches = [], trainer._batches

        def keep():
            for rollout in batches:
                rollouts.append(rollout)
                yield rollout

        trainer._batches = keep()
        rows = []
        trainer.train(180, [lambda _, metrics: rows.append(metrics)])
        plans = [wrapper.__dict__.get("_lean_plan") for wrapper in trainer.env._envs]
        plans.append(trainer.env.__dict__.get("_lean_views_cache", (None, False))[1])
        return {"rollouts": rollouts, "rows": rows, "plans": plans, "rng": torch.get_rng_state(),
                "parameters": [p.detach().clone() for p in build.loss.parameters()]}  # fmt: skip
    finally:
        trainer.close()


def test_lean_step_trains_as_upstreams_step(monkeypatch):
    upstream, lean = _trained(False, monkeypatch), _trained(True, monkeypatch)
    assert not any(upstream["plans"]) and all(lean["plans"])
    assert len(lean["rollouts"]) == len(upstream["rollouts"]) == 3
    for a, b in zip(upstream["rollouts"], lean["rollouts"]):
        assert list(a.keys(True, True)) == list(b.keys(True, True))
        for key in a.keys(True, True):
            assert a[key].dtype == b[key].dtype and torch.equal(a[key], b[key]), key
    assert torch.cat([r["next", "truncated"] for r in lean["rollouts"]]).any()  # episodes ended inside the run
    assert lean["rows"] == upstream["rows"] and any("loss/" in key for key in lean["rows"][-1])
    assert all(torch.equal(a, b) for a, b in zip(upstream["parameters"], lean["parameters"], strict=True))
    assert torch.equal(upstream["rng"], lean["rng"])


def _masked_rollouts(lean: bool, monkeypatch) -> tuple[list, list]:
    from mappo_builds import make_mappo_build

    monkeypatch.setattr(LeanPettingZooWrapper, "lean_step", lean)
    monkeypatch.setattr(LeanSerialEnv, "lean_step", lean)
    build = make_mappo_build("torchrl", env=("pz:masked_ma_envs:make_pick", {"mask_in": "info"}), num_envs=2, steps=200)
    trainer = build.trainer
    try:
        batches, rollouts = trainer._batches, []
        trainer._batches = (rollouts.append(rollout) or rollout for rollout in batches)
        metrics = [trainer.step() for _ in range(2)]
        assert not any(wrapper.__dict__.get("_lean_plan") for wrapper in trainer.env._envs)  # masks: upstream's step
        assert bool(trainer.env.__dict__.get("_lean_views_cache", (None, None))[1]) == lean
        return rollouts, metrics
    finally:
        trainer.close()


def test_lean_serial_env_steps_a_masked_env_as_upstreams(monkeypatch):
    (upstream, upstream_metrics), (lean, lean_metrics) = (_masked_rollouts(flag, monkeypatch) for flag in (False, True))
    assert lean_metrics == upstream_metrics and len(lean) == len(upstream) == 2
    for a, b in zip(upstream, lean):
        assert list(a.keys(True, True)) == list(b.keys(True, True)) and any("action_mask" in k for k in a.keys(True, True))
        assert all(a[key].dtype == b[key].dtype and torch.equal(a[key], b[key]) for key in a.keys(True, True))
