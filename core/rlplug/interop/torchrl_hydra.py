"""A recipe as a config in TorchRL's own structured-config groups (``rlplug show NAME --backend torchrl --format hydra``).

The file is a Hydra primary config: a defaults list naming the groups ``torchrl.trainers.algorithms.configs``
registers in Hydra's ConfigStore (trainer, loss, collector, env, model, network, replay_buffer, storage,
sampler, optimizer, logger, target_net_updater) and the values translated from the resolved recipe's
TorchRL settings (``rlplug show``'s ``[torchrl]`` table, the one the parity tables in
``rlplug.backends.torchrl.parity`` map to constructor arguments). TorchRL runs it alone::

    import hydra, torchrl.trainers.algorithms.configs  # registers the groups
    with hydra.initialize_config_dir(config_dir=DIR, version_base=None):
        cfg = hydra.compose(config_name=NAME)
    hydra.utils.instantiate(cfg.trainer).train()

What TorchRL 0.14.1's trainers cannot do that the recipe asks for (observation normalisation, KL-adaptive or
scheduled learning rates, per-network learning rates, an offline-only loop, ...) is listed in the file's header
as dropped or approximated, with the reason. The recipe's ``hooks`` go into the trainer config's ``hooks`` list
(``rlplug.torchrl_hydra_hooks``: TorchRL's hooks as given, rlplug's named hooks as TorchRL's of the same meaning
or dropped). Offline recipes (IQL, CQL) get their dataset written beside the
file in TorchRL's transition layout (``FILE.dataset.pt``, a pickled TensorDict ``torch.load`` reads), which
pre-fills the trainer's replay buffer.

DDPG is written as TorchRL's TD3 trainer with a one-critic, unsmoothed, undelayed ``TD3Loss`` (``_ddpg`` says why
not TorchRL's DDPGTrainer). ``NO_TRAINER`` says, for each first-party algorithm that is refused, what TorchRL lacks.
Nothing here imports torch or TorchRL at module level; writing an offline recipe's dataset imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import RlplugError
from .torchrl_hydra_hooks import OFF_POLICY, OFFLINE, ON_POLICY, export_hooks

TORCHRL_VERSION = "0.14.1"
NO_TRAINER = {
    "mappo": f"TorchRL {TORCHRL_VERSION} has no multi-agent PPO trainer config",
    "ippo": f"TorchRL {TORCHRL_VERSION} has no multi-agent PPO trainer config",
    "qmix": f"TorchRL {TORCHRL_VERSION} has no multi-agent trainer config and no loss config for QMixerLoss",
    "rpo": f"TorchRL {TORCHRL_VERSION} has no RPO loss config, and its PPO loss config cannot perturb the actor's mean",
    "td3bc": f"TorchRL {TORCHRL_VERSION} has no TD3+BC trainer or loss config, and its TD3 trainer cannot step "
             "TD3BCLoss: the trainer calls value_loss, which TD3BCLoss names qvalue_loss",
    "bc": f"TorchRL {TORCHRL_VERSION} has no behaviour-cloning trainer config, and no loss config for BCLoss",
    "gail": f"TorchRL {TORCHRL_VERSION} has no GAIL trainer config and no loss config for GAILLoss (its PPO trainer steps "
    "on the env's reward)",
    "dt": f"TorchRL {TORCHRL_VERSION} has no Decision Transformer trainer config and no loss config for DTLoss",
    "odt": f"TorchRL {TORCHRL_VERSION} has no Online Decision Transformer trainer config and no loss config for OnlineDTLoss",
    "trpo": f"TorchRL {TORCHRL_VERSION} has no TRPO loss or trainer config (its trainers step every loss term with an "
            "optimiser; TRPO's policy moves by a natural-gradient step)",
    "crossq": f"TorchRL {TORCHRL_VERSION} has no CrossQ loss config",
    "redq": f"TorchRL {TORCHRL_VERSION} has no REDQ loss config",
    "c51": f"TorchRL {TORCHRL_VERSION} has no loss config for DistributionalDQNLoss",
    "qrdqn": f"TorchRL {TORCHRL_VERSION} has no quantile-regression DQN loss (rlplug's QRDQNLoss is its own)",
}  # fmt: skip
ACTIVATIONS = {"tanh": "torch.nn.Tanh", "relu": "torch.nn.ReLU", "elu": "torch.nn.ELU"}
ENTRY = ("import hydra, torchrl.trainers.algorithms.configs  # registers TorchRL's config groups\n"
         "with hydra.initialize_config_dir(config_dir=DIR, version_base=None):\n"
         "    cfg = hydra.compose(config_name=NAME)\n"
         "hydra.utils.instantiate(cfg.trainer).train()")  # fmt: skip


class ExportError(RlplugError):
    """A recipe that cannot be written as a TorchRL trainer config."""


def check_exportable(algorithm: str, backend: str, recipe: str = "NAME") -> None:
    """Refuse what no TorchRL trainer config can run: another backend, an algorithm without a trainer config."""
    if backend != "torchrl":
        raise ExportError(f"--format hydra writes TorchRL's own trainer configs: use it with --backend torchrl, not '{backend}'")
    if algorithm not in BUILDERS:
        reason = NO_TRAINER.get(algorithm, f"TorchRL {TORCHRL_VERSION} has no trainer config for it")
        raise ExportError(f"--format hydra: algorithm '{algorithm}' cannot be exported ({reason}); train it with "
                          f"`rlplug train {recipe} --backend torchrl`; exportable: {', '.join(BUILDERS)}")  # fmt: skip


class Export:
    """One config being written: its nodes, its defaults list and the header notes on what TorchRL lacks."""

    def __init__(self, recipe: Any, settings: dict[str, Any], observation_space: Any, action_space: Any) -> None:
        self.recipe, self.s = recipe, settings
        self.defaults: list[Any] = []
        self.cfg: dict[str, Any] = {}
        self.dropped: list[str] = []
        self.approximated: list[str] = []
        self.notes: list[str] = []  # how the recipe's algorithm maps onto a TorchRL trainer of another name
        self.obs_dim = math.prod(observation_space.shape)
        self.discrete = hasattr(action_space, "n")
        self.act_dim = int(action_space.n) if self.discrete else math.prod(action_space.shape)
        self.bounds = None if self.discrete else (action_space.low.tolist(), action_space.high.tolist())

    def group(self, group: str, package: str, option: str) -> None:
        self.defaults.append({f"{group}@{package}": option})

    def drop(self, field: str, value: Any, why: str, default: Any = object()) -> None:
        """Note ``field`` as dropped unless it is at the value TorchRL's trainer already behaves as."""
        if value != default:
            self.dropped.append(f"{field} = {value!r}: {why}")

    def network(self, name: str, in_features: int, out_features: int) -> str:
        self.group("network", f"networks.{name}", "mlp")
        self.cfg.setdefault("networks", {})[name] = {
            "in_features": in_features, "out_features": out_features, "num_cells": list(self.s["hidden_sizes"]),
            "activation_class": {"_target_": ACTIVATIONS[self.s["activation"]], "_partial_": True},
        }  # fmt: skip
        return f"${{networks.{name}}}"

    def model(self, name: str, option: str, node: dict[str, Any]) -> str:
        self.group("model", f"models.{name}", option)
        self.cfg.setdefault("models", {})[name] = node
        return f"${{models.{name}}}"

    def custom_model(self, name: str, node: dict[str, Any]) -> str:
        """A model node with its own ``_target_`` to TorchRL's classes, for what no model config builds."""
        # _convert_: plain lists for TorchRL's key arguments (they refuse omegaconf's ListConfig)
        self.cfg.setdefault("models", {})[name] = {**node, "_convert_": "all"}
        return f"${{models.{name}}}"

    def tanh_normal_policy(self) -> str:
        low, high = self.bounds
        return self.model("policy_model", "tanh_normal", {
            "network": self.network("policy_network", self.obs_dim, 2 * self.act_dim),
            "in_keys": ["observation"], "param_keys": ["loc", "scale"], "out_keys": ["action"],
            "low": low, "high": high, "return_log_prob": True,
        })  # fmt: skip

    def value_model(self, name: str, with_action: bool, outputs: int = 1) -> str:
        """A value model; ``outputs`` above 1: a distributional one (TQC's quantiles)."""
        in_keys = ["observation", "action"] if with_action else ["observation"]
        out_key = "state_action_value" if with_action else "state_value"
        width = self.obs_dim + (self.act_dim if with_action else 0)
        network = self.network(name.replace("_model", "_network"), width, outputs)
        return self.model(name, "value", {"network": network, "in_keys": in_keys, "out_keys": [out_key]})

    def environment(self) -> None:
        """``num_envs`` Gymnasium envs in a serial batched env, under a ``RewardSum`` into ``reward_sum`` (the key the
        off-policy trainers' reward logging reads; IQL's and CQL's hard-code it).

        The batched env's ``create_env_fn`` is the gym env config itself (a partial, called once per worker): with
        the ``transformed_env`` inside it, as upstream's examples nest them, the partial would wrap ONE instantiated
        gym env and every worker would step it. ``GymEnv(num_envs=N)`` would be Gymnasium's async vector env:
        subprocesses, slower than serial on a small CPU."""
        recipe = self.recipe
        for group, package, option in (("transform", "transform0", "reward_sum"), ("env", "training_env", "transformed_env"),
                                       ("env", "training_env.base_env", "batched_env"),
                                       ("env", "training_env.base_env.create_env_fn", "gym"),
                                       ("transform", "training_env.transform", "compose")):
            self.group(group, package, option)
        self.cfg["transform0"] = {"in_keys": ["reward"], "out_keys": ["reward_sum"]}
        self.cfg["training_env"] = {
            "base_env": {"num_workers": recipe.num_envs, "batched_env_type": "serial",
                         "create_env_fn": {"env_name": recipe.env, "_partial_": True}},
            "transform": {"transforms": ["${transform0}"]},
        }  # fmt: skip
        self.drop("env_kwargs", dict(recipe.env_kwargs), "TorchRL's gym env config takes no gym.make keyword arguments", {})
        self.drop("env_module", recipe.env_module, "import the module that registers the environment before composing", "")
        self.drop("wrappers", list(getattr(recipe, "wrappers", [])), "the exported env has no user wrappers", [])
        self.drop("hide_observation", list(getattr(recipe, "hide_observation", [])), "the exported env observes everything", [])
        self.drop("frame_stack", recipe.frame_stack, "no frame stacking in the exported env", 0)
        self.drop("atari", recipe.atari, "no Atari preprocessing in the exported env", False)
        self.drop("normalize_reward", recipe.normalize_reward, "no reward normalisation in the exported env", False)
        self.drop("time_limit", recipe.time_limit, "the env's own time limit applies", 0)
        self.drop("vector_mode", recipe.vector_mode, "the exported envs step in one process (a serial batched env)", "sync")

    def collector(self, policy: str, frames_per_batch: int, total_frames: int, init_random_frames: int, partial: bool) -> None:
        self.group("collector", "collector", "sync")
        node = {"create_env_fn": "${training_env}", "policy": policy, "frames_per_batch": frames_per_batch,
                "total_frames": total_frames, "init_random_frames": init_random_frames}  # fmt: skip
        if partial:  # the trainer completes it (the off-policy trainers pass their exploration policy)
            node["_partial_"] = True
        self.cfg["collector"] = node

    def replay_buffer(self, size: int | None, batch_size: int, sampler: str, storage: str = "lazy_tensor") -> None:
        for group, package, option in (("replay_buffer", "replay_buffer", "base"), ("storage", "replay_buffer.storage", storage),
                                       ("writer", "replay_buffer.writer", "round_robin"),
                                       ("sampler", "replay_buffer.sampler", sampler)):
            self.group(group, package, option)
        self.cfg["replay_buffer"] = {"storage": {"max_size": size, "device": "cpu", "ndim": 1},
                                     "writer": {"compilable": False}, "batch_size": batch_size}  # fmt: skip

    def optimizer(self, lr: float) -> None:
        self.group("optimizer", "optimizer", "adam")
        self.cfg["optimizer"] = {"lr": lr}

    def target_updater(self) -> None:
        s = self.s
        if s["target_update"] == "soft":
            self.group("target_net_updater", "target_net_updater", "soft")
            self.cfg["target_net_updater"] = {"tau": s["tau"]}
        else:  # HardUpdate copies every interval + 1 calls (reference §13.8); the trainer calls it once per optimiser step
            self.group("target_net_updater", "target_net_updater", "hard")
            self.cfg["target_net_updater"] = {"value_network_update_interval": max(1, s["target_update_period"] - 1)}
        if s["target_update"] == "soft":
            self.drop("target_update_period", s["target_update_period"], "TorchRL's trainer steps the soft update after "
                      "every optimiser step", 1)  # fmt: skip

    def trainer(self, option: str, **fields: Any) -> None:
        self.group("trainer", "trainer", option)
        self.group("logger", "logger", "csv")
        self.cfg["logger"] = {"exp_name": f"{self.recipe.name}_torchrl", "log_dir": "torchrl_logs"}
        self.cfg["trainer"] = {
            "collector": "${collector}", "optimizer": "${optimizer}", "replay_buffer": "${replay_buffer}",
            "loss_module": "${loss}", "logger": "${logger}", "total_frames": "${collector.total_frames}",
            "seed": self.recipe.seed, "save_trainer_file": None, "progress_bar": True, **fields,
        }  # fmt: skip

    def clip(self, norm: float) -> dict[str, Any]:
        return {"clip_grad_norm": bool(norm), "clip_norm": float(norm) if norm else None}

    def offpolicy_schedule(self) -> tuple[int, int]:
        """rlplug's ``train_every`` env steps (per env) between updates and ``utd_ratio`` updates per env step, as
        TorchRL's frames per collected batch and optimiser steps per batch."""
        s, n = self.s, self.recipe.num_envs
        frames = s["train_every"] * n
        return frames, max(1, round(s["utd_ratio"] * frames))

    def offpolicy_common(self) -> None:
        s = self.s
        self.drop("value_estimator", s["value_estimator"], "the exported loss keeps TorchRL's default one-step TD(0) target",
                  "td0")  # fmt: skip
        self.drop("replay_storage", s["replay_storage"], "the exported buffer is in memory (LazyTensorStorage)", "memory")
        self.drop("compile", s.get("compile", False), "TorchRL's trainer does not compile the loss", False)

    def header(self, source: str, dataset_note: str = "") -> str:
        lines = [f"TorchRL {TORCHRL_VERSION} trainer config for rlplug recipe {self.recipe.ref} ({self.recipe.algorithm} on "
                 f"{self.recipe.env}), written by `rlplug show {self.recipe.name} --backend torchrl --format hydra`.",
                 "Runs with TorchRL alone (no rlplug import); save this file as DIR/NAME.yaml, then:"]  # fmt: skip
        lines += ["  " + line for line in ENTRY.splitlines()]
        optimizer = "optimizer" if "optimizer" in self.cfg else "optimizer_critic"
        lines.append(f"Override in Hydra's grammar, e.g. collector.total_frames=4096 {optimizer}.lr=3e-4.")
        for text in (*self.notes, dataset_note):
            if text:
                lines += ["", *text.splitlines()]
        lines += ["", "Dropped (TorchRL's trainer has no place for them):"]
        lines += [f"  - {d}" for d in self.dropped] or ["  (none)"]
        lines += ["Approximated:"]
        lines += [f"  - {a}" for a in self.approximated] or ["  (none)"]
        lines.append(f"Recipe source: {source}")
        return "".join(f"# {line}\n" if line else "#\n" for line in lines)


