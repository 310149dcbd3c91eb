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


def test_ensemble_forward_batches_members_that_keep_their_own_parameters():
    from rlplug.backends.common.nets import ensemble_forward, mlp, plain_layers, with_batch_renorm

    torch.manual_seed(0)
    members = [mlp(5, [8, 8], 2, "tanh") for _ in range(3)]
    x = torch.randn(16, 5)
    batched = ensemble_forward(members, x)
    looped = torch.stack([member(x) for member in members])
    torch.testing.assert_close(batched, looped)
    grads = torch.autograd.grad(batched.square().sum(), [m[0].weight for m in members])
    expected = torch.autograd.grad(looped.square().sum(), [m[0].weight for m in members])
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got, want)
    assert plain_layers(members[0]) and not plain_layers(with_batch_renorm(mlp(5, [8], 1)))


# (plugin module, env, hyperparameters): the cells whose critics `batched_critics` batches, each backend
BATCHED = {
    "sac": ("rlplug_sac", "Pendulum-v1", dict(squash_actions=True), ("skrl", "torchrl")),
    "td3": ("rlplug_td3", "Pendulum-v1", dict(), ("skrl", "torchrl")),
    "tqc": ("rlplug_tqc", "Pendulum-v1", dict(n_critics=3, n_quantiles=5, squash_actions=True), ("skrl",)),
    "redq": ("rlplug_redq", "Pendulum-v1", dict(n_critics=5, critic_subset=2, squash_actions=True), ("skrl",)),
    "cql": ("rlplug_cql", "Pendulum-v1", dict(num_random=4, eval_every=0, log_every=64), ("skrl", "torchrl")),
}


@pytest.mark.parametrize("cell", [f"{name}-{backend}" for name, spec in BATCHED.items() for backend in spec[3]])
def test_batched_critics_train_as_the_per_critic_loop(builds, random_dataset, cell):
    """The same seed, warm-up and gradient steps with the critics called one by one and as one batched ensemble:
    every parameter ends where the loop's does, up to float rounding (the batched kernel sums in another order)."""
    name, backend = cell.rsplit("-", 1)
    module, env, hp, _ = BATCHED[name]
    made = {}
    for batched in (False, True):
        if name == "cql":  # offline: gradient steps on a dataset
            build = builds(module, backend, env, num_envs=1, steps=192, hidden_sizes=[16, 16], batch_size=32,
                           dataset=random_dataset(env), batched_critics=batched, **hp)  # fmt: skip
        else:
            build = builds(module, backend, env, num_envs=2, steps=192, hidden_sizes=[16, 16], learning_starts=64, batch_size=32,
                           batched_critics=batched, **hp)  # fmt: skip
        build.trainer.train(192)
        assert (build.trainer.agent if backend == "skrl" else build.loss).batched_critics is batched
        models = build.models if backend == "skrl" else {"loss": build.loss}
        made[batched] = {f"{k}.{n}": p.detach() for k, m in models.items() if hasattr(m, "named_parameters") for n, p in m.named_parameters()}
    assert made[False].keys() == made[True].keys() and len(made[True]) > 4
    for key, value in made[False].items():
        torch.testing.assert_close(made[True][key], value, atol=2e-5, rtol=1e-4, msg=key)


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_critics_that_cannot_be_batched_are_refused_in_one_line(builds, backend):
    from rlplug import RlplugError

    with pytest.raises(RlplugError, match="batched_critics = true: .*set batched_critics = false"):
        builds("rlplug_sac", backend, "CartPole-v1", num_envs=2, steps=64, learning_starts=32, batched_critics=True)
