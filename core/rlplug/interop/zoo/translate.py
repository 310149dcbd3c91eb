"""One Zoo entry -> one rlplug recipe table, key by key.

Every key of the entry (and every SB3 default the entry leaves out, ``rlplug.interop.zoo.sb3``) is either translated to
the rlplug field that means the same thing or dropped with the reason; ``Translation`` keeps both lists, which
``rlplug show zoo:...`` prints and the recipe's description summarises. SB3's semantics behind each rule were
read from Stable-Baselines3 2.9.2's source (the comments cite the part); docs/zoo.md has the table.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import RecipeError
from ..translation import Row, value_text as _text
from .sb3 import ACTIVATIONS, OU_DT, SB3_BEHAVIOUR, SB3_DEFAULTS, Symbol, read_python_literal, schedule

ATARI_WRAPPER = "stable_baselines3.common.atari_wrappers.AtariWrapper"
TIME_LIMITS = ("gymnasium.wrappers.TimeLimit", "gymnasium.wrappers.time_limit.TimeLimit")
GSDE = "rlplug's gSDE is in sac, tqc, crossq, redq and ppo, not this algorithm"
IGNORED = {
    "callback": "SB3 callbacks are SB3 objects; rlplug's hooks come from recipes and plugins",
    "vec_env_wrapper": "an SB3 VecEnv wrapper; rlplug builds its own vector env",
    "monitor_kwargs": "SB3's Monitor options; rlplug logs episodes itself",
    "device": "a device is chosen per run (rlplug train --device)",
    "verbose": "SB3's console output only", "tensorboard_log": "SB3's logging only",
    "stats_window_size": "SB3's logging only",
    "optimize_memory_usage": "SB3's replay memory layout; no effect on what is learned",
    "replay_buffer_class": "rlplug replays uniformly (no HerReplayBuffer or custom buffers)",
    "replay_buffer_kwargs": "rlplug replays uniformly (no HerReplayBuffer or custom buffers)",
    "use_sde": GSDE, "sde_sample_freq": GSDE, "use_sde_at_warmup": GSDE,
}  # fmt: skip


@dataclass
class Translation:
    """A Zoo entry translated: the recipe table and, key by key, what became of it."""

    ref: str
    algorithm: str
    env: str
    entry: str
    """The Zoo entry read: the environment id, or ``atari`` (the Zoo's defaults for every ALE game)."""
    file: str
    table: dict[str, Any] = field(default_factory=dict)
    translated: list[Row] = field(default_factory=list)
    dropped: list[Row] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What ``rlplug show`` prints about the translation."""
        out = [f"translated from {self.file}, entry '{self.entry}' (Zoo key = value -> rlplug settings):"]
        for r in self.translated:
            if r.origin == "behaviour":
                out.append(f"  ({r.value}) -> {r.text}")
            else:
                out.append(f"  {r.key} = {_text(r.value)} -> {r.text}" + ("  [SB3 default]" if r.origin == "sb3" else ""))
        if self.dropped:
            out.append("dropped (no rlplug equivalent; the recipe trains without them):")
            out += [f"  {r.key} = {_text(r.value)}: {r.text}" + ("  [SB3 default]" if r.origin == "sb3" else "")
                    for r in self.dropped]  # fmt: skip
        return out


class _Context:
    """The entry being translated (SB3 defaults under it) and the recipe growing from it."""

    def __init__(self, translation: Translation, params: dict[str, Any], origins: dict[str, str], probe: Callable[[], Any]):
        self.t = translation
        self.p = params
        self.origins = origins
        self.fields: dict[str, Any] = {}
        self.hp: dict[str, Any] = {}
        self._probe = probe
        self._half_range: tuple[float, str] | None = None

    def _row(self, key: str, value: Any, text: str) -> Row:
        origin = self.origins.get(key) or self.origins.get(re.split(r"[., ]", key)[0], "zoo")
        return Row(key, value, text, origin)

    def field(self, key: str, value: Any, note: str = "", **fields: Any) -> None:
        self.fields.update(fields)
        self.ok(key, value, ", ".join(f"{k} = {_text(v)}" for k, v in fields.items()) + note)

    def hyper(self, key: str, value: Any, note: str = "", **hp: Any) -> None:
        self.hp.update(hp)
        self.ok(key, value, ", ".join(f"{k} = {_text(v)}" for k, v in hp.items()) + note)

    def ok(self, key: str, value: Any, text: str) -> None:
        self.t.translated.append(self._row(key, value, text))

    def drop(self, key: str, value: Any, reason: str) -> None:
        self.t.dropped.append(self._row(key, value, reason))

    # ---- quantities several keys need ----
    @property
    def n_envs(self) -> int:
        return int(self.p.get("n_envs", 1))

    def train_freq(self) -> tuple[int, str]:
        """SB3's ``train_freq``: ``N`` or ``(N, "step")`` counts vector-env steps (``collect_rollouts`` adds 1 per
        ``env.step``), ``(N, "episode")`` episodes."""
        value = self.p.get("train_freq", 1)
        if isinstance(value, (list, tuple)):
            return int(value[0]), str(value[1])
        return int(value), "step"

    def gradient_steps_per_round(self) -> int | None:
        """Gradient steps after each round of ``train_freq`` steps (``-1``: as many as transitions collected)."""
        every, unit = self.train_freq()
        steps = int(self.p.get("gradient_steps", 1))
        if steps < 0:
            return every * self.n_envs if unit == "step" else None
        return steps

    def utd_ratio(self) -> float | None:
        every, unit = self.train_freq()
        steps = self.gradient_steps_per_round()
        if unit != "step" or steps is None:
            return None
        return steps / (every * self.n_envs)

    def half_range(self) -> tuple[float, str]:
        """SB3 adds action noise to the action scaled to [-1, 1] (``policy.scale_action``): rlplug's noise is in the
        env's units, so SB3's sigma is multiplied by half the action range (``(high - low) / 2``)."""
        if self._half_range is None:
            try:
                space = self._probe()
                halves = {round(float(h - l) / 2, 6) for h, l in zip(space.high.ravel(), space.low.ravel(), strict=True)}
            except Exception as err:  # noqa: BLE001 -- any failure to make the env: say what was assumed
                self._half_range = (1.0, f" (assumes actions in [-1, 1]: the env cannot be made here: {err})")
            else:
                if len(halves) == 1 and all(math.isfinite(h) for h in halves):
                    half = halves.pop()
                    self._half_range = (half, f" (SB3's {{}} x {half:g}, half the action range)" if half != 1.0 else "")
                else:
                    self._half_range = (1.0, " (the action dimensions have different ranges: SB3's value kept as is)")
        return self._half_range

    def scaled(self, value: float) -> tuple[float, str]:
        half, note = self.half_range()
        return value * half, note.replace("{}", _text(value)) if "{}" in note else note


# ---- keys every algorithm shares ---------------------------------------------------------------------


def _n_timesteps(c: _Context, key: str, value: Any) -> None:
    c.field(key, value, steps=int(float(value)))


def _n_envs(c: _Context, key: str, value: Any) -> None:
    c.field(key, value, num_envs=int(value))


def _policy(c: _Context, key: str, value: Any) -> None:
    encoders = {"CnnPolicy": "nature_cnn", "MultiInputPolicy": "multi_input"}
    if value == "MlpPolicy":
        c.ok(key, value, "the mlp encoder (rlplug's default for flat observations)")
    elif value in encoders:
        c.field(key, value, " (SB3's NatureCNN / CombinedExtractor)", encoder=encoders[value])
    else:
        c.drop(key, value, "a custom policy class; rlplug builds its own models")


def _gamma(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, gamma=float(value))


def _frame_stack(c: _Context, key: str, value: Any) -> None:
    c.field(key, value, frame_stack=int(value))


def _env_kwargs(c: _Context, key: str, value: Any) -> None:
    if isinstance(value, dict):
        c.field(key, value, env_kwargs=dict(value))
    else:
        c.drop(key, value, "not a table of keyword arguments")


def _seed(c: _Context, key: str, value: Any) -> None:
    c.field(key, value, seed=int(value))


def _env_wrapper(c: _Context, key: str, value: Any) -> None:
    """The Zoo's ``env_wrapper``: a class path, or a list of paths / ``{path: kwargs}``."""
    for item in value if isinstance(value, list) else [value]:
        name, kwargs = (next(iter(item.items())) if isinstance(item, dict) and len(item) == 1 else (item, {}))
        kwargs = dict(kwargs or {})
        label = f"{key} {str(name).rpartition('.')[2]}"
        if name == ATARI_WRAPPER:
            # SB3's AtariWrapper: noop reset (30), MaxAndSkip(4), EpisodicLife, FireReset, 84x84 grey, reward clip
            life = bool(kwargs.pop("terminal_on_life_loss", True))
            defaults = {"noop_max": 30, "frame_skip": 4, "screen_size": 84, "clip_reward": True}
            other = {k: v for k, v in kwargs.items() if defaults.get(k, object()) != v}
            c.field(label, kwargs or True, " (AtariPreprocessing: 30 no-op resets, frame skip 4, 84x84 grey, rewards "
                    "clipped in training)", atari=True, terminal_on_life_loss=life)  # fmt: skip
            c.drop(f"{label} (FireResetEnv)", True, "SB3 presses FIRE after each reset in games that need it; rlplug's "
                   "Atari preprocessing does not (the agent learns to press it)")  # fmt: skip
            if other:
                c.drop(f"{label} options", other, "rlplug's Atari preprocessing is fixed at SB3's defaults")
        elif name in TIME_LIMITS and set(kwargs) <= {"max_episode_steps"} and "max_episode_steps" in kwargs:
            c.field(label, kwargs, time_limit=int(kwargs["max_episode_steps"]))
        elif isinstance(name, str) and "." in name:
            # any other Gymnasium wrapper: the recipe field ``wrappers`` imports it by path and applies it where
            # the Zoo does (right above gym.make); a module not installed here is refused when the env is made
            module, _, attribute = name.rpartition(".")
            entry = {"wrapper": f"{module}:{attribute}", **({"kwargs": kwargs} if kwargs else {})}
            c.fields.setdefault("wrappers", []).append(entry)
            c.ok(label, kwargs or name, f"wrappers += {_text(entry)}")
        else:
            c.drop(label, kwargs or name, f"wrapper '{name}' is not a module path (module.Class)")


