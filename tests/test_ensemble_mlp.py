"""``EnsembleMlp``: N critics' MLPs as one batched module (issue 48): the same values and gradients as the members
called one by one. Its speed against the per-critic loop: benchmarks/ensemble_critics.py."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("n", [1, 2, 5])
def test_an_ensemble_computes_what_its_members_compute_values_and_gradients(n):
    from rlplug.backends.common.nets import EnsembleMlp, mlp

    torch.manual_seed(0)
    members = [mlp(6, [16, 16], 3, "relu") for _ in range(n)]
    ensemble = EnsembleMlp(members)
    x, target = torch.randn(32, 6), torch.randn(n, 32, 3)
    looped = torch.stack([member(x) for member in members])
    batched = ensemble(x)
    torch.testing.assert_close(batched, looped)
    torch.testing.assert_close(ensemble(x.expand(n, 32, 6)), looped)  # per-member inputs
    ((looped - target) ** 2).mean().backward()
    ((batched - target) ** 2).mean().backward()
    for i, member in enumerate(members):
        first, last = member[0], member[-1]
        torch.testing.assert_close(ensemble.weights[0].grad[i], first.weight.grad.t())
        torch.testing.assert_close(ensemble.biases[-1].grad[i, 0], last.bias.grad)


def test_an_ensemble_refuses_members_of_different_shapes():
    from rlplug.backends.common.nets import EnsembleMlp, mlp

    with pytest.raises(ValueError, match="same layers and sizes"):
        EnsembleMlp([mlp(4, [8], 1), mlp(4, [16], 1)])
    with pytest.raises(ValueError, match="at least one member"):
        EnsembleMlp([])
