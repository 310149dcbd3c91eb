"""skrl's clipped PPO minibatch loss, once for PPO and MAPPO."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from skrl.models.torch import Model

from .recurrent import model_inputs


def clipped_ppo_terms(
    policy: Model,
    value: Model,
    batch: Mapping[str, torch.Tensor],
    ratio_clip: float,
    value_clip: float,
    entropy_loss_scale: float,
    value_loss_scale: float,
    policy_inputs: Mapping[str, Any] | None = None,
) -> dict[str, torch.Tensor]:
    """skrl's PPO / MAPPO minibatch loss, once for both: clipped surrogate, (optionally clipped) scaled
    MSE value loss, entropy bonus, and the approximate KL.

    ``batch`` holds preprocessed ``observations`` and ``states`` and the rollout's ``actions``,
    ``log_prob``, ``advantages``, ``values`` and ``returns`` (a recurrent agent's, the models' stored states
    too: ``model_inputs``). Upstream's order of operations, so a Gaussian policy's ``rsample`` draws the
    same random numbers as skrl's own update. ``policy_inputs``: more inputs of the policy (RPO's ``alpha``).
    """
    inputs = {**model_inputs(batch, "policy"), **(policy_inputs or {}), "taken_actions": batch["actions"]}
    _, outputs = policy.act(inputs, role="policy")
    log_ratio = outputs["log_prob"] - batch["log_prob"]
    with torch.no_grad():
        approx_kl = ((torch.exp(log_ratio) - 1) - log_ratio).mean()

    if entropy_loss_scale:
        loss_entropy = -entropy_loss_scale * policy.get_entropy(role="policy").mean()
    else:
        loss_entropy = torch.zeros((), device=log_ratio.device)

    ratio = torch.exp(log_ratio)
    surrogate = batch["advantages"] * ratio
    surrogate_clipped = batch["advantages"] * torch.clip(ratio, 1.0 - ratio_clip, 1.0 + ratio_clip)
    loss_policy = -torch.min(surrogate, surrogate_clipped).mean()

    predicted_values, _ = value.act(model_inputs(batch, "value"), role="value")
    if value_clip > 0:
        predicted_values = batch["values"] + torch.clip(predicted_values - batch["values"], min=-value_clip, max=value_clip)
    loss_value = value_loss_scale * torch.nn.functional.mse_loss(batch["returns"], predicted_values)
    return {"loss_policy": loss_policy, "loss_value": loss_value, "loss_entropy": loss_entropy, "approx_kl": approx_kl}