def _normalize(c: _Context, key: str, value: Any) -> None:
    """SB3's ``VecNormalize`` (norm_obs and norm_reward both true by default; the Zoo sets its gamma to the
    algorithm's, ``ExperimentManager._preprocess_normalization``). A string is a dict read as data."""
    if isinstance(value, str):
        try:
            value = read_python_literal(value)
        except ValueError as err:
            c.drop(key, value, str(err))
            return
    if value is False:
        c.ok(key, value, "no normalisation, as rlplug's default")
        return
    options = dict(value) if isinstance(value, dict) else {}
    obs, reward = bool(options.pop("norm_obs", True)), bool(options.pop("norm_reward", True))
    parts: list[str] = []
    if obs:
        if c.t.algorithm in ("ppo", "a2c", "trpo"):
            c.hp["normalize_observations"] = True
            parts.append("normalize_observations = true (running mean/std; VecNormalize clips at 10, skrl's scaler at 5)")
        else:
            c.drop(f"{key} (norm_obs)", True, f"rlplug's {c.t.algorithm} has no observation normalisation")
    if reward:
        c.fields["normalize_reward"] = True
        parts.append("normalize_reward = true (gymnasium NormalizeReward with the algorithm's gamma, training only)")
    if parts:
        c.ok(key, value, ", ".join(parts))
    elif not obs:
        c.ok(key, value, "no normalisation, as rlplug's default")
    if options:
        c.drop(f"{key} options", options, "VecNormalize's other options have no rlplug field")


