"""CrossQ's pieces: the core's ``BatchRenorm`` against TorchRL's ``BatchRenorm1d`` (and where it does not follow its
warm-up counter bug), ``with_batch_renorm``'s surgery, and the skrl cell's critic loss against TorchRL's ``CrossQLoss``
on the same critics, actor and batch. Training and the checkpoint round trip: tests/test_conformance.py."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")
pytest.importorskip("skrl")


def test_batch_renorm_is_torchrls_until_its_counter_runs_past_twice_the_warmup():
    """Same outputs and running statistics as ``torchrl.modules.BatchRenorm1d`` in training and evaluation for
    2 x warmup batches; after that TorchRL's correction doubles (its ``clamp_max`` is not in place), rlplug's does not."""
    from rlplug.backends.common.nets import BatchRenorm
    from torchrl.modules import BatchRenorm1d

    torch.manual_seed(0)
    ours, theirs = BatchRenorm(4, momentum=0.1, eps=1e-3, warmup_steps=3), BatchRenorm1d(4, momentum=0.1, eps=1e-3, warmup_steps=3)
    for _ in range(6):  # batches 0-2 plain batch norm, 3-5 renormalised
        x = torch.randn(16, 4) * 3 + 1
        torch.testing.assert_close(ours(x), theirs(x))
    torch.testing.assert_close(ours.running_var, theirs.running_var)
    # the seventh batch: TorchRL's warm-up factor is now 6 // 3 = 2; with its counter held at 3 (factor 1) it is ours
    held = BatchRenorm1d(4, momentum=0.1, eps=1e-3, warmup_steps=3)
    held.load_state_dict({**theirs.state_dict(), "num_batches_tracked": torch.tensor(3)})
    x = torch.randn(16, 4) * 3 + 1
    got, doubled, expected = ours(x), theirs(x), held(x)
    torch.testing.assert_close(got, expected)
    assert not torch.allclose(got, doubled)
    ours.eval(), held.eval()
    y = torch.randn(8, 4)
    torch.testing.assert_close(ours(y), held(y))  # evaluation: the running statistics only


def test_with_batch_renorm_puts_a_norm_before_every_linear_layer_and_keeps_the_layers():
    from rlplug.backends.common.nets import BatchRenorm, mlp, with_batch_renorm

    torch.manual_seed(0)
    net = mlp(5, [8, 8], 1, "relu")
    renormed = with_batch_renorm(net, momentum=0.02, eps=1e-3, warmup_steps=10)
    kinds = [type(layer).__name__ for layer in renormed]
    assert kinds == ["BatchRenorm", "Linear", "ReLU", "BatchRenorm", "Linear", "ReLU", "BatchRenorm", "Linear"]
    assert [layer for layer in renormed if isinstance(layer, torch.nn.Linear)] == [l for l in net if isinstance(l, torch.nn.Linear)]
    assert [m.momentum for m in renormed if isinstance(m, BatchRenorm)] == [0.02] * 3


def test_crossq_skrl_critic_loss_is_torchrls_crossq_qvalue_loss():
    """Same actor, batch-renormalised critics and batch, the same next-action draw: skrl's critic loss (averaged over
    the critics) times their number is upstream's loss_qvalue (summed), value and gradient, and both leave the
    critics' running statistics moved by the one joint (s, a) + (s', a') batch."""
    from rlplug.backends.common.nets import mlp, with_batch_renorm
    from rlplug_crossq.skrl_backend import CrossQLoss as SkrlCrossQLoss
    from tensordict import TensorDict
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torchrl.data import Bounded
    from torchrl.modules import ProbabilisticActor, TanhNormal, ValueOperator
    from torchrl.objectives import CrossQLoss
    from torchrl.objectives.sac import compute_rsample_log_prob

    class Concat(torch.nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, observation, action):
            return self.net(torch.cat([observation, action], -1))

    torch.manual_seed(0)
    batch_size, n_obs, n_act, n_critics, gamma, alpha = 16, 3, 2, 2, 0.9, 0.5
    net = torch.nn.Sequential(torch.nn.Linear(n_obs, 2 * n_act), NormalParamExtractor())
    actor = ProbabilisticActor(TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]),
                               in_keys=["loc", "scale"], spec=Bounded(-1, 1, (n_act,)), distribution_class=TanhNormal)  # fmt: skip
    critics = [ValueOperator(Concat(with_batch_renorm(mlp(n_obs + n_act, [8], 1, "relu"), warmup_steps=100)),
                             in_keys=["observation", "action"]) for _ in range(n_critics)]  # fmt: skip
    upstream = CrossQLoss(actor, critics, num_qvalue_nets=n_critics, alpha_init=alpha, fixed_alpha=True, loss_function="l2")
    upstream.make_value_estimator(gamma=gamma)
    obs, next_obs = torch.randn(batch_size, n_obs), torch.randn(batch_size, n_obs)
    action, reward = torch.rand(batch_size, n_act) * 2 - 1, torch.randn(batch_size, 1)
    terminated = torch.rand(batch_size, 1) < 0.3
    data = {"observation": obs, "action": action,
            "next": {"observation": next_obs, "reward": reward, "terminated": terminated, "done": terminated}}  # fmt: skip
    stats = upstream.qvalue_network_params.clone()  # the running statistics before either loss moves them
    torch.manual_seed(1)
    expected, _ = upstream.qvalue_loss(TensorDict(data, batch_size=[batch_size]))
    moved = upstream.qvalue_network_params.clone()
    upstream.qvalue_network_params.update_(stats)

    class Policy:  # skrl's side: upstream's actor, drawn as CrossQLoss draws (a sample, out of autograd)
        def act(self, inputs, role=""):
            with upstream.actor_network_params.to_module(upstream.actor_network):
                dist = upstream.actor_network.get_dist(TensorDict(observation=inputs["observations"], batch_size=[len(inputs["observations"])]))
                if torch.is_grad_enabled():
                    action, log_prob = compute_rsample_log_prob(dist)
                else:
                    action = dist.sample()
                    log_prob = dist.log_prob(action)
            return action, {"log_prob": log_prob.unsqueeze(-1)}

    class Critic:  # one of upstream's critics, on its slice of the stacked parameters (buffers included)
        def __init__(self, params):
            self.params = params

        def train(self):
            upstream.qvalue_network.train()

        def eval(self):
            upstream.qvalue_network.eval()

        def act(self, inputs, role=""):
            data = TensorDict(observation=inputs["observations"], action=inputs["taken_actions"], batch_size=[len(inputs["observations"])])
            with self.params.to_module(upstream.qvalue_network):
                return upstream.qvalue_network(data)["state_action_value"], {}

    roles = tuple(f"critic_{i + 1}" for i in range(n_critics))
    agent = type("Agent", (), {"policy": Policy(), "critic_roles": roles, "entropy_coefficient": alpha,
                               "cfg": type("Cfg", (), {"discount_factor": gamma})()})()  # fmt: skip
    for i, role in enumerate(roles):
        setattr(agent, role, Critic(upstream.qvalue_network_params[i]))
    batch = {"observations": obs, "states": None, "next_observations": next_obs, "next_states": None,
             "actions": action, "rewards": reward, "terminated": terminated}  # fmt: skip
    torch.manual_seed(1)
    critic = SkrlCrossQLoss()(agent, batch, "critic")["loss_critic"]
    assert (critic * n_critics).item() == pytest.approx(expected.item(), rel=1e-5)
    weight = upstream.qvalue_network_params["module", "net", "1", "weight"]
    (expected_grad,) = torch.autograd.grad(expected, weight, retain_graph=True)
    (got_grad,) = torch.autograd.grad(critic * n_critics, weight)
    torch.testing.assert_close(got_grad, expected_grad, rtol=1e-5, atol=1e-7)
    running = ("module", "net", "0", "running_mean")
    assert not torch.equal(moved[running], stats[running])
    torch.testing.assert_close(upstream.qvalue_network_params[running], moved[running])
