"""DQN on skrl: Q networks, replay memory, the TD loss, the agent that delegates to it, the trainer.

Reads top to bottom like a single-file DQN on skrl 2.1. The agent is skrl's own ``DQN`` with three
changes: each gradient step hands the sampled batch to the registered loss object (``build.loss``,
stage ``"q"``) instead of computing the loss inline; the target network moves through the updater
from the target-updater stage (``build.target_updater``) instead of skrl's soft default; and
epsilon-greedy draws its random actions from torch's seeded generator (upstream samples a fresh,
unseeded gymnasium space on every step, reference §14.14). With ``n_step > 1`` the memory also keeps
each step's truncation flag and a sampled batch carries n-step returns (``nstep_transitions``). The
default loss, ``DQNLoss``, is skrl's DQN math line for line, and DDQN's with ``double_dqn``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from rlplug import Build
from rlplug.backends.skrl import (
    SkrlOffPolicyTrainer,
    StagedLossAgent,
    UpdateStage,
    configure_threads,
    module_target_update,
    nstep_transitions,
    observation_encoder,
    q_model,
    replay_memory,
    resolve_class,
    seed_skrl,
)
from rlplug.families import LinearSchedule
from skrl.agents.torch.dqn import DQN, DQN_CFG
from skrl.memories.torch import RandomMemory

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """Online and target Q(s, .) networks (the cell's encoder, an MLP head with one output per action; with
    ``dueling``, value and advantage layers over its last hidden layer), initialised from ``build.seed``.

    skrl's DQN copies the online weights into the target and freezes it when it is constructed.
    """
    configure_threads()
    seed_skrl(build.seed)
    s = build.settings
    args = (build.observation_space, build.action_space, build.device, s["hidden_sizes"], s["activation"])
    return {
        "q_network": q_model(*args, encoder=observation_encoder(build), dueling=s["dueling"]),
        "target_q_network": q_model(*args, encoder=observation_encoder(build), dueling=s["dueling"]),
    }


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> RandomMemory:
    """The replay memory: ``buffer_size`` transitions over the vector env's columns, sampled with replacement."""
    return replay_memory(build)


# ---- loss ---------------------------------------------------------------------------------------


class DQNLoss:
    """skrl's DQN loss (DDQN's with ``double_dqn``) on one sampled batch; one stage, ``"q"``.

    Target ``r + gamma * (1 - terminated) * Q_target(s', a')`` with ``a' = argmax Q_target(s', .)``
    (DQN) or ``argmax Q(s', .)`` (double DQN), computed without gradients; an n-step batch brings its
    own ``discounts`` (``gamma ** steps``) in place of ``gamma``; the loss is the mean
    squared (skrl) or Huber (smooth L1, Stable-Baselines3) error of ``Q(s, a)`` against it. Returns
    ``loss_q`` (optimised) and the batch means ``q_taken`` and ``q_target`` (reported).
    """

    def __init__(self, discount_factor: float, double_dqn: bool = False, td_loss: str = "mse") -> None:
        if td_loss not in ("mse", "huber"):
            raise ValueError(f"td_loss must be 'mse' or 'huber', got '{td_loss}'")
        self.discount_factor = discount_factor
        self.double_dqn = double_dqn
        self.td_loss = F.mse_loss if td_loss == "mse" else F.smooth_l1_loss

    def __call__(self, agent: DQN, batch: dict[str, torch.Tensor], stage: str) -> dict[str, torch.Tensor]:
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        next_inputs = {"observations": batch["next_observations"], "states": batch["next_states"]}

        with torch.no_grad():
            next_q_values, _ = agent.target_q_network.act(next_inputs, role="target_q_network")
            if self.double_dqn:
                next_actions = torch.argmax(agent.q_network.act(next_inputs, role="q_network")[0], dim=1, keepdim=True)
                target_q_values = torch.gather(next_q_values, dim=1, index=next_actions)
            else:
                target_q_values = torch.max(next_q_values, dim=-1, keepdim=True)[0]
            not_terminated = batch["terminated"].logical_not()
            discounts = batch.get("discounts", self.discount_factor)  # n-step batches: gamma ** steps summed
            target_values = batch["rewards"] + discounts * not_terminated * target_q_values

        q_values = torch.gather(agent.q_network.act(inputs, role="q_network")[0], dim=1, index=batch["actions"].long())
        loss_q = self.td_loss(q_values, target_values)
        return {"loss_q": loss_q, "q_taken": q_values.detach().mean(), "q_target": target_values.mean()}


def make_dqn_loss(build: Build) -> DQNLoss:
    """The registered default loss ("dqn") for dqn/skrl."""
    s = build.settings
    return DQNLoss(s["discount_factor"], s["double_dqn"], s["td_loss"])


# ---- target network -----------------------------------------------------------------------------


def build_target_updater(build: Build) -> Any:
    """The recipe's target update (hard copy every ``target_update_period`` gradient steps, or soft)."""
    return module_target_update(build, [(build.models["target_q_network"], build.models["q_network"])])


# ---- agent --------------------------------------------------------------------------------------