def _policy_kwargs(c: _Context, key: str, value: Any) -> None:
    """SB3 merges ``policy_kwargs`` over the policy's defaults; the SB3 defaults here hold those defaults."""
    defaults = read_python_literal(SB3_DEFAULTS[c.t.algorithm]["policy_kwargs"])
    if c.p.get("policy") == "CnnPolicy" and c.t.algorithm in ("ppo", "dqn", "qrdqn"):
        defaults["net_arch"] = []  # SB3's PPO, DQN and QR-DQN put the heads straight on NatureCNN's features
    given: dict[str, Any] = {}
    if c.origins.get(key) == "zoo":
        try:
            given = read_python_literal(value) if isinstance(value, str) else value
        except ValueError as err:
            c.drop(key, value, str(err))
            given = {}
        if not isinstance(given, dict):
            c.drop(key, value, "not a dict of policy options")
            given = {}
    for name, item in {**defaults, **given}.items():
        sub = f"{key}.{name}"
        c.origins[sub] = "zoo" if name in given else "sb3"
        _policy_option(c, sub, name, item)


def _policy_option(c: _Context, key: str, name: str, value: Any) -> None:
    algo = c.t.algorithm
    if name == "net_arch":
        _net_arch(c, key, value)
    elif name == "activation_fn":
        if isinstance(value, Symbol) and value.last in ACTIVATIONS:
            c.hyper(key, value, activation=ACTIVATIONS[value.last])
        else:
            c.drop(key, value, f"rlplug's activations are {', '.join(f'nn.{a}' for a in ACTIVATIONS)}")
    elif name == "log_std_init":
        if algo in ("ppo", "a2c", "trpo") or algo in SDE_ALGORITHMS:
            c.hyper(key, value, initial_log_std=float(value))
        else:
            c.drop(key, value, f"SB3's {algo.upper()} uses it only with gSDE")
    elif name == "use_expln" and algo in SDE_ALGORITHMS:
        c.hyper(key, value, use_expln=bool(value))
    elif name == "full_std" and value is True:
        c.ok(key, value, "as rlplug's gSDE (one learned std per feature and action)")
    elif name == "clip_mean" and algo in SDE_ALGORITHMS and algo != "ppo" and float(value) == 2.0:
        c.ok(key, value, "as rlplug's gSDE for SAC's family (the pre-tanh mean clamped to [-2, 2])")
    elif name == "ortho_init":
        if value is False:
            c.ok(key, value, "rlplug initialises layers with PyTorch's defaults, as ortho_init=False asks")
        else:
            c.drop(key, value, "rlplug has no orthogonal initialisation (PyTorch's default init)")
    elif name == "n_critics" and algo in ("sac", "td3") and value == 2:
        c.ok(key, value, f"the twin critics of rlplug's {algo}")
    elif name == "n_quantiles" and algo in ("qrdqn", "tqc"):
        c.hyper(key, value, n_quantiles=int(value))
    elif name == "n_critics" and algo in ("tqc", "crossq"):
        c.hyper(key, value, n_critics=int(value))
    elif name in ("batch_norm_momentum", "batch_norm_eps", "renorm_warmup_steps") and algo == "crossq":
        c.hyper(key, value, **{name: int(value) if name == "renorm_warmup_steps" else float(value)})
    elif name == "batch_norm" and algo == "crossq" and value is True:
        c.ok(key, value, "rlplug's crossq critics always carry batch renormalisation")
    elif name == "n_critics" and algo == "ddpg" and value == 1:
        c.ok(key, value, "the one critic of rlplug's ddpg")
    elif name in ("use_expln", "full_std", "squash_output", "clip_mean"):
        c.drop(key, value, GSDE)
    elif name in ("optimizer_class", "optimizer_kwargs"):
        c.drop(key, value, "rlplug's optimiser is torch's Adam or RMSprop (the optimizer hyperparameter; SB3's "
               "RMSpropTFLike puts epsilon inside the square root)")  # fmt: skip
    else:
        c.drop(key, value, f"policy option '{name}' has no rlplug field")


