"""rlplug-bc: behaviour cloning, offline, on skrl and TorchRL.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
BC regresses a policy on the dataset's actions and nothing else (no reward, no critic, no target
network): Box actions through a deterministic ``tanh``-bounded policy and a distance (squared error by
default, CORL's BC), Discrete actions through a categorical policy's logits and cross-entropy. The
TorchRL cell uses ``torchrl.objectives.BCLoss``; skrl has no BC, so its cell is written from skrl's
models, memory and ``Agent`` base with the same maths.
"""

from __future__ import annotations

from rlplug import AlgorithmPlugin, AlgorithmSpec, LossSpec, Param, Search, both_backends
from rlplug.families import OFFLINE_PARAMS, OPTIMIZER_PARAMS

from .settings import skrl_settings, torchrl_settings

PARAMS = (
    Param("learning_rate", 1e-3, "Adam learning rate of the policy", bounds="(0, inf)", search=Search(1e-5, 1e-2, log=True)),
    Param("loss_function", "l2", "Box actions: the distance between the policy's action and the dataset's ('l2' squared "
          "error, 'l1', 'smooth_l1'); Discrete actions are always fitted by cross-entropy", choices=("l2", "l1", "smooth_l1")),
    Param("hidden_sizes", [256, 256], "hidden layer widths of the policy", item_type=int, item_bounds="[1, 8192]",
          length="[0, 16]"),
    Param("activation", "relu", "hidden activation", choices=("relu", "tanh", "elu")),
    Param("grad_norm_clip", 0.0, "gradient-norm clip of the policy update (0 disables)", bounds="[0, inf)"),
) + OFFLINE_PARAMS + OPTIMIZER_PARAMS

BC = AlgorithmSpec(
    name="bc",
    summary="Behaviour cloning: a policy regressed on the dataset's actions (offline imitation, no reward)",
    kind="offline",
    backends=both_backends("rlplug_bc", ("continuous", "discrete"), skrl_settings, torchrl_settings),
    params=PARAMS,
    api_version=1,
    default_loss="bc",
    losses=(
        LossSpec(
            name="bc",
            backend="skrl",
            factory="rlplug_bc.skrl_backend:make_bc_loss",
            terms=("loss_bc",),
            optimisers={"loss_bc": "policy"},
            doc="one 'policy' stage: distance(pi(s), a) for Box actions (loss_function), cross-entropy of the logits "
            "for Discrete ones; BCLoss's maths",
        ),
        LossSpec(
            name="bc",
            backend="torchrl",
            factory="rlplug_bc.torchrl_backend:make_bc_loss",
            terms=("loss_bc",),
            doc="torchrl.objectives.BCLoss: loss_function on a deterministic actor's action (Box), cross-entropy on "
            "the logits (Discrete)",
            describe="rlplug_bc.torchrl_backend:describe_bc_loss",
        ),
    ),
)

plugin = AlgorithmPlugin(BC, source="rlplug-bc")
