"""QR-DQN's quantile loss (issue 48) against a hand-computed value, on both backends.

Two actions, two quantiles (midpoints tau = 0.25, 0.75), a linear Z(s) = s * W so every quantile is known:
Z(1, .) = [[0, 1], [3, -0.5]], Z(2, .) = [[0, 2], [6, -1]] (means 1 and 2.5, so a' = 1). Sample 1: a = 0,
r = 1, gamma 0.5, not terminated: target [1 + 0.5 * 6, 1 - 0.5 * 1] = [4, 0.5] against [0, 1]; pairwise Huber
errors weighted by |tau_i - 1{delta < 0}|: 0.25 * 3.5 + 0.25 * 0.125 + 0.75 * 2.5 + 0.25 * 0.125 = 2.8125, over the
two target samples 1.40625. Sample 2: a = 1, r = 0, terminated: target [0, 0] against [3, -0.5]: 2 * 0.75 * 2.5 +
2 * 0.75 * 0.125 = 3.9375, halved 1.96875. The batch mean is 1.6875 (sb3-contrib's quantile_huber_loss).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")
pytest.importorskip("torchrl")

W = torch.tensor([0.0, 1.0, 3.0, -0.5])  # [a0 q0, a0 q1, a1 q0, a1 q1]
EXPECTED = 1.6875


def test_skrl_quantile_loss_equals_the_hand_computed_value():
    from rlplug_qrdqn.skrl_backend import QRDQNLoss

    class LinearZ:
        def act(self, inputs, role=""):
            quantiles = (inputs["observations"] * W).unflatten(-1, (2, 2))
            return quantiles.mean(-1), {"quantiles": quantiles}

    agent = type("Agent", (), {"q_network": LinearZ(), "target_q_network": LinearZ()})()
    batch = {
        "observations": torch.ones(2, 1), "states": None, "next_observations": torch.full((2, 1), 2.0), "next_states": None,
        "actions": torch.tensor([[0], [1]]), "rewards": torch.tensor([[1.0], [0.0]]), "terminated": torch.tensor([[False], [True]]),
    }  # fmt: skip
    terms = QRDQNLoss(0.5)(agent, batch, "q")
    assert terms["loss_q"].item() == pytest.approx(EXPECTED)
    assert terms["q_taken"].item() == pytest.approx((0 + 1 + 3 - 0.5) / 4)


def test_torchrl_quantile_loss_equals_the_hand_computed_value():
    import gymnasium as gym
    from rlplug.backends.torchrl import q_value_actor
    from rlplug_qrdqn.torchrl_backend import QRDQNLoss, QuantileMean
    from tensordict import TensorDict

    linear = torch.nn.Linear(1, 4, bias=False)
    with torch.no_grad():
        linear.weight.copy_(W.view(4, 1))
    loss = QRDQNLoss(q_value_actor(QuantileMean(linear, 2, 2), gym.spaces.Discrete(2)), gamma=0.5)
    batch = TensorDict({
        "observation": torch.ones(2, 1), "action": torch.tensor([0, 1]),
        "next": {"observation": torch.full((2, 1), 2.0), "reward": torch.tensor([[1.0], [0.0]]),
                 "terminated": torch.tensor([[False], [True]])},
    }, batch_size=[2])  # fmt: skip
    out = loss(batch)
    assert out["loss"].item() == pytest.approx(EXPECTED)
    out["loss"].backward()
    assert linear.weight.grad is not None and linear.weight.grad.abs().sum() > 0  # only the online network learns
