"""rlplug-dt: Decision Transformer (Chen et al., 2021), offline, and Online Decision Transformer (Zheng et al., 2022),
offline pre-training then online fine-tuning, on skrl and TorchRL.

This module is the plugin's entry point: it declares the algorithm and stays cheap (no torch).
A causal transformer reads the last ``context_length`` steps of an episode as (return-to-go, observation, action)
tokens and is trained to predict each step's action, on segments of the dataset's episodes: behaviour cloning
conditioned on the return still to come. Evaluation asks for ``target_return`` (by default the dataset's best episode
return) and counts it down by the rewards received. The TorchRL cell uses ``torchrl.objectives.DTLoss``; skrl has no
DT, so its cell is written from skrl's ``Model`` and ``Agent`` base with the same maths. Both use rlplug's
transformer (``rlplug.backends.common.sequence``): TorchRL's wraps Hugging Face's GPT-2. Box actions only.

``odt`` is the same transformer with a stochastic head (a tanh-squashed Gaussian) trained on the log-likelihood of the
segments' actions plus an entropy bonus whose temperature is tuned (``torchrl.objectives.OnlineDTLoss``), first on the
dataset alone, then from ``online_after`` updates on with an episode of sampled actions played and added to the
segments every ``online_round_updates`` updates (``rlplug.backends.common.sequence.OnlineFineTuning``).
"""

from __future__ import annotations

from rlplug import AlgorithmPlugin, AlgorithmSpec, AutoOrFloat, LossSpec, Param, Search, both_backends
from rlplug.families import OFFLINE_PARAMS, OPTIMIZER_PARAMS, adjusted

from .settings import odt_settings, skrl_settings, torchrl_settings

SHARED = (
    Param("learning_rate", 1e-4, "learning rate of Adam with decoupled weight decay (AdamW, DT's)", bounds="(0, inf)", search=Search(1e-5, 1e-3, log=True)),
    Param("weight_decay", 1e-4, "AdamW weight decay (DT's)", bounds="[0, inf)"),
    Param("warmup_steps", 1_000, "gradient updates over which the learning rate rises linearly from 0 (DT's warm-up)",
          bounds="[0, 10**9]"),
    Param("grad_norm_clip", 0.25, "gradient-norm clip of each update (DT's 0.25; 0 disables)", bounds="[0, inf)"),
    Param("context_length", 20, "steps of an episode the transformer reads (DT's K; segments lie inside one episode)",
          bounds="[1, 1024]", search=(10, 20, 30)),
    Param("embedding_dim", 128, "width of the token embeddings and of the transformer", bounds="[1, 4096]"),
    Param("n_layers", 3, "transformer blocks", bounds="[1, 64]"),
    Param("n_heads", 1, "attention heads (embedding_dim must be a multiple)", bounds="[1, 64]"),
    Param("dropout", 0.1, "dropout on embeddings, attention and MLPs while training (off when acting)", bounds="[0, 1)"),
    Param("max_episode_steps", 1_000, "timesteps the timestep embedding covers (later steps share the last)", bounds="[1, 10**6]"),
    Param("return_scale", 1_000.0, "returns-to-go are divided by this before they are embedded", bounds="(0, inf)"),
    Param("target_from", "dataset_best", "the return evaluation conditions on: the dataset's best episode return, or the "
          "value of target_return", choices=("dataset_best", "value")),
    Param("target_return", 0.0, "the return to ask for when target_from = 'value'", bounds="(-inf, inf)"),
)
PARAMS = (
    SHARED
    + (Param("loss_function", "l2", "distance between predicted and dataset actions (DTLoss's 'l2', 'l1', 'smooth_l1')",
             choices=("l2", "l1", "smooth_l1")),)  # fmt: skip
    + adjusted(OFFLINE_PARAMS, drop=("action_margin",), batch_size=64)
    + OPTIMIZER_PARAMS
)
ODT_PARAMS = (
    SHARED
    + (
        Param("initial_alpha", 0.1, "initial entropy temperature (ODT's init_temperature)", bounds="(0, inf)"),
        Param("alpha_learning_rate", 1e-4, "learning rate of the temperature (Adam, no warm-up)", bounds="(0, inf)"),
        AutoOrFloat("target_entropy", "auto", "entropy the tuned temperature steers the policy towards: 'auto' = -action_dim, or a number"),
        Param("online_after", 5_000, "offline updates before the online phase (the budget beyond them is online)", bounds="[0, 10**9]"),
        Param("online_round_updates", 300, "gradient updates after each episode played online (ODT's 300)", bounds="[1, 10**9]"),
        Param("online_buffer_episodes", 1_000, "episodes the segments hold (ODT's replay size): the dataset's best first, "
              "then each played episode replaces the oldest", bounds="[1, 10**9]"),
        Param("online_target_offset", 0.0, "added to the evaluation's target return when playing online (ODT asks for more "
              "online than it evaluates at: 2x on Hopper)", bounds="(-inf, inf)"),
    )
    + adjusted(OFFLINE_PARAMS, batch_size=64, action_margin=0.01)
    + OPTIMIZER_PARAMS
)

DT = AlgorithmSpec(
    name="dt",
    summary="Decision Transformer: a causal transformer predicting actions from returns-to-go, observations and actions",
    kind="offline",
    backends=both_backends("rlplug_dt", ("continuous",), skrl_settings, torchrl_settings),
    params=PARAMS,
    api_version=1,
    default_loss="dt",
    losses=(
        LossSpec(name="dt", backend="skrl", factory="rlplug_dt.skrl_backend:make_dt_loss", terms=("loss",),
                 optimisers={"loss": "policy"},
                 doc="one 'policy' stage: loss_function between the transformer's actions and the segments' (DTLoss's maths)"),
        LossSpec(name="dt", backend="torchrl", factory="rlplug_dt.torchrl_backend:make_dt_loss", terms=("loss",),
                 doc="torchrl.objectives.DTLoss: loss_function between the actor's action_pred and the segments' actions",
                 describe="rlplug_dt.torchrl_backend:describe_dt_loss"),
    ),
)

ODT_TERMS = ("loss_log_likelihood", "loss_entropy", "loss_alpha")
ODT = AlgorithmSpec(
    name="odt",
    summary="Online Decision Transformer: a stochastic DT pre-trained on a dataset, then fine-tuned on episodes it plays",
    kind="offline",
    backends=both_backends("rlplug_dt.online", ("continuous",), odt_settings, odt_settings),
    params=ODT_PARAMS,
    api_version=1,
    default_loss="odt",
    losses=(
        LossSpec(name="odt", backend="skrl", factory="rlplug_dt.online.skrl_backend:make_odt_loss", terms=ODT_TERMS,
                 reported=("alpha", "entropy"), optimisers=dict.fromkeys(ODT_TERMS, "policy"),
                 doc="one 'policy' stage (transformer and temperature, one AdamW): OnlineDTLoss's maths written out"),
        LossSpec(name="odt", backend="torchrl", factory="rlplug_dt.online.torchrl_backend:make_odt_loss", terms=ODT_TERMS,
                 reported=("alpha", "entropy"), doc="torchrl.objectives.OnlineDTLoss on a TanhNormal actor over the transformer",
                 describe="rlplug_dt.online.torchrl_backend:describe_odt_loss"),
    ),
)

plugin = AlgorithmPlugin(DT, ODT, source="rlplug-dt")
