"""C51 on skrl: DQN's cell (``rlplug_dqn.skrl_backend``) with a categorical Q network and the projected loss.

Overridden: the models (``CategoricalQ``: ``n_actions x n_atoms`` logits, whose ``act`` returns each action's mean
return, so DQN's epsilon-greedy agent, evaluation and export take the argmax of the mean unchanged) and the loss.
Memory, target updater, agent (n-step returns included) and trainer are DQN's.
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.skrl import DeterministicModel, configure_threads, observation_encoder, seed_skrl
from rlplug_dqn.skrl_backend import build_memory, build_target_updater, build_trainer  # noqa: F401 -- DQN's

from .projection import project_onto_atoms


class CategoricalQ(DeterministicModel):
    """Z(s, .): an MLP with ``n_actions x n_atoms`` logits; ``act`` gives each action's mean return on the support
    and the log-probabilities ``[batch, n_actions, n_atoms]`` under ``outputs["log_probs"]``."""

    def __init__(self, observation_space: Any, action_space: Any, device: Any, hidden_sizes: Any, activation: str,
                 support: torch.Tensor, encoder: Any = None, dueling: bool = False) -> None:  # fmt: skip
        n = int(action_space.n)
        super().__init__(observation_space, action_space, device, hidden_sizes, activation, n * support.numel(), encoder=encoder,
                         dueling=dueling, atoms=support.numel())  # fmt: skip
        self.register_buffer("support", support.to(device))
        self.distribution_shape = (n, support.numel())

    def compute(self, inputs: Any, role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        logits, outputs = super().compute(inputs, role)
        log_probs = logits.unflatten(-1, self.distribution_shape).log_softmax(-1)
        return (log_probs.exp() * self.support).sum(-1), {**outputs, "log_probs": log_probs}


def build_models(build: Build) -> dict[str, Any]:
    """Online and target ``CategoricalQ`` networks, initialised from ``build.seed`` (DQN's agent freezes the target)."""
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    support = torch.linspace(s["v_min"], s["v_max"], s["n_atoms"])
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"], support)
    return {role: CategoricalQ(*args, encoder=observation_encoder(build), dueling=s["dueling"]) for role in ("q_network", "target_q_network")}


class C51Loss:
    """``DistributionalDQNLoss``'s math on one sampled batch; one stage, ``"q"`` (DQN's agent asks for it).

    The next action is greedy on the online network's means, its distribution the target network's; the target
    ``r + gamma * (1 - terminated) * z'`` (an n-step batch brings ``discounts``) is projected onto the atoms and the
    loss is its cross-entropy with ``Z(s, a)``.
    """

    def __init__(self, discount_factor: float) -> None:
        self.discount_factor = discount_factor

    def __call__(self, agent: Any, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        next_inputs = {"observations": batch["next_observations"], "states": batch["next_states"]}
        support = agent.q_network.support
        with torch.no_grad():
            next_action = agent.q_network.act(next_inputs, role="q_network")[0].argmax(-1)
            next_log_probs = agent.target_q_network.act(next_inputs, role="target_q_network")[1]["log_probs"]
            next_probs = next_log_probs[torch.arange(len(next_action)), next_action].exp()
            discounts = batch.get("discounts", self.discount_factor)
            target = project_onto_atoms(next_probs, batch["rewards"], discounts, batch["terminated"].logical_not(), support)
        log_probs = agent.q_network.act(inputs, role="q_network")[1]["log_probs"]
        taken = log_probs[torch.arange(len(log_probs)), batch["actions"].long().view(-1)]
        return {"loss_q": -(target * taken).sum(-1).mean(), "q_taken": (taken.detach().exp() * support).sum(-1).mean(),
                "q_target": (target * support).sum(-1).mean()}  # fmt: skip


def make_c51_loss(build: Build) -> C51Loss:
    """The registered default loss ("c51") for c51/skrl."""
    return C51Loss(build.settings["discount_factor"])
