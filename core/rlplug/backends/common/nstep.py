"""n-step returns read from a replay storage at sampling time, the same way on both backends.

The replay keeps one-step transitions as it always does; a sampled transition at step t is turned into
``(s_t, a_t, r_t + gamma r_t+1 + ... + gamma^(m-1) r_t+m-1, s_t+m, terminated_t+m-1)`` with its discount
``gamma^m``, where m is ``n`` or fewer: the sum stops after the step that ended the episode (terminated or
truncated) and at the newest stored step. Stable-Baselines3's n-step replay buffer reads ahead the same way;
TorchRL's ``MultiStepTransform`` sums the same rewards when writing instead (it delays every write by n), but
keeps each step's own done flags (``torchrl.buffers.nstep_batch`` says where that differs).

Both storages are flat and written in blocks, one block after another round the storage: skrl's memory
writes one step of every env per block (``steps_per_block = 1``), TorchRL's buffers a ``[num_envs,
train_every]`` batch env-major. ``written`` (rows written so far, or any count congruent to it modulo the
capacity and at least as large) says where each sampled row sits in that order.
"""

from __future__ import annotations

import torch


def lookahead_positions(
    sampled: torch.Tensor, n: int, *, written: int, capacity: int, num_envs: int, steps_per_block: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(positions [B, n], stored [B, n])``: where the k-th step from each sampled position on, in the same env,
    is in the storage, and whether it has been written yet."""
    block_rows = num_envs * steps_per_block
    order = written - 1 - (written - 1 - sampled) % capacity  # the write that put each sampled row there
    block, offset = order // block_rows, order % block_rows
    env, step = offset // steps_per_block, offset % steps_per_block
    ahead = step[:, None] + torch.arange(n, device=sampled.device)
    orders = (block[:, None] + ahead // steps_per_block) * block_rows + env[:, None] * steps_per_block + ahead % steps_per_block
    return orders % capacity, orders < written


def nstep_returns(
    positions: torch.Tensor, stored: torch.Tensor, rewards_at: torch.Tensor, ended_at: torch.Tensor, gamma: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(last position [B], discounted reward sum [B], steps [B])`` over ``lookahead_positions``' steps, given
    the storage's rewards and episode ends (terminated or truncated) at those positions (``[B, n]``): each step
    counts while it is stored and no earlier one ended its episode."""
    ended_at = ended_at.to(torch.int)
    ended_before = torch.cumsum(ended_at, dim=1) - ended_at
    counted = stored & (ended_before == 0)
    steps = counted.sum(dim=1)  # >= 1: the sampled step itself always counts
    last = positions.gather(1, (steps - 1)[:, None]).squeeze(1)
    discounts = gamma ** torch.arange(positions.shape[1], device=positions.device, dtype=rewards_at.dtype)
    # torch.where, not a product: rows never written hold NaN in skrl's memory
    returns = torch.where(counted, rewards_at * discounts, torch.zeros((), dtype=rewards_at.dtype, device=rewards_at.device))
    return last, returns.sum(dim=1), steps
