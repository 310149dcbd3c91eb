"""DQN on TorchRL: a ``QValueActor``, a replay buffer, ``DQNLoss`` with its value estimator and
target updater, epsilon-greedy exploration, and rlplug's off-policy loop.

Reads top to bottom like a single-file DQN on TorchRL 0.14: the collector runs the Q actor followed
by an ``EGreedyModule`` (uniformly random actions for the first ``learning_starts`` transitions),
the batches go into a ``TensorDictReplayBuffer``, and every gradient step samples it, sums the
registered loss's optimised terms (``build.loss_entry.terms``; ``DQNLoss`` has one, ``"loss"``),
clips the gradient norm, steps Adam and then the target updater (``n_step > 1``: the sampled batch
carries n-step returns, ``nstep_batch``, and ``DQNLoss``'s TD(0) estimator discounts each by
``gamma ** steps_to_next_obs``). Epsilon follows the same
``LinearSchedule`` over transitions as the skrl backend, recomputed at every environment step as
skrl's DQN does (``epsilon_per_step``; false: once per collected batch).
"""

from __future__ import annotations

from typing import Any

import torch
from rlplug import Build
from rlplug.backends.torchrl import (
    TorchRLOffPolicyTrainer,
    action_mask_key,
    LeanQNetwork,
    chosen_q,
    adam,
    configure_threads,
    describe_loss,
    egreedy_step,
    lean_applies,
    loss_output,
    loss_target_update,
    nstep_batch,
    observation_keys,
    observation_net,
    q_value_actor,
    replay_buffer,
    seed_everything,
    set_value_estimator,
    td0_target,
)
from rlplug.families import LinearSchedule
from tensordict import TensorDictBase
from tensordict.nn import TensorDictSequential
from torch import nn
from torchrl.data import TensorDictReplayBuffer
from torchrl.envs import ExplorationType
from torchrl.envs.utils import exploration_type
from torchrl.modules import EGreedyModule
from torchrl.objectives import DQNLoss
from torchrl.objectives.utils import distance_loss

# ---- models -------------------------------------------------------------------------------------


def build_models(build: Build) -> dict[str, Any]:
    """Q(s, .): the cell's encoder and an MLP head with one output per action (``dueling``: value and advantage
    layers over its last hidden layer) inside a ``QValueActor``
    ("action" = argmax index), reading the observation keys of the space; with an action mask, the argmax and
    the value ``DQNLoss``'s target reads of the next step are over its valid actions.

    The target network is not a model of its own: ``DQNLoss`` keeps target parameters.
    """
    configure_threads()
    seed_everything(build.seed)
    s = build.settings
    net = observation_net(build, int(build.action_space.n), s["hidden_sizes"], s["activation"], dueling=s["dueling"])
    actor = q_value_actor(net, build.action_space, observation_keys(build), mask_key=action_mask_key(build))
    return {"q_network": actor.to(build.device)}


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
    or a loss mask fall back to ``DQNLoss.forward``. An action mask bounds the next step's max (and double
    DQN's argmax) to its valid actions, as ``QValueModule(action_mask_key=...)`` does on upstream's path."""

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if not lean_applies(self, tensordict):
            return super().forward(tensordict)
        keys, in_keys = self.tensor_keys, self.value_network.module[0].in_keys  # the network's, not the mask
        mask_key = self.value_network.module[-1].action_mask_key
        action = tensordict.get(keys.action)
        q = self.q_call(self.value_network_params, *[tensordict.get(k) for k in in_keys])
        pred = chosen_q(q, action, self.action_space)
        with torch.no_grad():
            next_obs = [tensordict.get(("next", k)) for k in in_keys]
            next_mask = None if mask_key is None else tensordict.get(("next", mask_key))
            next_q = masked_q(self.q_call(self.target_value_network_params, *next_obs), next_mask)
            if self.double_dqn:
                online = masked_q(self.q_call(self.value_network_params, *next_obs, detach=True), next_mask)
                next_value = torch.gather(next_q, -1, online.argmax(-1, keepdim=True))
            else:
                next_value = next_q.max(-1, keepdim=True)[0]
            target = td0_target(
                self, tensordict.get(("next", keys.reward)), tensordict.get(("next", keys.terminated)), next_value,
                # n-step batches: gamma ** steps, read under the estimator's own key, as TD0Estimator does
                tensordict.get(self.value_estimator.tensor_keys.steps_to_next_obs, None),
            ).squeeze(-1)
        return loss_output({"loss": distance_loss(pred, target, self.loss_function).mean()})


def masked_q(q: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Q-values with masked actions at the dtype's lowest value (``QValueModule``'s masking), or as they are."""
    return q if mask is None else torch.where(mask, q, torch.finfo(q.dtype).min)


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
            self._advance(tensordict.batch_size)
        return super().forward(tensordict)

    def _advance(self, batch_size: torch.Size) -> None:
        self.eps.fill_(self.schedule(self.frames))
        self.frames += max(1, batch_size.numel())  # one transition per env

    def tensor_step(self, batch_size: torch.Size) -> Any:
        """This module on plain tensors (the lean collection's acting): the schedule, then upstream's draws."""
        return egreedy_step(self, batch_size, before=lambda: self._advance(batch_size))


