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


def test_torchrl_batches_sum_as_multistep_transform_does():
    """TorchRL's ``MultiStepTransform`` (which delays writes instead) gives the same rewards, step counts and next
    observations; the done flags differ on purpose: upstream leaves each step's own, so a window that reaches a
    termination would bootstrap from the terminal state, where here it takes the last summed step's."""
    pytest.importorskip("torchrl")
    from rlplug.backends.torchrl import STEPS_TO_NEXT_OBS, nstep_batch
    from rlplug.backends.torchrl.buffers import TransitionStorage, extend_quietly
    from tensordict import TensorDict
    from torchrl.data import LazyTensorStorage, ReplayBuffer, TensorDictReplayBuffer
    from torchrl.envs.transforms import MultiStepTransform

    steps, g = 20, torch.Generator().manual_seed(0)
    observations, rewards = torch.randn(steps + 1, 2, generator=g), torch.randn(steps, 1, generator=g)
    terminated, truncated = torch.zeros(steps, 1, dtype=torch.bool), torch.zeros(steps, 1, dtype=torch.bool)
    terminated[7], truncated[13] = True, True
    nxt = {"observation": observations[1:], "reward": rewards, "terminated": terminated, "truncated": truncated,
           "done": terminated | truncated}  # fmt: skip
    trajectory = TensorDict({"observation": observations[:-1], "action": torch.zeros(steps, 1), "next": TensorDict(nxt, [steps])}, [steps])
    upstream = ReplayBuffer(storage=LazyTensorStorage(100), transform=MultiStepTransform(n_steps=3, gamma=GAMMA))
    extend_quietly(upstream, trajectory.clone())
    expected = upstream[:]  # the first 17 steps: upstream holds back the last n - 1 until more arrive
    memory = TensorDictReplayBuffer(storage=TransitionStorage(100), batch_size=17)
    extend_quietly(memory, trajectory)
    index = torch.arange(17)
    got = nstep_batch(memory, memory._storage[index].set("index", index), 3, GAMMA, num_envs=1, steps_per_block=steps)
    torch.testing.assert_close(got["next", "reward"], expected["next", "reward"])
    assert torch.equal(got[STEPS_TO_NEXT_OBS].squeeze(-1), expected["steps_to_next_obs"])
    assert torch.equal(got["next", "observation"], expected["next", "observation"])
    ends_inside = got["next", "terminated"].squeeze(-1) != expected["next", "terminated"].squeeze(-1)
    assert ends_inside.nonzero().squeeze(-1).tolist() == [5, 6]  # windows 5-7 and 6-7 reach the termination at 7