# ---- per algorithm ---------------------------------------------------------------------------------------


def _ppo(x: Export) -> None:
    s = x.s
    policy, value = _rollout_loop(x)
    x.group("loss", "loss", "ppo")
    x.cfg["loss"] = {
        "actor_network": policy, "critic_network": value, "clip_epsilon": s["clip_epsilon"],
        "entropy_coeff": s["entropy_coeff"], "critic_coeff": s["critic_coeff"],
        "loss_critic_type": s["loss_critic_type"], "clip_value": s["clip_value"],
        "normalize_advantage": s["normalize_advantage"],
    }  # fmt: skip
    x.trainer("ppo", optim_steps_per_batch=None, num_epochs=s["num_epochs"], gamma=s["gamma"], lmbda=s["lmbda"],
              episode_reward_key="reward_sum", **x.clip(s["max_grad_norm"]))  # fmt: skip
    x.drop("clip_schedule", s.get("clip_schedule", "constant"), "no clip schedule in PPOTrainer's config (the exported "
           "clip_epsilon stays constant)", "constant")  # fmt: skip
    x.drop("kl_early_stop", s["kl_early_stop"], "PPOTrainer has no KL early stop", 0.0)
    x.drop("recurrent", s.get("recurrent", ""), "the exported networks are feed-forward MLPs (no LSTM / GRU core)", "")
    x.drop("kl_estimator", s.get("kl_estimator", "k1"), "ClipPPOLoss logs kl_approx as mean(-log r)", "k1")
    if s["normalize_advantage"] and s.get("advantage_norm_scope") == "rollout":
        x.approximated.append("advantage_norm_scope = 'rollout': ClipPPOLoss standardises each minibatch's advantages, "
                              "not the whole rollout's")  # fmt: skip
    if s["clip_value"] and s.get("value_clip_mode") == "clipped":
        x.approximated.append("value_clip_mode = 'clipped': ClipPPOLoss takes the larger of the clipped and unclipped "
                              "value errors")  # fmt: skip