# ---- trainer ------------------------------------------------------------------------------------

LR_SCHEDULERS = {"LinearLR": torch.optim.lr_scheduler.LinearLR}  # what settings can name (never eval'd)


class TorchRLDQNTrainer(TorchRLOffPolicyTrainer):
    """The shared off-policy loop around ``DQNLoss``: epsilon-greedy collection, one Adam step per gradient
    step (then the target update and the learning-rate schedule); evaluation and export take the argmax."""

    policy_model = "q_network"
    clip_setting = "max_grad_norm"
    checkpointed = ("egreedy",)

    def make_optimizers(self, build: Build) -> dict[str, torch.optim.Adam]:
        # loss.parameters() rather than the model's: a registered loss may own extra parameters
        # (target parameters are buffers, so they are not in it)
        return {"update": adam(list(build.loss.parameters()), build.settings["optimizer_impl"], lr=build.settings["lr"])}

    def make_lr_schedulers(self, build: Build, optimizers: dict[str, torch.optim.Optimizer]) -> dict[str, Any]:
        s = build.settings  # stepped once per gradient step, as skrl steps DQN's scheduler
        if s["lr_scheduler"] is None:
            return {}
        return {"update": LR_SCHEDULERS[s["lr_scheduler"]](optimizers["update"], **s["lr_scheduler_kwargs"])}

    @property
    def lr_scheduler(self) -> Any:
        return self.lr_schedulers.get("update")

    def make_exploration_policy(self, build: Build) -> nn.Module:
        s = build.settings
        self.epsilon = LinearSchedule(s["eps_init"], s["eps_end"], s["annealing_num_steps"])
        self.epsilon_per_step = s.get("epsilon_per_step", False)
        egreedy_class, extra = (PerStepEGreedyModule, {"schedule": self.epsilon}) if self.epsilon_per_step else (EGreedyModule, {})
        self.egreedy = egreedy_class(
            spec=self.policy.spec["action"],
            eps_init=float(s["eps_init"]),
            eps_end=float(s["eps_end"]),
            annealing_num_steps=max(1, s["annealing_num_steps"]),
            action_mask_key=action_mask_key(build),  # random actions drawn among the valid ones
            **extra,
        ).to(build.device)
        return TensorDictSequential(self.policy, self.egreedy)

    def __init__(self, build: Build) -> None:
        super().__init__(build)
        if self.epsilon_per_step:
            self.egreedy.frames = 0  # the collector ran the policy once when it was built, to read its outputs
        self.n_step = build.settings.get("n_step", 1)

    def sample_batch(self) -> Any:
        """A uniform batch of transitions; with ``n_step > 1``, n-step returns read ahead in the replay."""
        batch = super().sample_batch()
        if self.n_step == 1:
            return batch
        s = self.build.settings
        return nstep_batch(self.memory, batch, self.n_step, s["gamma"], num_envs=self.build.num_envs,
                           steps_per_block=s["train_every"])  # fmt: skip

    def after_batch(self, frames: int) -> None:
        """Epsilon for the next batch, from the transitions collected so far (O(1), unlike ``step(frames)``);
        per step, the module's count of transitions, which then moves on by itself."""
        if self.epsilon_per_step:
            self.egreedy.frames = self.env_steps
        self.egreedy.eps.fill_(self.epsilon(self.env_steps))

    def extra_metrics(self) -> dict[str, float]:
        return {"train/epsilon": float(self.egreedy.eps), "train/lr": self.optimizer.param_groups[0]["lr"]}


    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        if self.epsilon_per_step:
            self.egreedy.frames = self.env_steps  # the transitions counted before the checkpoint


build_trainer = TorchRLDQNTrainer
