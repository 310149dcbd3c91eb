"""The categorical projection both backends' targets use (imports torch: only the backend modules import it)."""

from __future__ import annotations

import torch


def project_onto_atoms(next_probs: torch.Tensor, rewards: torch.Tensor, discounts: torch.Tensor | float,
                       not_terminated: torch.Tensor, support: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """The distribution of ``r + discount * (1 - terminated) * z`` (``z ~ next_probs`` on ``support``), clipped to
    the support's ends and split between the two nearest atoms in proportion to their distance: ``[batch, atoms]``.

    TorchRL's ``DistributionalDQNLoss`` projection, mass fix included: where ``b`` falls on an atom exactly
    (``floor == ceil``) its mass goes to that atom and a neighbour with weights 1 and 0.
    """
    atoms = support.numel()
    v_min, v_max = float(support[0]), float(support[-1])
    shifted = (rewards + discounts * not_terminated * support).clamp(v_min, v_max)  # [batch, atoms]
    b = (shifted - v_min) / ((v_max - v_min) / (atoms - 1))
    low, up = b.floor().long(), b.ceil().long()
    low[(up > 0) & (low == up)] -= 1
    up[(low < atoms - 1) & (low == up)] += 1
    target = torch.zeros_like(next_probs)
    target.scatter_add_(-1, low, next_probs * (up.to(b.dtype) - b))
    target.scatter_add_(-1, up, next_probs * (b - low.to(b.dtype)))
    return target
