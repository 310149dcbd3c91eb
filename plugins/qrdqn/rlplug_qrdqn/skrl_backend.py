"""QR-DQN on skrl: DQN's cell (``rlplug_dqn.skrl_backend``) with a quantile Q network and the quantile loss.

Overridden: the models (``QuantileQ``: ``n_actions x n_quantiles`` outputs, whose ``act`` returns the quantiles'
mean per action, so DQN's epsilon-greedy agent, evaluation and export take the argmax of the mean unchanged)
and the loss. Memory, target updater, agent (n-step returns included) and trainer are DQN's.
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.skrl import DeterministicModel, configure_threads, observation_encoder, seed_skrl
from rlplug_dqn.skrl_backend import build_memory, build_target_updater, build_trainer  # noqa: F401 -- DQN's

from .quantile import quantile_huber_loss


class QuantileQ(DeterministicModel):
    """Z(s, .): an MLP with ``n_actions x n_quantiles`` outputs; ``act`` gives their mean per action and the
    quantiles ``[batch, n_actions, n_quantiles]`` under ``outputs["quantiles"]``."""

    def __init__(self, observation_space: Any, action_space: Any, device: Any, hidden_sizes: Any, activation: str,
                 n_quantiles: int, encoder: Any = None, dueling: bool = False) -> None:  # fmt: skip
        n = int(action_space.n)
        super().__init__(observation_space, action_space, device, hidden_sizes, activation, n * n_quantiles, encoder=encoder,
                         dueling=dueling, atoms=n_quantiles)  # fmt: skip
        self.quantile_shape = (n, n_quantiles)

    def compute(self, inputs: Any, role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        values, outputs = super().compute(inputs, role)
        quantiles = values.unflatten(-1, self.quantile_shape)
        return quantiles.mean(-1), {**outputs, "quantiles": quantiles}


def build_models(build: Build) -> dict[str, Any]:
    """Online and target ``QuantileQ`` networks, initialised from ``build.seed`` (DQN's agent freezes the target)."""
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"], s["n_quantiles"])
    return {role: QuantileQ(*args, encoder=observation_encoder(build), dueling=s["dueling"]) for role in ("q_network", "target_q_network")}


class QRDQNLoss:
    """sb3-contrib's QR-DQN loss on one sampled batch; one stage, ``"q"`` (DQN's agent asks for it).

    Target quantiles ``r + gamma * (1 - terminated) * Z'(s', a')`` with ``a' = argmax mean Z'(s', .)``
    (``double``: ``argmax mean Z(s', .)``, the online network's) (an n-step batch brings ``discounts``), the
    quantile Huber loss of ``Z(s, a)`` against them.
    """

    def __init__(self, discount_factor: float, double: bool = False) -> None:
        self.discount_factor, self.double = discount_factor, double

    def __call__(self, agent: Any, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        next_inputs = {"observations": batch["next_observations"], "states": batch["next_states"]}
        with torch.no_grad():
            next_mean, next_out = agent.target_q_network.act(next_inputs, role="target_q_network")
            if self.double:
                next_mean = agent.q_network.act(next_inputs, role="q_network")[0]
            index = next_mean.argmax(-1, keepdim=True).unsqueeze(-1).expand(-1, 1, next_out["quantiles"].shape[-1])
            next_z = next_out["quantiles"].gather(1, index).squeeze(1)
            discounts = batch.get("discounts", self.discount_factor)
            target = batch["rewards"] + discounts * batch["terminated"].logical_not() * next_z
        quantiles = agent.q_network.act(inputs, role="q_network")[1]["quantiles"]
        index = batch["actions"].long().unsqueeze(-1).expand(-1, 1, quantiles.shape[-1])
        z = quantiles.gather(1, index).squeeze(1)
        return {"loss_q": quantile_huber_loss(z, target), "q_taken": z.detach().mean(), "q_target": target.mean()}


def make_qrdqn_loss(build: Build) -> QRDQNLoss:
    """The registered default loss ("qrdqn") for qrdqn/skrl."""
    return QRDQNLoss(build.settings["discount_factor"], build.settings["double_dqn"])
