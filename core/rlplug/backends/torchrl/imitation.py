"""GAIL's discriminator loss on TorchRL: upstream's ``GAILLoss`` as ``AdversarialImitation``'s loss callable.

``GAILLoss`` reads demonstrated pairs at ``observation`` / ``action`` and the policy's at ``collector_observation`` /
``collector_action``, and its discriminator writes ``d_logits`` (a probability: upstream applies ``BCELoss``).
"""

from __future__ import annotations

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.objectives import GAILLoss

from ...contract.hookspecs import Build


class GAILLossTerms:
    """``loss(discriminator, expert_obs, expert_act, policy_obs, policy_act)`` through one ``GAILLoss`` over ``discriminator``
    (the module the loss was made with: upstream's functional copy shares its parameters)."""

    def __init__(self, discriminator: nn.Module, use_grad_penalty: bool, gp_lambda: float) -> None:
        network = TensorDictModule(discriminator, in_keys=["observation", "action"], out_keys=["d_logits"])
        self.module = GAILLoss(network, use_grad_penalty=use_grad_penalty, gp_lambda=gp_lambda)

    def __call__(self, discriminator: nn.Module, expert_obs: torch.Tensor, expert_act: torch.Tensor, policy_obs: torch.Tensor,
                 policy_act: torch.Tensor) -> dict[str, torch.Tensor]:  # fmt: skip
        keys = self.module.tensor_keys
        batch = TensorDict({keys.expert_observation: expert_obs, keys.expert_action: expert_act,
                            keys.collector_observation: policy_obs, keys.collector_action: policy_act},
                           batch_size=[len(expert_obs)])  # fmt: skip
        out = self.module(batch)
        return {name: out[name] for name in out.keys()}


def gail_loss_terms(build: Build, discriminator: nn.Module) -> GAILLossTerms:
    """The recipe's ``GAILLoss`` (``use_grad_penalty``, ``gp_lambda``) over the cell's discriminator."""
    s = build.settings
    return GAILLossTerms(discriminator, bool(s["use_grad_penalty"]), float(s["gp_lambda"]))