def _net_arch(c: _Context, key: str, value: Any) -> None:
    """``[64, 64]`` (both networks), ``dict(pi=..., vf=...)`` / ``dict(pi=..., qf=...)``, or SB3 1.x's
    ``[dict(pi=..., vf=...)]``. rlplug's cells give the actor and the critic the same ``hidden_sizes``."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        value = value[0]
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        c.hyper(key, value, hidden_sizes=list(value))
        return
    critic = "qf" if c.t.algorithm in ("sac", "td3", "ddpg", "tqc", "crossq") else "vf"
    if isinstance(value, dict) and set(value) <= {"pi", critic} and "pi" in value:
        pi, other = list(value["pi"]), list(value.get(critic, value["pi"]))
        if pi == other:
            c.hyper(key, value, hidden_sizes=pi)
        else:
            c.hyper(key, value, f" (the policy's; rlplug's {c.t.algorithm} gives the critic the same)", hidden_sizes=pi)
            c.drop(f"{key}.{critic}", other, "rlplug's cells use one hidden_sizes for actor and critic")
        return
    c.drop(key, value, "rlplug's networks are one list of hidden sizes (no shared layers)")


SDE_ALGORITHMS = ("sac", "tqc", "crossq", "ppo")
"""The Zoo's algorithms whose rlplug cells take gSDE (``use_sde``, ``sde_sample_freq``; off-policy: ``use_sde_at_warmup``)."""


def _sde_key(name: str, kind: type) -> Callable[[_Context, str, Any], None]:
    def translate_key(c: _Context, key: str, value: Any) -> None:
        c.hyper(key, value, **{name: kind(value)})

    return translate_key


SDE = {"use_sde": _sde_key("use_sde", bool), "sde_sample_freq": _sde_key("sde_sample_freq", int)}
SDE_OFF_POLICY = {**SDE, "use_sde_at_warmup": _sde_key("use_sde_at_warmup", bool)}


def _ignored(c: _Context, key: str, value: Any) -> None:
    if key in ("use_sde", "use_sde_at_warmup") and value is False or key == "sde_sample_freq" and value == -1:
        c.ok(key, value, "off, as in rlplug")
        return
    c.drop(key, value, IGNORED[key])


# ---- PPO (stable_baselines3/ppo/ppo.py) ----------------------------------------------------------------