class LossDelegatingDQN(StagedLossAgent, DQN):
    """skrl's DQN whose gradient step asks ``loss(agent, batch, "q")`` for the terms to optimise.

    One gradient step is upstream's: sample, preprocess, loss, backward, optional gradient-norm clip
    (upstream has none), Adam step, then ``target_updater.step()`` where upstream counts
    ``target_update_interval``, then the learning-rate scheduler (``StagedLossAgent``).
    """

    update_stages = (UpdateStage("q", optimizer="optimizer"),)
    checkpointed = ("epsilon",)  # informational: it follows the timestep

    def __init__(self, *, n_step: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        scheduler = self.cfg.exploration_scheduler
        self.epsilon = scheduler(0, 1) if scheduler is not None else 0.0
        self.n_step = n_step

    def init(self, **kwargs: Any) -> None:
        super().init(**kwargs)
        if self.n_step > 1 and self.memory is not None:  # n-step sums stop at time-limit cuts too
            self.memory.create_tensor(name="truncated", size=1, dtype=torch.bool)

    # -- replay -----------------------------------------------------------------------------------

    def record_transition(self, **kwargs: Any) -> None:
        """Upstream's, then (n-step) the step's truncation flags into the row it just wrote: upstream's DQN
        stores ``terminated`` only."""
        super().record_transition(**kwargs)
        if self.training and "truncated" in self.memory.tensors:
            row = (self.memory.memory_index - 1) % self.memory.memory_size
            self.memory.tensors["truncated"][row] = kwargs["truncated"].reshape(-1, 1)

    def sampled_transitions(self) -> dict[str, torch.Tensor]:
        batch = super().sampled_transitions()
        if self.n_step == 1:
            return batch
        return nstep_transitions(self.memory, batch, self.n_step, self.cfg.discount_factor)

    # -- acting -----------------------------------------------------------------------------------

    def act(
        self, observations: torch.Tensor, states: torch.Tensor | None, *, timestep: int, timesteps: int
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        """Upstream's epsilon-greedy: each env independently takes a uniformly random action with
        probability ``exploration_scheduler(timestep, timesteps)``, else the argmax of Q. Actions are
        ``[num_envs, 1]`` int64, what the memory stores. Random actions come from torch's seeded
        generator, and Q is evaluated for every env (one small forward pass, no data-dependent indexing).
        With an action mask in the observations both choices are among the valid actions: the Q network
        masks its outputs, the random action is drawn uniformly from the mask.
        """
        inputs = {
            "observations": self.observation_preprocessor(observations),
            "states": self.state_preprocessor(states),
        }
        q_values, outputs = self.q_network.act(inputs, role="q_network")
        greedy = torch.argmax(q_values, dim=1, keepdim=True)
        if self.cfg.exploration_scheduler is None:
            return greedy, outputs
        self.epsilon = self.cfg.exploration_scheduler(timestep, timesteps)
        explore = torch.rand(greedy.shape, device=greedy.device) < self.epsilon
        mask = self.q_network.action_mask(observations)
        if mask is None:
            random_actions = torch.randint(q_values.shape[1], greedy.shape, device=greedy.device)
        else:
            random_actions = torch.multinomial(mask.float(), 1)
        return torch.where(explore, random_actions, greedy), outputs

    def extra_metrics(self) -> dict[str, float]:
        return {"train/epsilon": float(self.epsilon), "train/lr": self.optimizer.param_groups[0]["lr"]}


def dqn_config(build: Build) -> DQN_CFG:
    """``DQN_CFG`` from the translated settings.

    rlplug's trainer owns warm-up and cadence (``random_timesteps = learning_starts = 0``), and the
    target updater owns the target network (skrl's ``polyak`` / ``target_update_interval`` unused).
    """
    s = build.settings
    return DQN_CFG(
        batch_size=s["batch_size"],
        discount_factor=s["discount_factor"],
        learning_rate=s["learning_rate"],
        learning_rate_scheduler=resolve_class("scheduler", s["learning_rate_scheduler"]),
        learning_rate_scheduler_kwargs=dict(s["learning_rate_scheduler_kwargs"]),
        random_timesteps=0,
        learning_starts=0,
        exploration_scheduler=LinearSchedule(s["epsilon_start"], s["epsilon_end"], s["epsilon_decay_timesteps"]),
        experiment={"write_interval": 0, "checkpoint_interval": 0},
    )


# ---- trainer ------------------------------------------------------------------------------------


class SkrlDQNTrainer(SkrlOffPolicyTrainer):
    """The shared off-policy loop (seeded warm-up, replay, ``utd_ratio`` gradient steps) around DQN;
    evaluation and export take the argmax of Q."""

    agent_class = LossDelegatingDQN
    agent_config = staticmethod(dqn_config)
    policy_role, policy_output = "q_network", "argmax"

    def agent_kwargs(self, build: Build) -> dict[str, Any]:
        s = build.settings  # DQN_CFG has no clip (upstream never clips) and no n-step returns
        return {"grad_norm_clip": s["grad_norm_clip"], "n_step": s["n_step"]}


build_trainer = SkrlDQNTrainer
