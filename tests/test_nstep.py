"""n-step returns read ahead in a flat replay storage (``rlplug.backends.common.nstep``) equal the ones computed
by walking each env's own trajectory, in both write layouts (skrl's one step of every env per row, TorchRL's
``[num_envs, train_every]`` blocks), before and after the storage wraps, with episode ends inside the window."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlplug.backends.common.nstep import lookahead_positions, nstep_returns  # noqa: E402

GAMMA = 0.9


def written_storage(num_envs, steps_per_block, capacity, blocks, seed):
    """Write ``blocks`` blocks round a storage of ``capacity`` rows; return its columns, the writes' (env, time)
    and the reference walk's inputs."""
    g = torch.Generator().manual_seed(seed)
    block_rows = num_envs * steps_per_block
    written = blocks * block_rows
    env = torch.arange(written) % block_rows // steps_per_block
    time = torch.arange(written) // block_rows * steps_per_block + torch.arange(written) % steps_per_block
    reward = torch.randn(written, generator=g)
    ended = torch.rand(written, generator=g) < 0.2
    rewards, ends = torch.full((capacity,), float("nan")), torch.zeros(capacity, dtype=torch.bool)
    rewards[torch.arange(written) % capacity], ends[torch.arange(written) % capacity] = reward, ended  # the last write wins
    return rewards, ends, written, (env, time, reward, ended)


def reference(order, n, written, walk):
    """The n-step return of the transition written at ``order``, walking its env's steps in time."""
    env, time, reward, ended = walk
    by_step = {(int(e), int(t)): w for w, (e, t) in enumerate(zip(env, time))}
    total, w = 0.0, order
    for k in range(n):
        w = by_step.get((int(env[order]), int(time[order]) + k))
        if w is None or w >= written:
            return last, total, k
        total += GAMMA**k * float(reward[w])
        last = w
        if ended[w]:
            return last, total, k + 1
    return last, total, n


@pytest.mark.parametrize(
    "num_envs, steps_per_block, capacity, blocks",
    [(1, 1, 50, 30), (1, 1, 50, 120), (3, 1, 60, 70), (1, 16, 100, 4), (1, 16, 100, 15), (2, 8, 100, 9), (4, 5, 90, 11)],
)
def test_read_ahead_matches_walking_each_trajectory(num_envs, steps_per_block, capacity, blocks):
    n = 4
    rewards, ends, written, walk = written_storage(num_envs, steps_per_block, capacity, blocks, seed=capacity + blocks)
    sampled = torch.arange(min(written, capacity))
    positions, stored = lookahead_positions(sampled, n, written=written, capacity=capacity, num_envs=num_envs,
                                            steps_per_block=steps_per_block)  # fmt: skip
    last, returns, steps = nstep_returns(positions, stored, rewards[positions], ends[positions], GAMMA)
    for i, position in enumerate(sampled.tolist()):
        order = written - 1 - (written - 1 - position) % capacity
        want_last, want_return, want_steps = reference(order, n, written, walk)
        assert int(last[i]) == want_last % capacity and int(steps[i]) == want_steps, position
        assert float(returns[i]) == pytest.approx(want_return, abs=1e-5), position
    assert torch.isfinite(returns).all()  # never-written rows (NaN) are never summed
    assert (steps < n).any() and (steps == n).any()  # the cases include cut windows and whole ones


def test_one_step_is_the_transition_itself():
    rewards, ends, written, _ = written_storage(2, 4, 40, 7, seed=0)
    sampled = torch.arange(40)
    positions, stored = lookahead_positions(sampled, 1, written=written, capacity=40, num_envs=2, steps_per_block=4)
    last, returns, steps = nstep_returns(positions, stored, rewards[positions], ends[positions], GAMMA)
    assert torch.equal(last, sampled) and torch.equal(returns, rewards) and (steps == 1).all()
