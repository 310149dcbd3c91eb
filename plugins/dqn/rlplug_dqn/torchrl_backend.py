"""DQN on TorchRL: a ``QValueActor``, a replay buffer, ``DQNLoss`` with its value estimator and
target updater, epsilon-greedy exploration, and rlplug's off-policy loop.

Reads top to bottom like a single-file DQN on TorchRL 0.14: the collector runs the Q actor followed
by an ``EGreedyModule`` (uniformly random actions for the first ``learning_starts`` transitions),
the batches go into a ``TensorDictReplayBuffer``, and every gradient step samples it, sums the
registered loss's optimised terms (``build.loss_entry.terms``; ``DQNLoss`` has one, ``"loss"``),
clips the gradient norm, steps Adam and then the target updater. Epsilon follows the same
``LinearSchedule`` over transitions as the skrl backend, recomputed at every environment step as
skrl's DQN does (``epsilon_per_step``; false: once per collected batch).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from rlplug import Build
from rlplug.backends.torchrl import (
    TorchRLOffPolicyTrainer,
    LeanQNetwork,
    chosen_q,
    adam,
    configure_threads,
    describe_loss,
    lean_applies,
    loss_output,
    loss_target_update,
    observation_batch,
    observation_keys,
    observation_net,
    q_value_actor,
    replay_buffer,
    seed_everything,
    set_value_estimator,
    sync_gradients,
    td0_target,
    torchrl_policy_export,
)
from rlplug.families import LinearSchedule
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictSequential
from torch import nn
from torchrl.data import TensorDictReplayBuffer
from torchrl.envs import ExplorationType, set_exploration_type
from torchrl.envs.utils import exploration_type
from torchrl.modules import EGreedyModule
from torchrl.objectives import DQNLoss
from torchrl.objectives.utils import distance_loss

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """Q(s, .): the cell's encoder and an MLP head with one output per action inside a ``QValueActor``
    ("action" = argmax index), reading the observation keys of the space.

    The target network is not a model of its own: ``DQNLoss`` keeps target parameters.
    """
    configure_threads()
    seed_everything(build.seed)
    s = build.settings
    net = observation_net(build, int(build.action_space.n), s["hidden_sizes"], s["activation"])
    return {"q_network": q_value_actor(net, build.action_space, observation_keys(build)).to(build.device)}


# ---- memory -------------------------------------------------------------------------------------


def build_memory(build: Build) -> TensorDictReplayBuffer:
    """Uniform replay for TD(0); trajectory slices for TD(1) / TD(lambda) (``replay_buffer``)."""
    return replay_buffer(build)


# ---- loss ---------------------------------------------------------------------------------------


def make_dqn_loss(build: Build, loss_class: type[DQNLoss] = DQNLoss) -> DQNLoss:
    """The registered default loss ("dqn") for dqn/torchrl: ``DQNLoss`` with target parameters and
    the value estimator the recipe names (TD(0) by default)."""
    s = build.settings
    loss = loss_class(
        build.models["q_network"],
        loss_function=s["loss_function"],
        delay_value=True,
        double_dqn=s["double_dqn"],
    )
    set_value_estimator(loss, s)
    return loss


def describe_dqn_loss() -> dict[str, Any]:
    """What ``rlplug losses`` shows for this loss: the keys ``set_keys`` accepts and the estimators."""
    return describe_loss(DQNLoss, value_estimator="td0 (td1, td_lambda)")


class LeanDQNLoss(LeanQNetwork, DQNLoss):
    """``DQNLoss`` computed from plain tensors (``NetworkCall``): the same loss (and double-DQN target),
    parameters and keys, without cloning the batch or running ``QValueModule`` twice. It does not write
    ``td_error`` into the batch (rlplug's replay is uniform). A multi-step estimator, priority weights
    or a loss mask fall back to ``DQNLoss.forward``."""

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not lean_applies(self, tensordict):
            return super().forward(tensordict)
        keys, in_keys = self.tensor_keys, self.value_network.in_keys
        action = tensordict.get(keys.action)
        q = self._q_call(self.value_network_params, *[tensordict.get(k) for k in in_keys])
        pred = chosen_q(q, action, self.action_space)
        with torch.no_grad():
            next_obs = [tensordict.get(("next", k)) for k in in_keys]
            next_q = self._q_call(self.target_value_network_params, *next_obs)
            if self.double_dqn:
                best = self._q_call(self.value_network_params, *next_obs, detach=True).argmax(-1, keepdim=True)
                next_value = torch.gather(next_q, -1, best)
            else:
                next_value = next_q.max(-1, keepdim=True)[0]
            target = td0_target(
                self, tensordict.get(("next", keys.reward)), tensordict.get(("next", keys.terminated)), next_value
            ).squeeze(-1)
        return loss_output({"loss": distance_loss(pred, target, self.loss_function).mean()})


def make_lean_dqn_loss(build: Build) -> LeanDQNLoss:
    """The registered "dqn-lean" loss: ``LeanDQNLoss``, constructed as "dqn"."""
    return make_dqn_loss(build, LeanDQNLoss)


# ---- target network -----------------------------------------------------------------------------


def build_target_updater(build: Build) -> Any:
    """The recipe's target update on the loss's target parameters (``HardUpdate`` / ``SoftUpdate``)."""
    return loss_target_update(build, build.loss)


# ---- exploration --------------------------------------------------------------------------------


class PerStepEGreedyModule(EGreedyModule):
    """``EGreedyModule`` whose epsilon is ``schedule(t)`` at the t-th transition, set on every call, as
    skrl's DQN recomputes it at every environment step. Upstream's epsilon moves only when ``step(frames)``
    is called, once per collected batch in a collector loop (``epsilon_per_step = false`` does that).

    ``frames`` counts the transitions acted on; the trainer sets it to its own count after each batch
    and after a resume (the collector's random warm-up does not call the policy), so it is not saved.
    """

    def __init__(self, *args: Any, schedule: LinearSchedule, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schedule = schedule
        self.frames = 0

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if exploration_type() in (ExplorationType.RANDOM, None):
            self.eps.fill_(self.schedule(self.frames))
            self.frames += max(1, tensordict.batch_size.numel())  # one transition per env
        return super().forward(tensordict)


# ---- trainer ------------------------------------------------------------------------------------

LR_SCHEDULERS = {"LinearLR": torch.optim.lr_scheduler.LinearLR}  # what settings can name (never eval'd)


class TorchRLDQNTrainer(TorchRLOffPolicyTrainer):
    """The shared off-policy loop around ``DQNLoss``: epsilon-greedy collection, one Adam step per gradient step."""

    def __init__(self, build: Build) -> None:
        s = build.settings
        self.q_network = build.models["q_network"]
        self.loss, self.target_updater = build.loss, build.target_updater
        self.terms = tuple(build.loss_entry.terms)
        self.logged_terms = self.terms + tuple(t for t in build.loss_entry.reported if t not in self.terms)
        self.max_grad_norm = s["max_grad_norm"]
        # loss.parameters() rather than the model's: a registered loss may own extra parameters
        # (target parameters are buffers, so they are not in it)
        self.trained_parameters = list(self.loss.parameters())
        self.optimizer = adam(self.trained_parameters, s["optimizer_impl"], lr=s["lr"])
        self.lr_scheduler = None
        if s["lr_scheduler"] is not None:  # stepped once per gradient step, as skrl steps DQN's scheduler
            scheduler_class = LR_SCHEDULERS[s["lr_scheduler"]]
            self.lr_scheduler = scheduler_class(self.optimizer, **s["lr_scheduler_kwargs"])
        self.epsilon = LinearSchedule(s["eps_init"], s["eps_end"], s["annealing_num_steps"])
        self.epsilon_per_step = s.get("epsilon_per_step", False)
        egreedy_class, extra = (PerStepEGreedyModule, {"schedule": self.epsilon}) if self.epsilon_per_step else (EGreedyModule, {})
        self.egreedy = egreedy_class(
            spec=self.q_network.spec["action"],
            eps_init=float(s["eps_init"]),
            eps_end=float(s["eps_end"]),
            annealing_num_steps=max(1, s["annealing_num_steps"]),
            **extra,
        ).to(build.device)
        self.policy = TensorDictSequential(self.q_network, self.egreedy)
        super().__init__(build)
        if self.epsilon_per_step:
            self.egreedy.frames = 0  # the collector ran the policy once when it was built, to read its outputs

    @property
    def exploration_policy(self) -> nn.Module:
        return self.policy

    def after_batch(self, frames: int) -> None:
        """Epsilon for the next batch, from the transitions collected so far (O(1), unlike ``step(frames)``);
        per step, the module's count of transitions, which then moves on by itself."""
        if self.epsilon_per_step:
            self.egreedy.frames = self.env_steps
        self.egreedy.eps.fill_(self.epsilon(self.env_steps))

    def optimise(self, sample: TensorDict) -> dict[str, torch.Tensor]:
        """Loss, backward, optimiser step: what ``compile = true`` compiles (target update and schedule stay eager)."""
        out = self.loss(sample)
        total = sum(out[name] for name in self.terms)
        self.optimizer.zero_grad(set_to_none=True)
        total.backward()
        sync_gradients(self.optimizer)  # data-parallel runs: the mean gradient over ranks
        if self.max_grad_norm:
            nn.utils.clip_grad_norm_(self.trained_parameters, self.max_grad_norm)
        self.optimizer.step()
        return {name: out[name] for name in self.logged_terms}

    def update(self, sample: TensorDict) -> dict[str, torch.Tensor]:
        if "_optimise" not in self.__dict__:
            self._optimise = self.compiled(self.optimise)
        terms = self._optimise(sample)
        self.target_updater.step()
        if self.lr_scheduler is not None:
            self.lr_scheduler.step()
        return terms

    def extra_metrics(self) -> dict[str, float]:
        return {"train/epsilon": float(self.egreedy.eps), "train/lr": self.optimizer.param_groups[0]["lr"]}

    def act_deterministic(self, observations: np.ndarray) -> np.ndarray:
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            return self.q_network(observation_batch(observations, self.build.device))["action"].cpu().numpy()

    def export_policy(self) -> nn.Module:
        """The Q-network and its argmax."""
        return torchrl_policy_export(self.build, self.q_network)

    # -- checkpoints: online and target parameters (in the loss), Adam, its schedule, the updater, epsilon

    def extra_state(self) -> dict[str, Any]:
        return {
            "loss": self.loss.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "target_updater": self.target_updater.state_dict(),
            "lr_scheduler": None if self.lr_scheduler is None else self.lr_scheduler.state_dict(),
            "egreedy": self.egreedy.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        if self.epsilon_per_step:
            self.egreedy.frames = self.env_steps  # the transitions counted before the checkpoint

    def load_extra_state(self, state: dict[str, Any]) -> None:
        self.loss.load_state_dict(state["loss"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.target_updater.load_state_dict(state["target_updater"])
        if self.lr_scheduler is not None:
            self.lr_scheduler.load_state_dict(state["lr_scheduler"])
        self.egreedy.load_state_dict(state["egreedy"])


def build_trainer(build: Build) -> TorchRLDQNTrainer:
    return TorchRLDQNTrainer(build)