def _a2c(x: Export) -> None:
    s = x.s
    policy, value = _rollout_loop(x)
    x.group("loss", "loss", "a2c")
    x.cfg["loss"] = {"actor_network": policy, "critic_network": value, "entropy_coeff": s["entropy_coeff"],
                     "critic_coeff": s["critic_coeff"], "loss_critic_type": s["loss_critic_type"]}  # fmt: skip
    x.trainer("a2c", optim_steps_per_batch=None, num_epochs=1, gamma=s["gamma"], lmbda=s["lmbda"],
              episode_reward_key="reward_sum", **x.clip(s["max_grad_norm"]))  # fmt: skip
    _unstandardised(x, "A2CLoss")


def _reinforce(x: Export) -> None:
    s = x.s
    policy, value = _rollout_loop(x)
    x.group("loss", "loss", "reinforce")
    x.cfg["loss"] = {"actor_network": policy, "critic_network": value, "loss_critic_type": s["loss_critic_type"]}
    # the trainer's GAE with lambda = 1 is rlplug's TD(1) estimator: Monte-Carlo returns, bootstrapped at the cut
    x.trainer("reinforce", optim_steps_per_batch=None, num_epochs=1, gamma=s["gamma"], lmbda=1.0,
              episode_reward_key="reward_sum", **x.clip(s["max_grad_norm"]))  # fmt: skip
    x.drop("baseline", s["advantage_baseline"], "ReinforceTrainer's GAE always subtracts the critic's value", True)
    _unstandardised(x, "ReinforceLoss")


