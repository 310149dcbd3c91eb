"""RNG states survive a weights_only checkpoint round trip."""

from __future__ import annotations

import io
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rlplug.util.rng import capture_rng_state, restore_rng_state


def test_rng_state_round_trip():
    state = capture_rng_state()
    buffer = io.BytesIO()
    torch.save(state, buffer)
    draws = (random.random(), np.random.rand(), torch.rand(1).item())
    buffer.seek(0)
    restore_rng_state(torch.load(buffer, weights_only=True))
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == draws
