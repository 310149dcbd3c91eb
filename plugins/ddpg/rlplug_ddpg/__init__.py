"""rlplug-ddpg: Deep Deterministic Policy Gradient (DDPG) on skrl and TorchRL, derived from rlplug-td3.

DDPG is TD3 without its three additions: one critic instead of two, no target-policy smoothing, and
the policy and the targets updated on every gradient step (no policy delay). The declaration is TD3's
less those hyperparameters; the backends reuse TD3's cells and override only that. Cheap: no torch.
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin, LossSpec, both_backends
from rlplug_td3 import PARAMS as TD3_PARAMS
from rlplug_td3 import TD3

from .settings import TD3_ONLY, skrl_settings, torchrl_settings

PARAMS = tuple(
    replace(p, doc="Adam learning rate of the Q-network") if p.name == "critic_learning_rate" else p
    for p in TD3_PARAMS
    if p.name not in TD3_ONLY
)

DDPG = replace(
    TD3,
    name="ddpg",
    summary="Deep Deterministic Policy Gradient: one critic, policy and targets updated every step (TD3 without its additions)",
    backends=both_backends("rlplug_ddpg", ("continuous",), skrl_settings, torchrl_settings, distributed=True),
    params=PARAMS,
    default_loss="ddpg",
    backend_default_losses={"torchrl": "ddpg-lean"},  # DDPGLoss's values with fewer Python calls per update
    losses=(
        LossSpec(
            name="ddpg",
            backend="skrl",
            factory="rlplug_ddpg.skrl_backend:make_ddpg_loss",
            terms=("loss_critic", "loss_policy"),
            optimisers={"loss_critic": "critic", "loss_policy": "policy"},
            doc="skrl's DDPG math, staged (td3's loss with one critic and no smoothing): 'critic' (MSE to "
            "r + gamma * (1 - terminated) * Q'(s', pi'(s'))) and 'policy' (-Q(s, pi(s))) on every step",
        ),
        LossSpec(
            name="ddpg",
            backend="torchrl",
            factory="rlplug_ddpg.torchrl_backend:make_ddpg_loss",
            terms=("loss_qvalue", "loss_actor"),
            optimisers={"loss_qvalue": "critic", "loss_actor": "actor"},
            doc="torchrl.objectives.DDPGLoss (l2, target actor and critic): loss_value (logged as TD3's "
            "loss_qvalue), loss_actor and the target update on every step",
            describe="rlplug_ddpg.torchrl_backend:describe_ddpg_loss",
        ),
        LossSpec(
            name="ddpg-lean",
            backend="torchrl",
            factory="rlplug_ddpg.torchrl_backend:make_lean_ddpg_loss",
            terms=("loss_qvalue", "loss_actor"),
            optimisers={"loss_qvalue": "critic", "loss_actor": "actor"},
            doc="DDPGLoss's loss_value and loss_actor from plain tensors (no tensordict plumbing on the hot path): "
            "upstream's values, parameters and keys; falls back to DDPGLoss for TD(1)/TD(lambda)",
            describe="rlplug_ddpg.torchrl_backend:describe_ddpg_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(DDPG, source="rlplug-ddpg")