def _unstandardised(x: Export, loss: str) -> None:
    x.drop("normalize_advantage", x.s["normalize_advantage"], f"the trainer's GAE does not standardise the advantages and "
           f"{loss} has no option to", False)  # fmt: skip


def _rollout_loop(x: Export) -> tuple[str, str]:
    """The on-policy part every rollout algorithm's export shares: the policy and value models, the envs, the collector
    of whole batches, the buffer of one batch, the optimiser, and what no on-policy trainer config holds."""
    s = x.s
    if x.discrete:
        # TorchRL has no discrete policy model config (reference §8.3): TorchRL's own classes, by _target_
        network = x.network("policy_network", x.obs_dim, x.act_dim)
        policy = x.custom_model("policy_model", {
            "_target_": "torchrl.modules.ProbabilisticActor",
            "module": {"_target_": "tensordict.nn.TensorDictModule", "module": network, "in_keys": ["observation"],
                       "out_keys": ["logits"]},
            "in_keys": ["logits"], "out_keys": ["action"],
            "distribution_class": {"_target_": "hydra.utils.get_class", "path": "torchrl.modules.OneHotCategorical"},
            "return_log_prob": True,
        })  # fmt: skip
    else:
        policy = x.tanh_normal_policy()
        x.approximated.append(f"initial_log_std = {s['initial_log_std']!r}: TorchRL's tanh_normal model (the only "
                              "continuous policy config) has a state-dependent scale and squashes actions with tanh, "
                              "where rlplug's on-policy cells use a Normal with a learned state-independent log std")  # fmt: skip
    value = x.value_model("value_model", with_action=False)
    x.environment()
    x.collector(policy, s["frames_per_batch"], x.recipe.steps, 0, partial=False)
    x.replay_buffer(s["frames_per_batch"], s["minibatch_size"], "without_replacement")
    x.cfg["replay_buffer"]["sampler"] = {"drop_last": True, "shuffle": True}
    if s.get("optimizer") == "rmsprop":
        x.group("optimizer", "optimizer", "rmsprop")
        x.cfg["optimizer"] = {"lr": s["lr"], "alpha": s["rmsprop_alpha"], "eps": s["rmsprop_eps"]}
    else:
        x.optimizer(s["lr"])
    x.drop("lr_schedule", s["lr_schedule"], "no KL-adaptive or linear learning-rate schedule in TorchRL's on-policy "
           "trainer configs (the exported lr stays constant)", "constant")  # fmt: skip
    x.drop("normalize_observations", s["normalize_observations"], "no running observation normaliser in the exported env",
           False)  # fmt: skip
    x.drop("normalize_values", s["normalize_values"], "the trainer's GAE has no value normalisation", False)
    x.drop("use_sde", s.get("use_sde", False), GSDE_DROPPED, False)
    return policy, value