def _ppo_learning_rate(c: _Context, key: str, value: Any) -> None:
    rate, linear = schedule(value)
    # SB3 recomputes a linear schedule from progress_remaining (1 -> 0 over the run) at every update
    c.hyper(key, value, learning_rate=rate, lr_schedule="linear" if linear else "constant")


def _n_steps(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, " (per environment)", rollout_steps=int(value))


def _batch_size_ppo(c: _Context, key: str, value: Any) -> None:
    """SB3's ``batch_size`` is the minibatch size: ``RolloutBuffer.get(batch_size)`` yields slices of it."""
    rollout = int(c.p.get("n_steps", 2048)) * c.n_envs
    size = int(value)
    if rollout % size == 0:
        c.hyper(key, value, f" ({rollout} transitions per rollout / {size})", minibatches=rollout // size)
    else:
        count = max(1, round(rollout / size))
        c.hyper(key, value, f" (SB3 makes minibatches of {size} from {rollout} transitions, the last one smaller; "
                f"rlplug {count} of {rollout // count})", minibatches=count)  # fmt: skip


def _n_epochs(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, epochs=int(value))


def _gae_lambda(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, gae_lambda=float(value))


def _clip_range(c: _Context, key: str, value: Any) -> None:
    clip, linear = schedule(value)
    # PPO.train evaluates clip_range(progress_remaining) once per update, as rlplug's ClipSchedule does
    c.hyper(key, value, clip_ratio=clip, clip_schedule="linear" if linear else "constant")


def _clip_range_vf(c: _Context, key: str, value: Any) -> None:
    if value is None or isinstance(value, (int, float)) and value < 0:
        c.hyper(key, value, value_clip=0.0)
        return
    clip, linear = schedule(value)
    c.hyper(key, value, value_clip=clip)
    if linear:
        c.drop(f"{key} (schedule)", value, "rlplug's value clip is constant")


def _ent_coef_ppo(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, entropy_coef=float(value))


def _vf_coef(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, value_coef=float(value))


def _max_grad_norm(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, max_grad_norm=0.0 if value is None else float(value))  # None: no clip (sb3-contrib's QRDQN)


def _target_kl(c: _Context, key: str, value: Any) -> None:
    if value is None:
        c.hyper(key, value, kl_early_stop=0.0)
        return
    # SB3 stops the update when approx_kl > 1.5 * target_kl (PPO.train)
    c.hyper(key, value, " (SB3 stops at 1.5 x target_kl)", kl_early_stop=1.5 * float(value))


def _normalize_advantage(c: _Context, key: str, value: Any) -> None:
    if value:
        c.ok(key, value, "advantages are standardised, as rlplug's PPO does")
    else:
        c.drop(key, value, "rlplug's PPO always standardises advantages")


# ---- A2C (stable_baselines3/a2c/a2c.py) ------------------------------------------------------------------


def _normalize_advantage_a2c(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, normalize_advantage=bool(value))


def _use_rms_prop(c: _Context, key: str, value: Any) -> None:
    """SB3's A2C with ``use_rms_prop`` steps ``th.optim.RMSprop(alpha=0.99, eps=rms_prop_eps, weight_decay=0)``;
    without it the policy's Adam with eps 1e-5 (rlplug's Adam keeps torch's 1e-8)."""
    if value:
        eps = float(c.p.get("rms_prop_eps", 1e-5))
        c.hyper(f"{key}, rms_prop_eps", [value, eps], " (SB3's alpha 0.99)", optimizer="rmsprop", rmsprop_alpha=0.99,
                rmsprop_eps=eps)  # fmt: skip
    else:
        c.hyper(key, value, " (torch's eps 1e-8; SB3's Adam has 1e-5)", optimizer="adam")


def _rms_prop_eps(c: _Context, key: str, value: Any) -> None:
    if not c.p.get("use_rms_prop", True):
        c.drop(key, value, "use_rms_prop is false: SB3 ignores it")
    # else translated together with use_rms_prop


# ---- TRPO (sb3_contrib/trpo/trpo.py) ---------------------------------------------------------------------


def _sub_sampling_factor(c: _Context, key: str, value: Any) -> None:
    if int(value) == 1:
        c.ok(key, value, "the policy step reads the whole rollout, as rlplug's trpo does")
    else:
        c.drop(key, value, "rlplug's trpo steps the policy on the whole rollout (no sub-sampling)")


def _trpo_key(name: str, kind: type) -> Callable[[_Context, str, Any], None]:
    def translate(c: _Context, key: str, value: Any) -> None:
        c.hyper(key, value, **{name: kind(value)})

    return translate


# ---- off-policy (stable_baselines3/common/off_policy_algorithm.py, sac/, td3/, dqn/) ---------------------


def _buffer_size(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, buffer_size=int(value))


def _learning_starts(c: _Context, key: str, value: Any) -> None:
    # SB3 acts uniformly at random until num_timesteps (transitions over all envs) reaches learning_starts
    c.hyper(key, value, learning_starts=int(value))


def _batch_size(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, batch_size=int(value))


def _tau(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, target_update="soft", tau=float(value))


def _train_freq(c: _Context, key: str, value: Any) -> None:
    every, unit = c.train_freq()
    if unit == "step":
        c.hyper(key, value, " (vector-env steps between rounds of gradient steps)", train_every=every)
    else:
        c.drop(key, value, f"rlplug trains every N steps, not every N {unit}s: train_every = 1")


def _gradient_steps(c: _Context, key: str, value: Any) -> None:
    ratio = c.utd_ratio()
    if ratio is None:
        c.drop(key, value, "gradient steps per episode have no rlplug equivalent: utd_ratio = 1")
        return
    every, _ = c.train_freq()
    c.hyper(key, value, f" ({c.gradient_steps_per_round()} gradient steps per {every * c.n_envs} transitions)",
            utd_ratio=ratio)  # fmt: skip


def _n_step_returns(c: _Context, key: str, value: Any) -> None:
    if int(value) == 1:
        c.ok(key, value, "one-step TD targets, as rlplug's value_estimator = 'td0'")
    elif c.t.algorithm in ("dqn", "qrdqn"):
        c.hyper(key, value, n_step=int(value))
    else:
        c.drop(key, value, f"n-step replay returns exist in rlplug's dqn and qrdqn only; its {c.t.algorithm} uses one-step (td0) targets")


def _lr_both(*names: str) -> Callable[[_Context, str, Any], None]:
    def translate(c: _Context, key: str, value: Any) -> None:
        rate, linear = schedule(value)
        c.hyper(key, value, **{name: rate for name in names})
        if linear:
            c.drop(f"{key} (schedule)", value, f"rlplug's {c.t.algorithm} has no learning-rate schedule: {_text(rate)} throughout")

    return translate


def _ent_coef_sac(c: _Context, key: str, value: Any) -> None:
    """``auto`` / ``auto_0.1``: alpha learned from 1.0 / 0.1 (``SAC._setup_model``); a number: a fixed alpha."""
    if isinstance(value, str) and value.startswith("auto"):
        initial = float(value.partition("_")[2] or 1.0)
        c.hyper(key, value, learn_alpha=True, initial_alpha=initial)
    else:
        c.hyper(key, value, learn_alpha=False, initial_alpha=float(value))


def _target_entropy(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, " ('auto': -action_dim, as SB3)" if value == "auto" else "",
            target_entropy=value if value == "auto" else float(value))  # fmt: skip


def _target_update_interval_sac(c: _Context, key: str, value: Any) -> None:
    # SAC.train: polyak update when gradient_step % target_update_interval == 0
    c.hyper(key, value, " (gradient steps)", target_update_period=int(value))


def _noise_std(c: _Context, key: str, value: Any) -> None:
    if c.p.get("noise_type") is None:
        c.drop(key, value, "no noise_type: SB3 ignores it")
    # else translated together with noise_type


def _noise_type(c: _Context, key: str, value: Any) -> None:
    """The Zoo's action noise (``NormalActionNoise`` / ``OrnsteinUhlenbeckActionNoise`` with sigma = noise_std)."""
    algo = c.t.algorithm
    if value is None:
        if algo in ("td3", "ddpg"):
            c.hyper(key, value, " (SB3 adds no action noise unless asked)", exploration_std=0.0)
        return
    std = float(c.p.get("noise_std", 0.1))
    kind = str(value).strip()
    if "ornstein-uhlenbeck" in kind:
        # SB3's OU steps with dt = 0.01: theta * dt mean reversion and sigma * sqrt(dt) per step
        sigma, note = c.scaled(std * math.sqrt(OU_DT))
        c.hyper(f"{key}, noise_std", [kind, std], f" (SB3's OU with dt = {OU_DT}: theta x dt, sigma x sqrt(dt)){note}",
                exploration_noise="ou", exploration_std=sigma, ou_theta=0.15 * OU_DT)  # fmt: skip
    elif "normal" in kind and algo in ("td3", "ddpg"):
        sigma, note = c.scaled(std)
        c.hyper(f"{key}, noise_std", [kind, std], note, exploration_noise="gaussian", exploration_std=sigma)
    else:
        c.drop(f"{key}, noise_std", [kind, std], f"rlplug's {algo} has no '{kind}' action noise")


def _policy_delay(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, policy_delay=int(value))


def _target_policy_noise(c: _Context, key: str, value: Any) -> None:
    noise, note = c.scaled(float(value))
    c.hyper(key, value, note, target_policy_noise=noise)


def _target_noise_clip(c: _Context, key: str, value: Any) -> None:
    clip, note = c.scaled(float(value))
    c.hyper(key, value, note, target_noise_clip=clip)


# ---- DQN (stable_baselines3/dqn/dqn.py) ------------------------------------------------------------------


def _dqn_learning_rate(c: _Context, key: str, value: Any) -> None:
    rate, linear = schedule(value)
    c.hyper(key, value, learning_rate=rate, lr_schedule="linear" if linear else "constant")


def _dqn_tau(c: _Context, key: str, value: Any) -> None:
    if float(value) == 1.0:
        c.hyper(key, value, " (a copy)", target_update="hard")
    else:
        c.hyper(key, value, target_update="soft", tau=float(value))


def _target_update_interval_dqn(c: _Context, key: str, value: Any) -> None:
    """SB3's DQN counts the interval in env steps: ``_on_step`` updates every ``max(interval // n_envs, 1)``
    vector steps, during collection, so between two rounds of gradient steps the target moves at most once
    that matters. rlplug counts updater (gradient) steps."""
    per_round = c.gradient_steps_per_round()
    every, unit = c.train_freq()
    if per_round is None or unit != "step":
        c.drop(key, value, "an interval in env steps with episode-based training has no rlplug equivalent")
        return
    transitions = max(int(value) // c.n_envs, 1) * c.n_envs
    round_transitions = every * c.n_envs
    if transitions <= round_transitions:
        c.hyper(key, value, f" (env steps, at most once per round of {per_round} gradient steps)", target_update_period=per_round)
    else:
        period = max(1, round(transitions * per_round / round_transitions))
        c.hyper(key, value, f" (env steps: {transitions} transitions x {per_round}/{round_transitions} gradient steps each)",
                target_update_period=period)  # fmt: skip


def _exploration_fraction(c: _Context, key: str, value: Any) -> None:
    # SB3's epsilon falls linearly over that fraction of the total timesteps (transitions over all envs)
    steps = int(float(value) * int(float(c.p["n_timesteps"])))
    c.hyper(key, value, f" (x n_timesteps {int(float(c.p['n_timesteps']))})", epsilon_decay_steps=steps)


def _top_quantiles_to_drop(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, top_quantiles_to_drop_per_net=int(value))


def _exploration_initial_eps(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, epsilon_start=float(value))


def _exploration_final_eps(c: _Context, key: str, value: Any) -> None:
    c.hyper(key, value, epsilon_end=float(value))


COMMON: dict[str, Callable[[_Context, str, Any], None]] = {
    "n_timesteps": _n_timesteps, "n_envs": _n_envs, "policy": _policy, "gamma": _gamma, "frame_stack": _frame_stack,
    "env_kwargs": _env_kwargs, "env_wrapper": _env_wrapper, "normalize": _normalize, "policy_kwargs": _policy_kwargs,
    "seed": _seed, **{key: _ignored for key in IGNORED},
}  # fmt: skip
OFF_POLICY: dict[str, Callable[[_Context, str, Any], None]] = {
    "buffer_size": _buffer_size, "learning_starts": _learning_starts, "batch_size": _batch_size, "tau": _tau,
    "train_freq": _train_freq, "gradient_steps": _gradient_steps, "n_steps": _n_step_returns,
}  # fmt: skip
TRANSLATORS: dict[str, dict[str, Callable[[_Context, str, Any], None]]] = {
    "ppo": {**COMMON, "learning_rate": _ppo_learning_rate, "n_steps": _n_steps, "batch_size": _batch_size_ppo,
            "n_epochs": _n_epochs, "gae_lambda": _gae_lambda, "clip_range": _clip_range, "clip_range_vf": _clip_range_vf,
            "ent_coef": _ent_coef_ppo, "vf_coef": _vf_coef, "max_grad_norm": _max_grad_norm, "target_kl": _target_kl,
            "normalize_advantage": _normalize_advantage, **SDE},
    "a2c": {**COMMON, "learning_rate": _ppo_learning_rate, "n_steps": _n_steps, "gae_lambda": _gae_lambda,
            "ent_coef": _ent_coef_ppo, "vf_coef": _vf_coef, "max_grad_norm": _max_grad_norm,
            "normalize_advantage": _normalize_advantage_a2c, "use_rms_prop": _use_rms_prop, "rms_prop_eps": _rms_prop_eps},
    "sac": {**COMMON, **OFF_POLICY, "learning_rate": _lr_both("actor_learning_rate", "critic_learning_rate", "alpha_learning_rate"),
            "ent_coef": _ent_coef_sac, "target_entropy": _target_entropy,
            "target_update_interval": _target_update_interval_sac, "noise_type": _noise_type, "noise_std": _noise_std,
            **SDE_OFF_POLICY},
    "td3": {**COMMON, **OFF_POLICY, "learning_rate": _lr_both("actor_learning_rate", "critic_learning_rate"),
            "policy_delay": _policy_delay, "target_policy_noise": _target_policy_noise,
            "target_noise_clip": _target_noise_clip, "noise_type": _noise_type, "noise_std": _noise_std},
    "ddpg": {**COMMON, **OFF_POLICY, "learning_rate": _lr_both("actor_learning_rate", "critic_learning_rate"),
             "noise_type": _noise_type, "noise_std": _noise_std},
    "dqn": {**COMMON, **OFF_POLICY, "learning_rate": _dqn_learning_rate, "tau": _dqn_tau,
            "target_update_interval": _target_update_interval_dqn, "exploration_fraction": _exploration_fraction,
            "exploration_initial_eps": _exploration_initial_eps, "exploration_final_eps": _exploration_final_eps,
            "max_grad_norm": _max_grad_norm},
}  # fmt: skip
TRANSLATORS["trpo"] = {  # sb3-contrib's TRPO: PPO's rollout keys, the critic's passes and the trust region
    **COMMON, "learning_rate": _ppo_learning_rate, "n_steps": _n_steps, "batch_size": _batch_size_ppo,
    "gae_lambda": _gae_lambda, "n_critic_updates": _n_epochs, "normalize_advantage": _normalize_advantage_a2c,
    "target_kl": _trpo_key("max_kl", float), "cg_damping": _trpo_key("cg_damping", float),
    "cg_max_steps": _trpo_key("cg_steps", int), "line_search_max_iter": _trpo_key("line_search_steps", int),
    "line_search_shrinking_factor": _trpo_key("line_search_shrink", float), "sub_sampling_factor": _sub_sampling_factor,
}  # fmt: skip
TRANSLATORS["qrdqn"] = TRANSLATORS["dqn"]  # sb3-contrib's QRDQN takes DQN's keys (n_quantiles: in policy_kwargs)
TRANSLATORS["tqc"] = {**TRANSLATORS["sac"], "top_quantiles_to_drop_per_net": _top_quantiles_to_drop}  # sb3-contrib's TQC
TRANSLATORS["crossq"] = {  # sb3-contrib's CrossQ: SAC's keys less the target networks', plus the policy delay
    **{key: translate_key for key, translate_key in TRANSLATORS["sac"].items() if key not in ("tau", "target_update_interval")},
    "policy_delay": _policy_delay,
}
"""Per algorithm rlplug translates, each Zoo key's translation."""


def translate(translation: Translation, zoo_entry: dict[str, Any], probe_action_space: Callable[[], Any]) -> Translation:
    """Fill ``translation.table`` (recipe fields and hyperparameters) and its rows from one Zoo entry."""
    algo = translation.algorithm
    handlers = TRANSLATORS[algo]
    entry = copy.deepcopy(zoo_entry)
    if "n_timesteps" not in entry:
        raise RecipeError(f"recipe '{translation.ref}': the Zoo entry has no n_timesteps")
    defaults = {k: v for k, v in SB3_DEFAULTS[algo].items() if k not in entry}
    params = {**entry, **defaults}
    origins = {**{k: "zoo" for k in entry}, **{k: "sb3" for k in defaults}}
    c = _Context(translation, params, origins, probe_action_space)
    for key, value in params.items():
        handler = handlers.get(key)
        if handler is None:
            c.drop(key, value, f"not a Stable-Baselines3 {algo.upper()} setting rlplug knows")
            continue
        try:
            handler(c, key, value)
        except (TypeError, ValueError, IndexError, KeyError) as err:
            c.drop(key, value, f"cannot be read: {err}")
    for name, (value, why) in SB3_BEHAVIOUR.get(algo, {}).items():
        c.hp[name] = value
        translation.translated.append(Row(name, why, f"{name} = {_text(value)}", "behaviour"))
    translation.table = {"algorithm": algo, "env": translation.env, **c.fields, "hyperparameters": c.hp}
    return translation
