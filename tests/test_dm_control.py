"""DeepMind Control through Shimmy: ``dm_control/DOMAIN-TASK-v0`` ids registered on use, trained on both backends (the
``wrappers`` field flattens the Dict observation), refused in one line naming the extra when missing."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from rlplug.errors import SuiteMissingError
from rlplug.pipeline.session import Session

SMALL = ["learning_starts=64", "hidden_sizes=[16, 16]", "batch_size=16", "log_every=64", "eval_episodes=1"]
BALANCE = ["env=dm_control/cartpole-balance-v0", 'wrappers=[{wrapper = "gymnasium.wrappers:FlattenObservation"}]']


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_sac_trains_on_dm_control_cartpole_on_both_backends(backend):
    pytest.importorskip("dm_control")
    build = Session().build("sac-pendulum", backend, [*BALANCE, *SMALL])
    try:
        assert build.observation_space.shape == (5,)  # position (3) and velocity (2), flattened
        build.trainer.train(128)
        assert build.trainer.progress >= 128
        returns = build.trainer.evaluate(1)
        assert np.isfinite(returns).all() and 0 < returns[0] <= 1000  # a reward in [0, 1] for each of 1000 steps
    finally:
        build.trainer.close()


def test_a_dict_observation_trains_without_the_wrapper_through_multi_input():
    pytest.importorskip("dm_control")
    prepared = Session().prepare("sac-pendulum", overrides=[BALANCE[0]])
    assert prepared.encoder == "multi_input"


def test_without_the_extra_the_id_names_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None if name == "dm_control" else real(name, *a, **k))
    with pytest.raises(SuiteMissingError) as caught:
        Session().prepare("sac-pendulum", overrides=["env=dm_control/cartpole-swingup-v0"])
    assert str(caught.value) == ("environment 'dm_control/cartpole-swingup-v0' needs DeepMind Control (through Shimmy): "
                                 "pip install 'rlplug[dm-control]'")
