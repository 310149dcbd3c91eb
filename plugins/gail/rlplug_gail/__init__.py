"""rlplug-gail: Generative Adversarial Imitation Learning on skrl and TorchRL, with PPO's cells as the policy learner.

GAIL (Ho and Ermon, 2016) trains a discriminator ``D(s, a)`` to tell a dataset's demonstrated pairs from the policy's,
and trains the policy with PPO on the reward ``-log(1 - D(s, a))`` instead of the env's. The recipe names the env the
policy acts in and, as ``dataset``, the demonstrations (``AlgorithmSpec.demonstrations``). The declaration is PPO's
(feed-forward policies, no gSDE) plus the discriminator's parameters; the backends reuse PPO's cells and add the
discriminator's step between a rollout and its advantages (``rlplug.backends.common.imitation``). Cheap: no torch.
"""

from __future__ import annotations

from dataclasses import replace

from rlplug import AlgorithmPlugin, Param
from rlplug.families import RECURRENT_PARAMS, SDE_PARAMS, clipped_family
from rlplug_ppo import PARAMS as PPO_PARAMS
from rlplug_ppo import PPO

from .settings import skrl_settings, torchrl_settings

DISCRIMINATOR_PARAMS = (
    Param("discriminator_hidden_sizes", [64, 64], "hidden layer widths of the discriminator D(s, a) (the policy's activation)",
          item_type=int, item_bounds="[1, 8192]", length="[0, 16]", search=([64, 64], [256, 256])),
    Param("discriminator_lr", 3e-4, "Adam's learning rate for the discriminator", bounds="(0, 1]", search=(1e-4, 3e-4, 1e-3)),
    Param("discriminator_steps", 5, "discriminator gradient steps after each rollout, before its rewards are relabelled",
          bounds="[1, 10000]", search=(1, 5, 20)),
    Param("discriminator_batch_size", 256, "rollout pairs, and as many demonstrated pairs, in each discriminator step "
          "(drawn with replacement)", bounds="[1, 10**7]"),
    Param("use_grad_penalty", False, "add TorchRL GAILLoss's gradient penalty gp_lambda * (|grad D| - 1)^2 at mixed pairs"),
    Param("gp_lambda", 10.0, "weight of the gradient penalty (with use_grad_penalty)", bounds="[0, inf)"),
)

PARAMS = (*(p for p in PPO_PARAMS if p not in RECURRENT_PARAMS and p not in SDE_PARAMS), *DISCRIMINATOR_PARAMS)

GAIL = replace(
    PPO,
    name="gail",
    summary="Generative Adversarial Imitation Learning: PPO on a discriminator's reward, from a dataset of demonstrations",
    params=PARAMS,
    demonstrations=True,
    **clipped_family(
        "rlplug_gail", skrl_settings, torchrl_settings, loss="clip", describe="rlplug_ppo.torchrl_backend:describe_clip_loss",
        skrl_doc="ppo's clipped loss on the discriminator's rewards (the discriminator's own loss: TorchRL's GAILLoss written out)",
        torchrl_doc="torchrl.objectives.ClipPPOLoss (ppo's) on the rewards of a discriminator trained with torchrl.objectives.GAILLoss",
    ),
)

plugin = AlgorithmPlugin(GAIL, source="rlplug-gail")
