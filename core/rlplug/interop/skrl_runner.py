"""A skrl Runner YAML file (``models``, ``memory``, ``agent``, ``trainer``) -> an rlplug recipe, key by key.

skrl's Runner builds its agent from ``agent`` (the fields of ``PPO_CFG`` / ``SAC_CFG``), its models from the
instantiator DSL in ``models`` and a ``SequentialTrainer`` from ``trainer``. Every key is translated to the recipe
field or hyperparameter whose skrl setting is that key (``rlplug show NAME --backend skrl`` prints them back), or
dropped with the reason. The file is read with ``yaml.safe_load``; none of its strings is evaluated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import RecipeError
from ..recipes.fields import RECIPE_NAME
from ..cli.tables import to_toml
from .translation import Row, value_text

AGENTS = {"ppo": "ppo", "sac": "sac"}
"""skrl agent class (lower case) -> rlplug algorithm."""
ACTIVATIONS = ("tanh", "relu", "elu")
LOG_STD_BOUNDS = {"clip_log_std": True, "min_log_std": -20.0, "max_log_std": 2.0}
"""skrl's GaussianMixin clamp, which rlplug's skrl models keep."""
ROLES = {"ppo": {"policy": "ACTIONS", "value": "ONE"},
         "sac": {"policy": "ACTIONS", "critic_1": "ONE", "critic_2": "ONE", "target_critic_1": "ONE", "target_critic_2": "ONE"}}  # fmt: skip
LOGGING = "logging, checkpoints and progress output: rlplug's run directory and progress bar"


class _Translator:
    def __init__(self, algorithm: str, num_envs: int) -> None:
        self.algorithm = algorithm
        self.num_envs = num_envs
        self.fields: dict[str, Any] = {}
        self.hp: dict[str, Any] = {}
        self.translated: list[Row] = []
        self.dropped: list[Row] = []

    def hyper(self, key: str, value: Any, note: str = "", **hp: Any) -> None:
        self.hp.update(hp)
        self.ok(key, value, ", ".join(f"{k} = {value_text(v)}" for k, v in hp.items()) + note)

    def field(self, key: str, value: Any, note: str = "", **fields: Any) -> None:
        self.fields.update(fields)
        self.ok(key, value, ", ".join(f"{k} = {value_text(v)}" for k, v in fields.items()) + note)

    def ok(self, key: str, value: Any, text: str) -> None:
        self.translated.append(Row(key, value, text, "skrl"))

    def drop(self, key: str, value: Any, reason: str) -> None:
        self.dropped.append(Row(key, value, reason, "skrl"))

    def lines(self, source: str) -> list[str]:
        out = [f"translated from {source} (skrl Runner key = value -> rlplug settings):"]
        out += [f"  {r.key} = {value_text(r.value)} -> {r.text}" for r in self.translated]
        if self.dropped:
            out.append("dropped (no rlplug equivalent; the recipe trains without them):")
            out += [f"  {r.key} = {value_text(r.value)}: {r.text}" for r in self.dropped]
        return out


# ---- models ---------------------------------------------------------------------------------------------


def _models(t: _Translator, models: dict[str, Any]) -> None:
    roles = ROLES[t.algorithm]
    networks: dict[str, tuple[list[int], str]] = {}
    for key, value in models.items():
        where = f"models.{key}"
        if key == "separate":
            if value:
                t.ok(where, value, "separate networks per role, as rlplug's cells build them")
            elif t.algorithm == "ppo":
                t.drop(where, value, "rlplug's PPO builds separate policy and value networks (no shared trunk)")
            else:
                t.ok(where, value, "skrl's Runner shares a model only between a policy and a value; SAC's are separate")
        elif key in roles and isinstance(value, dict):
            network = _model(t, where, value, roles[key], policy=key == "policy")
            if network is not None:
                networks[key] = network
        else:
            t.drop(where, value, f"not a {t.algorithm.upper()} role ({', '.join(roles)})")
    if networks:
        (sizes, activation), *others = networks.values()
        t.hp.update(hidden_sizes=sizes, activation=activation)
        differ = [role for role, net in networks.items() if net != (sizes, activation)]
        for role in differ:
            t.drop(f"models.{role}.network", networks[role], f"rlplug's {t.algorithm} gives every network the same "
                   f"hidden_sizes and activation: {sizes}, {activation} (the first role's)")  # fmt: skip


def _model(t: _Translator, where: str, model: dict[str, Any], output: str, policy: bool) -> tuple[list[int], str] | None:
    network = None
    for key, value in model.items():
        sub = f"{where}.{key}"
        if key == "class":
            expected = ("GaussianMixin", "CategoricalMixin") if policy else ("DeterministicMixin",)
            if value in expected:
                t.ok(sub, value, "rlplug's " + ("stochastic policy" if policy else "deterministic critic"))
            else:
                t.drop(sub, value, f"rlplug's {t.algorithm} builds {' / '.join(expected)} models")
        elif key == "network":
            network = _network(t, sub, value, q_critic=output == "ONE" and t.algorithm == "sac")
        elif key == "output":
            if value == output:
                t.ok(sub, value, "the role's standard output")
            else:
                t.drop(sub, value, f"rlplug's models output {output}")
        elif key in LOG_STD_BOUNDS:
            if value == LOG_STD_BOUNDS[key]:
                t.ok(sub, value, "log std clamped to [-20, 2], as rlplug's skrl models")
            else:
                t.drop(sub, value, "rlplug's skrl models clamp log std to [-20, 2]")
        elif key == "initial_log_std" and t.algorithm == "ppo":
            t.hyper(sub, value, initial_log_std=float(value))
        elif key == "clip_actions":
            t.ok(sub, value, "rlplug's models do not clip; Box actions are clipped at the env (clip_actions = true)")
        elif key == "fixed_log_std" and not value:
            t.ok(sub, value, "a learned log std, as rlplug's")
        else:
            t.drop(sub, value, f"model option '{key}' has no rlplug field")
    return network


def _network(t: _Translator, where: str, layers: Any, q_critic: bool = False) -> tuple[list[int], str] | None:
    """One ``{name, input, layers, activations}`` block of plain widths over the observations (and the actions, for
    a Q critic)."""
    if not (isinstance(layers, list) and len(layers) == 1 and isinstance(layers[0], dict)):
        t.drop(where, layers, "rlplug's models are one MLP block (more blocks, or none, have no rlplug field)")
        return None
    block = layers[0]
    sizes, activation = block.get("layers"), block.get("activations", "tanh")
    if isinstance(activation, list) and len(set(activation)) == 1:
        activation = activation[0]
    problems = []
    inputs = ("concatenate([OBSERVATIONS,ACTIONS])", "concatenate([STATES,ACTIONS])") if q_critic else ("OBSERVATIONS", "STATES")
    if "".join(str(block.get("input", inputs[0])).split()) not in inputs:
        problems.append(f"input {block.get('input')!r} (rlplug: {inputs[0]})")
    if not (isinstance(sizes, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in sizes)):
        problems.append(f"layers {sizes!r} (rlplug: widths of linear layers)")
    if activation not in ACTIVATIONS:
        problems.append(f"activations {activation!r} (rlplug: {', '.join(ACTIVATIONS)})")
    extra = set(block) - {"name", "input", "layers", "activations"}
    if extra:
        problems.append(f"keys {sorted(extra)}")
    if problems:
        t.drop(where, layers, "no rlplug equivalent for " + "; ".join(problems))
        return None
    t.ok(where, layers, f"hidden_sizes = {sizes}, activation = {value_text(activation)}")
    return list(sizes), str(activation)


# ---- memory, agent, trainer ---------------------------------------------------------------------------------


def _memory(t: _Translator, memory: dict[str, Any]) -> None:
    for key, value in memory.items():
        where = f"memory.{key}"
        if key == "class":
            if value == "RandomMemory":
                t.ok(where, value, "rlplug's rollout / replay memory (skrl RandomMemory)")
            else:
                t.drop(where, value, "rlplug's cells build a RandomMemory")
        elif key == "memory_size" and t.algorithm == "ppo":
            if value < 0:
                t.ok(where, value, "the rollout (rollouts), as rlplug's")
            else:
                t.drop(where, value, "rlplug's PPO memory holds exactly one rollout")
        elif key == "memory_size":
            # skrl's memory_size is per environment; rlplug's buffer_size counts transitions over all of them
            t.hyper(where, value, f" (x {t.num_envs} environments)", buffer_size=int(value) * t.num_envs)
        else:
            t.drop(where, value, f"memory option '{key}' has no rlplug field")


def _scheduler(t: _Translator, agent: dict[str, Any]) -> None:
    name = agent.get("learning_rate_scheduler")
    kwargs = dict(agent.get("learning_rate_scheduler_kwargs") or {})
    key = "agent.learning_rate_scheduler"
    if name is None:
        if t.algorithm == "ppo":
            t.hyper(key, name, lr_schedule="constant")
        else:
            t.ok(key, name, "a constant learning rate, as rlplug's")
        if kwargs:
            t.drop(f"{key}_kwargs", kwargs, "ignored by skrl without a scheduler")
        elif f"{key}_kwargs".partition(".")[2] in agent:
            t.ok(f"{key}_kwargs", kwargs, "no scheduler options")
        return
    if name == "KLAdaptiveLR" and t.algorithm == "ppo":
        threshold = kwargs.pop("kl_threshold", 0.008)
        t.hyper(key, name, lr_schedule="kl_adaptive")
        t.hyper(f"{key}_kwargs.kl_threshold", threshold, kl_target=float(threshold))
        for other, value in kwargs.items():
            t.drop(f"{key}_kwargs.{other}", value, "rlplug's kl_adaptive schedule uses skrl's other defaults")
        return
    t.drop(key, name, f"rlplug's {t.algorithm} has no '{name}' schedule")


PPO_KEYS = {
    "rollouts": ("rollout_steps", int), "learning_epochs": ("epochs", int), "mini_batches": ("minibatches", int),
    "discount_factor": ("gamma", float), "gae_lambda": ("gae_lambda", float), "lambda": ("gae_lambda", float),
    "learning_rate": ("learning_rate", float), "grad_norm_clip": ("max_grad_norm", float),
    "ratio_clip": ("clip_ratio", float), "value_clip": ("value_clip", float),
    "entropy_loss_scale": ("entropy_coef", float), "value_loss_scale": ("value_coef", float),
    "kl_threshold": ("kl_early_stop", float), "time_limit_bootstrap": ("bootstrap_truncated", bool),
}  # fmt: skip
SAC_KEYS = {
    "batch_size": ("batch_size", int), "discount_factor": ("gamma", float), "grad_norm_clip": ("grad_norm_clip", float),
    "learn_entropy": ("learn_alpha", bool), "initial_entropy_value": ("initial_alpha", float),
}  # fmt: skip


def _agent(t: _Translator, agent: dict[str, Any]) -> None:
    plain = PPO_KEYS if t.algorithm == "ppo" else SAC_KEYS
    _scheduler(t, agent)
    random_steps = agent.get("random_timesteps", 0)
    for key, value in agent.items():
        where = f"agent.{key}"
        if key in plain:
            name, kind = plain[key]
            t.hyper(where, value, **{name: kind(value)})
        elif key in ("class", "learning_rate_scheduler", "learning_rate_scheduler_kwargs"):
            if key == "class":
                t.field(where, value, algorithm=t.algorithm)
        elif key == "experiment":
            t.drop(where, value, LOGGING)
        elif key in ("observation_preprocessor", "state_preprocessor", "value_preprocessor"):
            _preprocessor(t, where, key, value)
        elif key.endswith("_preprocessor_kwargs"):
            (t.ok if not value else t.drop)(where, value, "size and device are filled in by skrl" if not value
                                             else "rlplug's RunningStandardScaler takes skrl's default options")  # fmt: skip
        elif key == "rewards_shaper_scale":
            if value == 1.0:
                t.ok(where, value, "unscaled rewards, as rlplug's")
            else:
                t.drop(where, value, "rlplug has no fixed reward scale (normalize_reward = true scales by a running std)")
        elif key == "mixed_precision" and not value:
            t.ok(where, value, "full precision, as rlplug's")
        elif t.algorithm == "sac" and key == "learning_rate":
            rates = value if isinstance(value, list) else [value] * 3
            names = ("actor_learning_rate", "critic_learning_rate", "alpha_learning_rate")
            t.hyper(where, value, **{n: float(r) for n, r in zip(names, rates, strict=True)})
        elif t.algorithm == "sac" and key == "polyak":
            t.hyper(where, value, target_update="soft", tau=float(value))
        elif t.algorithm == "sac" and key == "gradient_steps":
            # skrl takes gradient_steps per vector-env step; rlplug counts per transition over all environments
            t.hyper(where, value, f" (per {t.num_envs} transitions)", utd_ratio=float(value) / t.num_envs)
        elif t.algorithm == "sac" and key == "target_entropy":
            t.hyper(where, value, target_entropy="auto" if value is None else float(value))
        elif t.algorithm == "sac" and key == "learning_starts":
            # rlplug's warm-up: uniformly random actions and no update over its first learning_starts transitions
            t.hyper(where, value, f" (x {t.num_envs} environments; actions are random until then)",
                    learning_starts=max(int(value), int(random_steps)) * t.num_envs)  # fmt: skip
        elif t.algorithm == "sac" and key == "random_timesteps":
            if value == agent.get("learning_starts", 0):
                t.ok(where, value, "the same warm-up as learning_starts, as rlplug's")
            else:
                t.drop(where, value, "rlplug acts at random exactly until learning_starts; it has no separate "
                       "random-action phase")  # fmt: skip
        elif t.algorithm == "ppo" and key in ("random_timesteps", "learning_starts") and not value:
            t.ok(where, value, "PPO acts with its policy from the first step, as rlplug's")
        else:
            t.drop(where, value, f"not a {t.algorithm.upper()}_CFG field rlplug translates")


def _preprocessor(t: _Translator, where: str, key: str, value: Any) -> None:
    if value is None:
        t.ok(where, value, "no preprocessing, as rlplug's default")
        return
    if value != "RunningStandardScaler":
        t.drop(where, value, "rlplug's preprocessor is skrl's RunningStandardScaler")
    elif key == "value_preprocessor" and t.algorithm == "ppo":
        t.hyper(where, value, normalize_values=True)
    elif key != "value_preprocessor" and t.algorithm == "ppo":
        t.hyper(where, value, normalize_observations=True)
    else:
        t.drop(where, value, f"rlplug's {t.algorithm} has no {key.replace('_', ' ')}")


def _trainer(t: _Translator, trainer: dict[str, Any]) -> None:
    for key, value in trainer.items():
        where = f"trainer.{key}"
        if key == "class":
            (t.ok if value == "SequentialTrainer" else t.drop)(
                where, value, "rlplug's training loop" if value == "SequentialTrainer" else "rlplug runs its own loop")
        elif key == "timesteps":
            # skrl's trainer counts vector-env steps; rlplug's steps count transitions over all environments
            t.field(where, value, f" (x {t.num_envs} environments)", steps=int(value) * t.num_envs)
        elif key in ("environment_info", "headless", "disable_progressbar", "close_environment_at_exit"):
            t.drop(where, value, LOGGING)
        elif key == "stochastic_evaluation":
            t.drop(where, value, "rlplug evaluates the deterministic policy")
        else:
            t.drop(where, value, f"trainer option '{key}' has no rlplug field")


# ---- the file ---------------------------------------------------------------------------------------------


def read_runner_file(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    try:
        import yaml
    except ImportError:
        raise RecipeError("reading a skrl Runner file needs PyYAML: pip install pyyaml") from None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecipeError(f"skrl Runner file {path} does not exist") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise RecipeError(f"skrl Runner file {path} cannot be read: {' '.join(str(err).split())}") from None
    if not isinstance(data, dict) or not isinstance(data.get("agent"), dict):
        raise RecipeError(f"skrl Runner file {path} has no 'agent' section (a skrl Runner file has models, memory, agent, trainer)")
    return data


def translate_runner(cfg: dict[str, Any], env: str, name: str, num_envs: int = 1, source: str = "") -> tuple[dict[str, Any], list[str]]:
    """``(recipe table, translation lines)`` for a skrl Runner config."""
    agent_class = str(cfg["agent"].get("class", ""))
    algorithm = AGENTS.get(agent_class.lower())
    if algorithm is None:
        raise RecipeError(f"{source}: agent class '{agent_class}' is not translated (rlplug reads skrl {', '.join(a.upper() for a in AGENTS)} Runner files)")
    if not RECIPE_NAME.fullmatch(name):
        raise RecipeError(f"--name {name!r} is not a recipe name (letters, digits and _ . + -, no spaces)")
    t = _Translator(algorithm, num_envs)
    sections = {"models": _models, "memory": _memory, "agent": _agent, "trainer": _trainer}
    for key, value in cfg.items():
        if key in sections and isinstance(value, dict):
            sections[key](t, value)
        elif key == "seed":
            if isinstance(value, int) and not isinstance(value, bool):
                t.field(key, value, seed=value)
            else:
                t.drop(key, value, "rlplug's seed is a whole number (skrl: none means random)")
        else:
            t.drop(key, value, "not a section of a single-agent skrl Runner file rlplug translates")
    if "steps" not in t.fields:
        raise RecipeError(f"{source}: the trainer section has no 'timesteps' (the step budget)")
    from ..envs.suites import reward_threshold

    target = reward_threshold(env)
    table = {"description": f"translated from the skrl Runner file {Path(source).name}" + (
             "" if target is not None else "; no target yet (Gymnasium names no reward_threshold)"),
             "algorithm": algorithm, "env": env, "backend": "skrl", "num_envs": num_envs, **t.fields,
             "target": target if target is not None else 0.0, "hyperparameters": t.hp}  # fmt: skip
    return table, t.lines(source)


def recipe_text(table: dict[str, Any], name: str, lines: list[str]) -> str:
    header = "".join(f"# {line}\n" for line in lines)
    hp = dict(table)
    hyper = hp.pop("hyperparameters")
    return f"{header}\n[recipes.{name}]\n{to_toml(hp)}\n\n[recipes.{name}.hyperparameters]\n{to_toml(hyper)}\n"
