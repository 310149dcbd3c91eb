"""What a Zoo entry means to Stable-Baselines3, without importing it: SB3's defaults for the keys an entry
leaves out, its strings (``lin_3e-4`` schedules, ``policy_kwargs`` such as ``dict(net_arch=[64, 64],
activation_fn=nn.ReLU)``) read safely, never ``eval``-ed.

The defaults are those of Stable-Baselines3 2.9.2's constructors (``PPO.__init__``, ``A2C.__init__``, ``SAC.__init__``, ``TD3.__init__``,
``DDPG.__init__``, ``DQN.__init__`` and the policies' ``net_arch`` / ``activation_fn``); the Zoo passes an entry's keys to them as
keyword arguments, so what an entry does not say is what SB3 does by default.
"""

from __future__ import annotations

import ast
from typing import Any

SB3_DEFAULTS: dict[str, dict[str, Any]] = {
    "ppo": {"learning_rate": 3e-4, "n_steps": 2048, "batch_size": 64, "n_epochs": 10, "gamma": 0.99, "gae_lambda": 0.95,
            "clip_range": 0.2, "ent_coef": 0.0, "vf_coef": 0.5, "max_grad_norm": 0.5,
            "policy_kwargs": "dict(net_arch=dict(pi=[64, 64], vf=[64, 64]), activation_fn=nn.Tanh, log_std_init=0.0)"},
    # A2C.__init__: n_steps 5, gae_lambda 1.0 (Monte-Carlo), RMSprop (alpha 0.99, eps rms_prop_eps), advantages as they are
    "a2c": {"learning_rate": 7e-4, "n_steps": 5, "gamma": 0.99, "gae_lambda": 1.0, "ent_coef": 0.0, "vf_coef": 0.5,
            "max_grad_norm": 0.5, "rms_prop_eps": 1e-5, "use_rms_prop": True, "normalize_advantage": False,
            "policy_kwargs": "dict(net_arch=dict(pi=[64, 64], vf=[64, 64]), activation_fn=nn.Tanh, log_std_init=0.0)"},
    "sac": {"learning_rate": 3e-4, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 256, "tau": 0.005,
            "gamma": 0.99, "train_freq": 1, "gradient_steps": 1, "ent_coef": "auto", "target_update_interval": 1,
            "target_entropy": "auto", "policy_kwargs": "dict(net_arch=[256, 256], activation_fn=nn.ReLU)"},
    "td3": {"learning_rate": 1e-3, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 256, "tau": 0.005,
            "gamma": 0.99, "train_freq": 1, "gradient_steps": 1, "policy_delay": 2, "target_policy_noise": 0.2,
            "target_noise_clip": 0.5, "noise_type": None, "policy_kwargs": "dict(net_arch=[400, 300], activation_fn=nn.ReLU)"},
    # DDPG.__init__ is TD3's with policy_delay=1, target_noise_clip=0.0 and n_critics=1 (unless policy_kwargs says)
    "ddpg": {"learning_rate": 1e-3, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 256, "tau": 0.005,
             "gamma": 0.99, "train_freq": 1, "gradient_steps": 1, "noise_type": None,
             "policy_kwargs": "dict(net_arch=[400, 300], activation_fn=nn.ReLU, n_critics=1)"},
    "dqn": {"learning_rate": 1e-4, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 32, "tau": 1.0,
            "gamma": 0.99, "train_freq": 4, "gradient_steps": 1, "target_update_interval": 10_000,
            "exploration_fraction": 0.1, "exploration_initial_eps": 1.0, "exploration_final_eps": 0.05,
            "max_grad_norm": 10.0, "policy_kwargs": "dict(net_arch=[64, 64], activation_fn=nn.ReLU)"},
    # sb3-contrib's QRDQN.__init__ and QRDQNPolicy (no gradient clipping unless max_grad_norm is given)
    "qrdqn": {"learning_rate": 5e-5, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 32, "tau": 1.0,
              "gamma": 0.99, "train_freq": 4, "gradient_steps": 1, "target_update_interval": 10_000,
              "exploration_fraction": 0.005, "exploration_initial_eps": 1.0, "exploration_final_eps": 0.01,
              "max_grad_norm": None, "policy_kwargs": "dict(net_arch=[64, 64], activation_fn=nn.ReLU, n_quantiles=200)"},
    # sb3-contrib's TRPO.__init__ (no entropy bonus, no gradient clip: the value network has its own Adam steps)
    "trpo": {"learning_rate": 1e-3, "n_steps": 2048, "batch_size": 128, "gamma": 0.99, "cg_max_steps": 15,
             "cg_damping": 0.1, "line_search_shrinking_factor": 0.8, "line_search_max_iter": 10, "n_critic_updates": 10,
             "gae_lambda": 0.95, "normalize_advantage": True, "target_kl": 0.01, "sub_sampling_factor": 1,
             "policy_kwargs": "dict(net_arch=dict(pi=[64, 64], vf=[64, 64]), activation_fn=nn.Tanh, log_std_init=0.0)"},
    # sb3-contrib's TQC.__init__ (SAC's, plus the truncation) and TQCPolicy (2 critics of 25 quantiles)
    "tqc": {"learning_rate": 3e-4, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 256, "tau": 0.005,
            "gamma": 0.99, "train_freq": 1, "gradient_steps": 1, "ent_coef": "auto", "target_update_interval": 1,
            "target_entropy": "auto", "top_quantiles_to_drop_per_net": 2,
            "policy_kwargs": "dict(net_arch=[256, 256], activation_fn=nn.ReLU, n_critics=2, n_quantiles=25)"},
    # sb3-contrib's CrossQ.__init__ (SAC's without tau and target_update_interval: no target networks; policy_delay 3)
    # and CrossQPolicy (a 256x256 policy, 1024x1024 critics with batch renormalisation, Adam betas (0.5, 0.999))
    "crossq": {"learning_rate": 1e-3, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 256, "gamma": 0.99,
               "train_freq": 1, "gradient_steps": 1, "ent_coef": "auto", "target_entropy": "auto", "policy_delay": 3,
               "policy_kwargs": "dict(net_arch=dict(pi=[256, 256], qf=[1024, 1024]), activation_fn=nn.ReLU, n_critics=2, "
                                "batch_norm_momentum=0.01, batch_norm_eps=0.001, renorm_warmup_steps=100000)"},
}  # fmt: skip
"""Per algorithm, SB3's constructor defaults that rlplug's own defaults would otherwise replace."""