GSDE_DROPPED = "TorchRL's trainer configs have no gSDE: the exported policy explores with its own Gaussian samples"


def _sac(x: Export) -> None:
    s = x.s
    _soft_actor_critic(x, "sac", 1, {"num_qvalue_nets": s["num_qvalue_nets"], "loss_function": s["loss_function"]},
                       {"gamma": s["gamma"]})  # fmt: skip


def _tqc(x: Export) -> None:
    """SAC's trainer config with TorchRL's TQC loss config: one critic network of ``n_quantiles`` outputs, which the
    loss stacks ``n_critics`` times (rlplug's TorchRL cell builds the same loss)."""
    s = x.s
    _soft_actor_critic(x, "tqc", s["n_quantiles"], {"num_qvalue_nets": s["n_critics"],
                       "top_quantiles_to_drop_per_net": s["top_quantiles_to_drop_per_net"]})  # fmt: skip
    x.drop("gamma", s["gamma"], "TorchRL's TQC loss config has no gamma: its TD(0) target keeps the default 0.99", 0.99)


def _soft_actor_critic(x: Export, loss: str, critic_outputs: int, critics: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
    """TorchRL's SAC trainer config over the loss config ``loss`` (``sac``, ``tqc``): a tanh-normal policy, a critic of
    ``critic_outputs`` values, the entropy settings; ``critics`` and ``extra`` are the loss's other fields."""
    s = x.s
    policy = x.tanh_normal_policy()
    qvalue = x.value_model("qvalue_model", with_action=True, outputs=critic_outputs)
    x.environment()
    frames, optim_steps = x.offpolicy_schedule()
    x.collector(policy, frames, x.recipe.steps, s["learning_starts"], partial=True)
    x.replay_buffer(s["buffer_size"], s["batch_size"], "random")
    _single_optimizer(x, {"actor_lr": s["actor_lr"], "critic_lr": s["critic_lr"], "alpha_lr": s["alpha_lr"]})
    x.group("loss", "loss", loss)
    x.cfg["loss"] = {"actor_network": policy, "qvalue_network": qvalue, **critics, "alpha_init": s["alpha_init"],
                     "fixed_alpha": s["fixed_alpha"], "target_entropy": _target_entropy(x, s["target_entropy"]),
                     **(extra or {})}  # fmt: skip
    x.target_updater()
    x.trainer("sac", target_net_updater="${target_net_updater}", optim_steps_per_batch=optim_steps,
              episode_reward_key="reward_sum", **x.clip(s["grad_norm_clip"]))  # fmt: skip
    x.offpolicy_common()
    x.drop("exploration_noise", s.get("exploration_noise"), "SACTrainer samples the policy's own distribution only", None)
    x.drop("use_sde", s.get("use_sde", False), GSDE_DROPPED, False)


def _dqn(x: Export) -> None:
    s = x.s
    network = x.network("qvalue_network", x.obs_dim, x.act_dim)
    qvalue = x.model("qvalue_model", "qvalue", {"network": network, "in_keys": ["observation"],
                                                "out_keys": ["action_value"], "action_space": "one-hot"})  # fmt: skip
    x.environment()
    frames, optim_steps = x.offpolicy_schedule()
    # the trainer builds the exploration policy (the Q actor + EGreedyModule) and hands it to the collector
    x.collector(qvalue, frames, x.recipe.steps, s["learning_starts"], partial=True)
    del x.cfg["collector"]["policy"]
    x.replay_buffer(s["buffer_size"], s["batch_size"], "random")
    x.optimizer(s["lr"])
    x.group("loss", "loss", "dqn")
    # partial: the trainer passes its own Q network, so the collector's policy and the trained network are one module
    x.cfg["loss"] = {"loss_function": s["loss_function"], "double_dqn": s["double_dqn"], "delay_value": True,
                     "action_space": "one-hot", "gamma": s["gamma"], "_partial_": True}  # fmt: skip
    x.target_updater()
    x.trainer("dqn", value_network=qvalue, target_net_updater="${target_net_updater}", optim_steps_per_batch=optim_steps,
              eps_init=s["eps_init"], eps_end=s["eps_end"], annealing_num_steps=max(1, s["annealing_num_steps"]),
              episode_reward_key="reward_sum", **x.clip(s["max_grad_norm"]))  # fmt: skip
    x.approximated.append(f"annealing_num_steps = {s['annealing_num_steps']}: TorchRL's DQNTrainer anneals epsilon by "
                          f"the frames collected, once per batch ({frames} frames at a time), rlplug at every step")  # fmt: skip
    if s.get("lr_scheduler"):
        x.dropped.append(f"lr_scheduler = {s['lr_scheduler']!r} ({s.get('lr_scheduler_kwargs')}): DQNTrainer's config "
                         "has no learning-rate scheduler (the exported lr stays constant)")  # fmt: skip
    x.drop("dueling", s.get("dueling", False), "TorchRL's config names a plain MLP Q network; the exported one has no "
           "value and advantage layers", False)  # fmt: skip
    x.drop("n_step", s.get("n_step", 1), "DQNTrainer's config samples one-step transitions; the exported targets are "
           "one-step TD", 1)  # fmt: skip
    x.offpolicy_common()


def _td3(x: Export) -> None:
    s = x.s
    _deterministic_actor_critic(x, num_qvalue_nets=2, policy_noise=s["policy_noise"], noise_clip=s["noise_clip"])
    if s["policy_delay"] > 1:
        x.approximated.append(f"policy_delay = {s['policy_delay']}: TD3Trainer soft-updates the targets after every "
                              "optimiser step, rlplug's TD3 after every delayed actor step")  # fmt: skip


def _ddpg(x: Export) -> None:
    """DDPG as TorchRL's TD3 trainer and ``TD3Loss`` with one critic, no target smoothing and no policy delay: the same
    losses as ``DDPGLoss`` with target actor and critic (rlplug's DDPG loss), stepped as rlplug's DDPG steps them (the
    critic, then the actor against the updated critic, each with its own Adam). TorchRL's DDPGTrainer cannot be used:
    it takes no exploration module and copies the trained actor's weights into the collector's policy by key, so
    the collector's policy must be the bare actor."""
    _deterministic_actor_critic(x, num_qvalue_nets=1, policy_noise=0.0, noise_clip=0.0)
    x.notes.append(f"DDPG on TorchRL {TORCHRL_VERSION}'s TD3 trainer: TD3Loss with num_qvalue_nets = 1, "
                   "policy_noise = 0,\nnoise_clip = 0 and policy_update_delay = 1 is DDPG's update (one critic, no "
                   "target smoothing, no\npolicy delay). TorchRL's DDPGTrainer takes no exploration module: its "
                   "collector would act without noise.")  # fmt: skip


def _deterministic_actor_critic(x: Export, num_qvalue_nets: int, policy_noise: float, noise_clip: float) -> None:
    """TD3's trainer config: a tanh-bounded deterministic actor, Q-networks, the exploration module and two Adams."""
    s = x.s
    low, high = x.bounds
    network = x.network("policy_network", x.obs_dim, x.act_dim)
    # a deterministic tanh-bounded actor from TorchRL's classes (no model config builds one)
    policy = x.custom_model("policy_model", {
        "_target_": "tensordict.nn.TensorDictSequential",
        "_args_": [
            {"_target_": "tensordict.nn.TensorDictModule", "module": network, "in_keys": ["observation"],
             "out_keys": ["param"]},
            {"_target_": "torchrl.modules.TanhModule", "in_keys": ["param"], "out_keys": ["action"], "low": low,
             "high": high},
        ],
    })  # fmt: skip
    qvalue = x.value_model("qvalue_model", with_action=True)
    x.environment()
    frames, optim_steps = x.offpolicy_schedule()
    x.collector(policy, frames, x.recipe.steps, s["learning_starts"], partial=True)
    del x.cfg["collector"]["policy"]  # the trainer passes the actor followed by its exploration module
    x.replay_buffer(s["buffer_size"], s["batch_size"], "random")
    for name, lr in (("optimizer_actor", s["actor_lr"]), ("optimizer_critic", s["critic_lr"])):
        x.group("optimizer", name, "adam")  # TD3Trainer's two optimisers, over the actor's and the critics' parameters
        x.cfg[name] = {"lr": lr}
    x.group("loss", "loss", "td3")
    # partial, as TD3TrainerConfig requires: the trainer passes the networks and the env's action spec
    x.cfg["loss"] = {"num_qvalue_nets": num_qvalue_nets, "policy_noise": policy_noise, "noise_clip": noise_clip,
                     "loss_function": s["loss_function"], "_partial_": True}  # fmt: skip
    x.target_updater()
    x.trainer("td3", optimizer=None, optimizer_actor="${optimizer_actor}", optimizer_critic="${optimizer_critic}",
              actor_network=policy, qvalue_network=qvalue, exploration_module=_exploration(x),
              target_net_updater="${target_net_updater}", optim_steps_per_batch=optim_steps,
              policy_update_delay=s["policy_delay"], value_estimator_gamma=s["gamma"], **x.clip(s["grad_norm_clip"]))
    x.offpolicy_common()


def _exploration(x: Export) -> dict[str, Any] | None:
    """rlplug's Gaussian exploration as the module rlplug's TorchRL cell builds: ``AdditiveGaussianModule`` with std
    ``exploration_std`` (in action units) scaled by ``sigma``, the schedule's scale."""
    s = x.s
    if s["exploration_noise"] != "gaussian":
        x.drop("exploration_noise", s["exploration_noise"], "only Gaussian exploration is exported (the collector acts "
               "without noise)")  # fmt: skip
        return None
    low, high = x.bounds
    start, end, steps = s["exploration_scale_start"], s["exploration_scale_end"], s["exploration_decay_steps"]
    if steps and start != end:
        x.dropped.append(f"exploration_decay_steps = {steps}: TD3Trainer never steps the exploration module's "
                         f"annealing, so its scale stays at sigma_init = {start!r}")  # fmt: skip
    return {"_target_": "torchrl.modules.AdditiveGaussianModule",
            "spec": {"_target_": "torchrl.data.Bounded", "low": low, "high": high, "shape": [x.act_dim]},
            "std": s["exploration_std"], "sigma_init": start, "sigma_end": end,
            "annealing_num_steps": max(1, steps)}  # fmt: skip


def _iql(x: Export) -> None:
    s = x.s
    policy = x.tanh_normal_policy()
    qvalue = x.value_model("qvalue_model", with_action=True)
    value = x.value_model("value_model", with_action=False)
    x.group("loss", "loss", "iql")
    x.cfg["loss"] = {"actor_network": policy, "qvalue_network": qvalue, "value_network": value,
                     "num_qvalue_nets": s["num_qvalue_nets"], "loss_function": s["loss_function"],
                     "temperature": s["temperature"], "expectile": s["expectile"], "gamma": s["gamma"]}  # fmt: skip
    _offline(x, policy, {"actor_lr": s["actor_lr"], "critic_lr": s["critic_lr"], "value_lr": s["value_lr"]})
    x.trainer("iql", target_net_updater="${target_net_updater}", optim_steps_per_batch=s["log_every"],
              **x.clip(s["grad_norm_clip"]))  # fmt: skip


def _cql(x: Export) -> None:
    s = x.s
    policy = x.tanh_normal_policy()
    qvalue = x.value_model("qvalue_model", with_action=True)
    x.group("loss", "loss", "cql")
    x.cfg["loss"] = {"actor_network": policy, "qvalue_network": qvalue, "loss_function": s["loss_function"],
                     "alpha_init": s["alpha_init"], "fixed_alpha": s["fixed_alpha"],
                     "target_entropy": _target_entropy(x, s["target_entropy"]), "temperature": s["temperature"],
                     "min_q_weight": s["min_q_weight"], "num_random": s["num_random"],
                     "deterministic_backup": s["deterministic_backup"], "gamma": s["gamma"]}  # fmt: skip
    _offline(x, policy, {"actor_lr": s["actor_lr"], "critic_lr": s["critic_lr"], "alpha_lr": s["alpha_lr"]})
    x.trainer("cql", target_net_updater="${target_net_updater}", optim_steps_per_batch=s["log_every"],
              **x.clip(s["grad_norm_clip"]))  # fmt: skip


def _offline(x: Export, policy: str, lrs: dict[str, float]) -> None:
    """The parts IQL and CQL share: TorchRL's trainers for them are collector-driven, so the replay buffer starts as
    the dataset and each batch of ``log_every`` optimiser steps first collects one online frame per env."""
    s = x.s
    x.environment()
    updates = x.recipe.steps
    batches = max(1, -(-updates // s["log_every"]))
    x.collector(policy, x.recipe.num_envs, batches * x.recipe.num_envs, 0, partial=True)
    x.replay_buffer(None, s["batch_size"], "random", storage="tensor")
    _single_optimizer(x, lrs)
    x.target_updater()
    x.drop("eval_every", s.get("eval_every", 0), "TorchRL's trainer has no periodic deterministic evaluation", 0)
    x.drop("value_estimator", s.get("value_estimator", "td0"), "the exported loss keeps its default TD(0) target", "td0")


def _single_optimizer(x: Export, lrs: dict[str, float]) -> None:
    """TorchRL's trainer configs build one optimiser over ``loss.parameters()``: per-network rates become one."""
    rates = set(lrs.values())
    lr = lrs.get("critic_lr", max(rates))
    x.optimizer(lr)
    if len(rates) > 1:
        x.approximated.append(", ".join(f"{k} = {v!r}" for k, v in lrs.items()) + f": one Adam over every parameter "
                              f"at lr {lr!r} (the trainer config builds a single optimiser)")  # fmt: skip


def _target_entropy(x: Export, value: Any) -> float:
    """rlplug's ``"auto"`` is ``-action_dim``; given as a number, the loss needs no action spec to resolve it."""
    return float(-x.act_dim) if value == "auto" else float(value)


BUILDERS: dict[str, Callable[[Export], None]] = {
    "ppo": _ppo, "sac": _sac, "dqn": _dqn, "td3": _td3, "ddpg": _ddpg, "iql": _iql, "cql": _cql, "a2c": _a2c,
    "reinforce": _reinforce, "tqc": _tqc,
}  # fmt: skip
ON_POLICY_BUILDERS = ("ppo", "a2c", "reinforce")
"""The builders whose trainer steps once per collected batch, as rlplug's on-policy iteration does."""


def export_config(recipe: Any, settings: dict[str, Any], source: str, out: Path | None) -> str:
    """The YAML text of ``recipe`` (resolved, TorchRL ``settings`` translated) as a TorchRL trainer config. An offline
    recipe's dataset is written to ``OUT.dataset.pt`` beside ``out`` (needed: the config names that file)."""
    import yaml

    from ..envs.factory import probe_spaces

    check_exportable(recipe.algorithm, "torchrl", recipe.name)
    dataset_note = ""
    observation_space, action_space = probe_spaces(recipe.env, recipe.env_kwargs)
    if recipe.dataset:
        from ..data.datasets import read_info

        info = read_info(recipe.dataset)  # checked against the env, as rlplug's offline cells check it
        info.check_env(recipe.env, observation_space, action_space, f"recipe '{recipe.name}'")
    x = Export(recipe, settings, observation_space, action_space)
    if x.discrete and recipe.algorithm in ("sac", "td3", "ddpg", "iql", "cql", "tqc"):
        raise ExportError(f"--format hydra: TorchRL {TORCHRL_VERSION}'s {recipe.algorithm} trainer config builds a "
                          f"continuous-action loss; '{recipe.env}' has discrete actions")  # fmt: skip
    BUILDERS[recipe.algorithm](x)
    export_hooks(x, OFFLINE if recipe.dataset else ON_POLICY if recipe.algorithm in ON_POLICY_BUILDERS else OFF_POLICY)
    if recipe.dataset:
        if out is None:
            raise ExportError("--format hydra: an offline recipe needs --out FILE.yaml (its dataset is written beside it)")
        target = out.with_name(out.stem + ".dataset.pt").resolve()
        rows = write_ted_dataset(info, settings.get("action_margin", 0.0), action_space, target)
        x.cfg["replay_buffer"]["storage"]["storage"] = {"_target_": "torch.load", "f": str(target), "weights_only": False}
        dataset_note = (
            f"Offline dataset: rlplug dataset '{recipe.dataset}' ({rows} transitions) in TorchRL's transition layout at\n"
            f"{target} (written beside this file); it pre-fills the replay buffer (a TensorStorage over it).\n"
            f"TorchRL {TORCHRL_VERSION}'s {recipe.algorithm.upper()}Trainer has no offline-only mode: it always iterates "
            f"a collector and\nwrites what it collects into the buffer. Here each batch of {x.s['log_every']} optimiser "
            f"steps first collects {recipe.num_envs} online frame(s)\n(collector.total_frames = "
            f"{x.cfg['collector']['total_frames']} in all), written over the oldest dataset rows: offline up to that.")  # fmt: skip
    class Dumper(yaml.SafeDumper):  # every value written out where it is used: no &id001 anchors for shared lists
        def ignore_aliases(self, data: Any) -> bool:
            return True

    body = yaml.dump({"defaults": [*x.defaults, "_self_"], **x.cfg}, Dumper=Dumper, sort_keys=False,
                     default_flow_style=False, width=120)  # fmt: skip
    return x.header(source, dataset_note) + body


def write_ted_dataset(info: Any, action_margin: float, action_space: Any, target: Path) -> int:
    """``info``'s transitions as one ``[N]`` TensorDict in TorchRL's layout, saved with ``torch.save`` at ``target``;
    continuous actions pulled ``action_margin`` of the half range inside the bounds, as rlplug's offline cells do."""
    import torch
    from tensordict import TensorDict

    from ..data.datasets import load_data

    data = load_data(info)
    count = len(data["reward"])
    action = data["action"]
    if action_margin and action.is_floating_point():
        low = torch.as_tensor(action_space.low, dtype=torch.float32)
        high = torch.as_tensor(action_space.high, dtype=torch.float32)
        centre, half = (high + low) / 2, (high - low) / 2 * (1.0 - action_margin)
        action = torch.maximum(torch.minimum(action, centre + half), centre - half)
    column = {k: data[k].reshape(count, 1) for k in ("reward", "terminated", "truncated")}
    done = column["terminated"] | column["truncated"]
    nxt = {"observation": data["next_observation"].float(), "reward": column["reward"].float(), "done": done,
           "terminated": column["terminated"], "truncated": column["truncated"]}  # fmt: skip
    false = torch.zeros(count, 1, dtype=torch.bool)
    td = TensorDict({"observation": data["observation"].float(), "action": action.float(), "done": false,
                     "terminated": false.clone(), "truncated": false.clone(),
                     "next": TensorDict(nxt, batch_size=[count])}, batch_size=[count])  # fmt: skip
    target.parent.mkdir(parents=True, exist_ok=True)
    torch.save(td, target)
    return count