SB3_BEHAVIOUR: dict[str, dict[str, tuple[Any, str]]] = {
    "a2c": {"minibatches": (1, "SB3's A2C makes one gradient step over each whole rollout")},
    "sac": {"squash_actions": (True, "SB3's SAC policy is a tanh-squashed Gaussian")},
    "tqc": {"squash_actions": (True, "sb3-contrib's TQC policy is SAC's tanh-squashed Gaussian")},
    "crossq": {"squash_actions": (True, "sb3-contrib's CrossQ policy is SAC's tanh-squashed Gaussian"),
               "adam_beta1": (0.5, "CrossQPolicy's Adam betas (0.5, 0.999) for the actor and the critics")},
    "dqn": {"td_loss": ("huber", "SB3's DQN minimises the smooth-L1 (Huber) TD loss")},
}
"""Hyperparameters that are not Zoo keys but SB3's fixed behaviour, set so the recipe does what SB3 does."""

ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh", "ELU": "elu"}
"""torch.nn activation classes (``nn.ReLU``) -> rlplug's activation names."""

OU_DT = 1e-2
"""SB3's ``OrnsteinUhlenbeckActionNoise`` time step: x += theta * (mu - x) * dt + sigma * sqrt(dt) * N(0, 1)."""


class Symbol(str):
    """A name in a Zoo string (``nn.ReLU``, ``th.nn.Tanh``), kept as its dotted text, never looked up."""

    @property
    def last(self) -> str:
        return self.rpartition(".")[2]


def read_python_literal(text: str) -> Any:
    """A Zoo string such as ``dict(net_arch=dict(pi=[64], vf=[64]), activation_fn=nn.ReLU)`` as plain data:
    numbers, strings, lists, ``dict(...)`` calls and dict literals; names become ``Symbol``s. Anything else
    (calls of other functions, arithmetic) raises ``ValueError`` naming the part."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        raise ValueError(f"{text!r} is not a Python expression ({err.msg})") from None
    return _value(tree.body)


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _value(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(item) for item in node.elts]
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        if all(kw.arg is not None for kw in node.keywords):
            return {kw.arg: _value(kw.value) for kw in node.keywords}
    if isinstance(node, ast.Name):
        return Symbol(node.id)
    if isinstance(node, ast.Attribute):
        base = _value(node.value)
        if isinstance(base, Symbol):
            return Symbol(f"{base}.{node.attr}")
    raise ValueError(f"cannot read {ast.unparse(node)!r} (only numbers, strings, lists, dict(...) and names such as nn.ReLU)")


def schedule(value: Any) -> tuple[float, bool]:
    """A Zoo rate: a number, or ``lin_X`` (the Zoo's linear schedule from X to 0 over the run) -> ``(X, linear)``."""
    if isinstance(value, str):
        kind, _, initial = value.partition("_")
        if kind != "lin":
            raise ValueError(f"{value!r} is neither a number nor a 'lin_X' schedule")
        return float(initial), True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is neither a number nor a 'lin_X' schedule")
    return float(value), False
