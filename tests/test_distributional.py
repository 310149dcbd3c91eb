"""The distributional losses of issue 48: QR-DQN's quantile loss against a hand-computed value on both backends,
C51's skrl loss against TorchRL's ``DistributionalDQNLoss`` and TQC's against ``TQCLoss``, each on the same networks
and batch.

QR-DQN:
Two actions, two quantiles (midpoints tau = 0.25, 0.75), a linear Z(s) = s * W so every quantile is known:
Z(1, .) = [[0, 1], [3, -0.5]], Z(2, .) = [[0, 2], [6, -1]] (means 1 and 2.5, so a' = 1). Sample 1: a = 0,
r = 1, gamma 0.5, not terminated: target [1 + 0.5 * 6, 1 - 0.5 * 1] = [4, 0.5] against [0, 1]; pairwise Huber
errors weighted by |tau_i - 1{delta < 0}|: 0.25 * 3.5 + 0.25 * 0.125 + 0.75 * 2.5 + 0.25 * 0.125 = 2.8125, over the
two target samples 1.40625. Sample 2: a = 1, r = 0, terminated: target [0, 0] against [3, -0.5]: 2 * 0.75 * 2.5 +
2 * 0.75 * 0.125 = 3.9375, halved 1.96875. The batch mean is 1.6875 (sb3-contrib's quantile_huber_loss).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")
pytest.importorskip("torchrl")

W = torch.tensor([0.0, 1.0, 3.0, -0.5])  # [a0 q0, a0 q1, a1 q0, a1 q1]
EXPECTED = 1.6875


def test_skrl_quantile_loss_equals_the_hand_computed_value():
    from rlplug_qrdqn.skrl_backend import QRDQNLoss

    class LinearZ:
        def act(self, inputs, role=""):
            quantiles = (inputs["observations"] * W).unflatten(-1, (2, 2))
            return quantiles.mean(-1), {"quantiles": quantiles}

    agent = type("Agent", (), {"q_network": LinearZ(), "target_q_network": LinearZ()})()
    batch = {
        "observations": torch.ones(2, 1), "states": None, "next_observations": torch.full((2, 1), 2.0), "next_states": None,
        "actions": torch.tensor([[0], [1]]), "rewards": torch.tensor([[1.0], [0.0]]), "terminated": torch.tensor([[False], [True]]),
    }  # fmt: skip
    terms = QRDQNLoss(0.5)(agent, batch, "q")
    assert terms["loss_q"].item() == pytest.approx(EXPECTED)
    assert terms["q_taken"].item() == pytest.approx((0 + 1 + 3 - 0.5) / 4)


# double Q (qrdqn's double_dqn): a target network whose own argmax at s' = 2 is action 0 (W2: Z'(2, .) = [[2, 6], [0, 2]],
# means 4 and 1); the online network's is action 1 (means 1 and 2.5), so sample 1's target is [1 + 0.5 * 0, 1 + 0.5 * 2]
# = [1, 2] against [0, 1]: (0.25 * 0.5 + 0.25 * 1.5 + 0.75 * 0 + 0.75 * 0.5) / 2 = 0.4375; sample 2 as before (terminated)
W2 = torch.tensor([1.0, 3.0, 0.0, 1.0])
EXPECTED_DOUBLE = (0.4375 + 1.96875) / 2


@pytest.mark.parametrize("backend", ["skrl", "torchrl"])
def test_double_q_picks_the_next_action_with_the_online_network(backend):
    import gymnasium as gym
    from rlplug_qrdqn import skrl_backend, torchrl_backend
    from tensordict import TensorDict

    if backend == "skrl":
        class LinearZ:
            def __init__(self, w):
                self.w = w

            def act(self, inputs, role=""):
                quantiles = (inputs["observations"] * self.w).unflatten(-1, (2, 2))
                return quantiles.mean(-1), {"quantiles": quantiles}

        agent = type("Agent", (), {"q_network": LinearZ(W), "target_q_network": LinearZ(W2)})()
        batch = {
            "observations": torch.ones(2, 1), "states": None, "next_observations": torch.full((2, 1), 2.0), "next_states": None,
            "actions": torch.tensor([[0], [1]]), "rewards": torch.tensor([[1.0], [0.0]]), "terminated": torch.tensor([[False], [True]]),
        }  # fmt: skip
        losses = [skrl_backend.QRDQNLoss(0.5, double)(agent, batch, "q")["loss_q"] for double in (False, True)]
    else:
        from rlplug.backends.torchrl import q_value_actor

        losses = []
        for double in (False, True):
            linear = torch.nn.Linear(1, 4, bias=False)
            with torch.no_grad():
                linear.weight.copy_(W.view(4, 1))
            loss = torchrl_backend.QRDQNLoss(q_value_actor(torchrl_backend.QuantileMean(linear, 2, 2), gym.spaces.Discrete(2)),
                                             gamma=0.5, double=double)  # fmt: skip
            with torch.no_grad():
                next(iter(loss.target_value_network_params.values(True, True))).copy_(W2.view(4, 1))  # its one weight
            batch = TensorDict({
                "observation": torch.ones(2, 1), "action": torch.tensor([0, 1]),
                "next": {"observation": torch.full((2, 1), 2.0), "reward": torch.tensor([[1.0], [0.0]]),
                         "terminated": torch.tensor([[False], [True]])},
            }, batch_size=[2])  # fmt: skip
            losses.append(loss(batch)["loss"])
    assert losses[1].item() == pytest.approx(EXPECTED_DOUBLE)
    assert losses[0].item() != pytest.approx(EXPECTED_DOUBLE)  # the target network's own argmax: another target


def test_torchrl_quantile_loss_equals_the_hand_computed_value():
    import gymnasium as gym
    from rlplug.backends.torchrl import q_value_actor
    from rlplug_qrdqn.torchrl_backend import QRDQNLoss, QuantileMean
    from tensordict import TensorDict

    linear = torch.nn.Linear(1, 4, bias=False)
    with torch.no_grad():
        linear.weight.copy_(W.view(4, 1))
    loss = QRDQNLoss(q_value_actor(QuantileMean(linear, 2, 2), gym.spaces.Discrete(2)), gamma=0.5)
    batch = TensorDict({
        "observation": torch.ones(2, 1), "action": torch.tensor([0, 1]),
        "next": {"observation": torch.full((2, 1), 2.0), "reward": torch.tensor([[1.0], [0.0]]),
                 "terminated": torch.tensor([[False], [True]])},
    }, batch_size=[2])  # fmt: skip
    out = loss(batch)
    assert out["loss"].item() == pytest.approx(EXPECTED)
    out["loss"].backward()
    assert linear.weight.grad is not None and linear.weight.grad.abs().sum() > 0  # only the online network learns


@pytest.mark.parametrize("n_step", [False, True])
def test_c51_skrl_loss_is_torchrls_distributional_dqn_loss(n_step):
    """Same weights, same batch (returns outside the support, terminal and not, an n-step batch's per-sample
    discounts): the projected cross-entropy and its gradient agree with upstream's to float precision."""
    from rlplug_c51.skrl_backend import C51Loss
    from rlplug_c51.torchrl_backend import AtomLogProbs
    from tensordict import TensorDict
    from torchrl.data import Categorical
    from torchrl.modules import DistributionalQValueActor
    from torchrl.objectives import DistributionalDQNLoss

    torch.manual_seed(0)
    batch_size, n_obs, n_actions, atoms, gamma = 32, 3, 2, 11, 0.9
    support = torch.linspace(-2.0, 5.0, atoms)
    online, target = torch.nn.Linear(n_obs, atoms * n_actions), torch.nn.Linear(n_obs, atoms * n_actions)
    actor = DistributionalQValueActor(AtomLogProbs(online, atoms, n_actions), support=support, in_keys=["observation"],
                                      spec=Categorical(n_actions), action_space="categorical", make_log_softmax=False)  # fmt: skip
    upstream = DistributionalDQNLoss(actor, gamma=gamma, delay_value=True)
    with torch.no_grad():  # the target parameters: another network's
        upstream.target_value_network_params["module", "0", "module", "net", "weight"].copy_(target.weight)
        upstream.target_value_network_params["module", "0", "module", "net", "bias"].copy_(target.bias)
    obs, next_obs = torch.randn(batch_size, n_obs), torch.randn(batch_size, n_obs)
    action, reward = torch.randint(n_actions, (batch_size,)), torch.randn(batch_size, 1) * 3
    terminated = torch.rand(batch_size, 1) < 0.3
    steps = torch.randint(1, 4, (batch_size, 1)) if n_step else None
    data = {"observation": obs, "action": action,
            "next": {"observation": next_obs, "reward": reward, "terminated": terminated, "done": terminated}}  # fmt: skip
    if n_step:
        data["steps_to_next_obs"] = steps
    expected = upstream(TensorDict(data, batch_size=[batch_size]))["loss"]

    class Z:  # skrl's side: the same networks, rlplug_c51's CategoricalQ outputs ([batch, actions, atoms])
        def __init__(self, net):
            self.net, self.support = net, support

        def act(self, inputs, role=""):
            log_probs = self.net(inputs["observations"]).unflatten(-1, (atoms, n_actions)).log_softmax(-2).transpose(-1, -2)
            return (log_probs.exp() * support).sum(-1), {"log_probs": log_probs}

    agent = type("Agent", (), {"q_network": Z(online), "target_q_network": Z(target)})()
    batch = {"observations": obs, "states": None, "next_observations": next_obs, "next_states": None,
             "actions": action.view(-1, 1), "rewards": reward, "terminated": terminated}  # fmt: skip
    if n_step:
        batch["discounts"] = gamma**steps
    got = C51Loss(gamma)(agent, batch, "q")["loss_q"]
    assert got.item() == pytest.approx(expected.item(), rel=1e-5)
    (expected_grad,) = torch.autograd.grad(expected, upstream.value_network_params["module", "0", "module", "net", "weight"])
    (got_grad,) = torch.autograd.grad(got, online.weight)
    assert torch.allclose(got_grad, expected_grad, atol=1e-6)


def test_tqc_skrl_loss_is_torchrls_tqc_loss():
    """Same actor, critics, target critics (moved off the online ones) and batch, the same random draws (the next
    action, then the policy's): skrl's critic loss (averaged over the critics) times their number is upstream's
    loss_qvalue (summed), and the policy losses agree, values and gradients."""
    from rlplug_tqc.skrl_backend import TQCLoss as SkrlTQCLoss
    from tensordict import TensorDict
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torchrl.data import Bounded
    from torchrl.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
    from torchrl.objectives import TQCLoss
    from torchrl.objectives.sac import compute_rsample_log_prob

    torch.manual_seed(0)
    batch_size, n_obs, n_act, n_quantiles, n_critics, drop, gamma, alpha = 16, 3, 2, 5, 3, 1, 0.9, 0.5
    net = torch.nn.Sequential(torch.nn.Linear(n_obs, 2 * n_act), NormalParamExtractor())
    actor = ProbabilisticActor(TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]),
                               in_keys=["loc", "scale"], spec=Bounded(-1, 1, (n_act,)), distribution_class=TanhNormal)  # fmt: skip
    critics = [ValueOperator(MLP(in_features=n_obs + n_act, out_features=n_quantiles, num_cells=[8]), in_keys=["observation", "action"])
               for _ in range(n_critics)]  # fmt: skip
    upstream = TQCLoss(actor, critics, num_qvalue_nets=n_critics, top_quantiles_to_drop_per_net=drop, alpha_init=alpha,
                       fixed_alpha=True)  # fmt: skip
    upstream.make_value_estimator(gamma=gamma)
    with torch.no_grad():
        for value in upstream.target_qvalue_network_params.values(True, True):
            value.add_(0.3 * torch.randn_like(value))
    obs, next_obs = torch.randn(batch_size, n_obs), torch.randn(batch_size, n_obs)
    action, reward = torch.rand(batch_size, n_act) * 2 - 1, torch.randn(batch_size, 1)
    terminated = torch.rand(batch_size, 1) < 0.3
    data = {"observation": obs, "action": action,
            "next": {"observation": next_obs, "reward": reward, "terminated": terminated, "done": terminated}}  # fmt: skip
    torch.manual_seed(1)
    expected = upstream(TensorDict(data, batch_size=[batch_size]))

    class Policy:  # skrl's side: upstream's actor, drawn as TQCLoss draws
        def act(self, inputs, role=""):
            with upstream.actor_network_params.to_module(upstream.actor_network):
                dist = upstream.actor_network.get_dist(TensorDict(observation=inputs["observations"], batch_size=[len(inputs["observations"])]))
                action, log_prob = compute_rsample_log_prob(dist)
            return action, {"log_prob": log_prob.unsqueeze(-1)}

    class Critic:  # one of upstream's critics (its online or target parameters)
        def __init__(self, params):
            self.params = params

        def act(self, inputs, role=""):
            data = TensorDict(observation=inputs["observations"], action=inputs["taken_actions"], batch_size=[len(inputs["observations"])])
            with self.params.to_module(upstream.qvalue_network):
                return upstream.qvalue_network(data)["state_action_value"], {}

    roles = tuple(f"critic_{i + 1}" for i in range(n_critics))
    agent = type("Agent", (), {"policy": Policy(), "critic_roles": roles, "entropy_coefficient": alpha,
                               "cfg": type("Cfg", (), {"discount_factor": gamma})()})()  # fmt: skip
    for i, role in enumerate(roles):
        setattr(agent, role, Critic(upstream.qvalue_network_params[i]))
        setattr(agent, f"target_{role}", Critic(upstream.target_qvalue_network_params[i]))
    batch = {"observations": obs, "states": None, "next_observations": next_obs, "next_states": None,
             "actions": action, "rewards": reward, "terminated": terminated}  # fmt: skip
    torch.manual_seed(1)
    loss = SkrlTQCLoss(drop)
    critic = loss(agent, batch, "critic")["loss_critic"]
    policy = loss(agent, batch, "policy")["loss_policy"]
    assert (critic * n_critics).item() == pytest.approx(expected["loss_qvalue"].item(), rel=1e-5)
    assert policy.item() == pytest.approx(expected["loss_actor"].item(), rel=1e-5)
    weight = upstream.qvalue_network_params["module", "0", "weight"]
    (expected_grad,) = torch.autograd.grad(expected["loss_qvalue"], weight, retain_graph=True)
    (got_grad,) = torch.autograd.grad(critic * n_critics, weight)
    torch.testing.assert_close(got_grad, expected_grad, rtol=1e-5, atol=1e-7)


def test_a_distributional_dueling_head_is_value_plus_centred_advantage_per_atom():
    """``DuelingMlp(atoms=k)`` (qrdqn's and c51's ``dueling``): per action ``k`` outputs; for every atom the mean over
    the actions is the value layer's output for that atom, and the actions differ by the advantage layer's."""
    from rlplug.backends.common.nets import DuelingMlp

    torch.manual_seed(0)
    n_actions, atoms = 3, 4
    head = DuelingMlp(5, [8], n_actions * atoms, "relu", atoms=atoms)
    x = torch.randn(6, 5)
    out = head(x).unflatten(-1, (n_actions, atoms))
    features = head.trunk(x)
    value, advantage = head.value(features), head.advantage(features).unflatten(-1, (n_actions, atoms))
    torch.testing.assert_close(out.mean(-2), value)
    torch.testing.assert_close(out - out.mean(-2, keepdim=True), advantage - advantage.mean(-2, keepdim=True))
    plain = DuelingMlp(5, [8], n_actions, "relu")  # one atom: DQN's head, Q = V + A - mean A
    q = plain(x)
    torch.testing.assert_close(q.mean(-1, keepdim=True), plain.value(plain.trunk(x)))


def test_discrete_sac_skrl_loss_is_torchrls_discrete_sac_loss():
    """SAC on Discrete actions: the same categorical actor, Q(s, .) critics, target critics (moved off the online ones)
    and batch; no draws (every expectation is exact). skrl's critic loss (averaged over the critics) times their number
    is upstream's loss_qvalue (summed), the policy losses agree, values and gradients."""
    from rlplug_sac.skrl_discrete import DiscreteSACLoss as SkrlDiscreteSACLoss
    from tensordict import TensorDict
    from tensordict.nn import TensorDictModule
    from torchrl.modules import MLP, ProbabilisticActor
    from torch.distributions import Categorical
    from torchrl.objectives import DiscreteSACLoss

    torch.manual_seed(0)
    batch_size, n_obs, n_act, n_critics, gamma, alpha = 16, 3, 4, 2, 0.9, 0.5
    actor = ProbabilisticActor(TensorDictModule(torch.nn.Linear(n_obs, n_act), in_keys=["observation"], out_keys=["logits"]),
                               in_keys=["logits"], out_keys=["action"], distribution_class=Categorical)  # fmt: skip
    critics = [TensorDictModule(MLP(in_features=n_obs, out_features=n_act, num_cells=[8]), in_keys=["observation"],
                                out_keys=["action_value"]) for _ in range(n_critics)]  # fmt: skip
    upstream = DiscreteSACLoss(actor, critics, action_space="categorical", num_actions=n_act, num_qvalue_nets=n_critics,
                               loss_function="l2", alpha_init=alpha, fixed_alpha=True)  # fmt: skip
    upstream.make_value_estimator(gamma=gamma)
    with torch.no_grad():
        for value in upstream.target_qvalue_network_params.values(True, True):
            value.add_(0.3 * torch.randn_like(value))
    obs, next_obs = torch.randn(batch_size, n_obs), torch.randn(batch_size, n_obs)
    action, reward = torch.randint(n_act, (batch_size,)), torch.randn(batch_size, 1)
    terminated = torch.rand(batch_size, 1) < 0.3
    data = {"observation": obs, "action": action,
            "next": {"observation": next_obs, "reward": reward, "terminated": terminated, "done": terminated}}  # fmt: skip
    expected = upstream(TensorDict(data, batch_size=[batch_size]))

    class Policy:  # skrl's side: upstream's actor's logits
        def compute(self, inputs, role=""):
            with upstream.actor_network_params.to_module(upstream.actor_network):
                return upstream.actor_network.module[0](TensorDict(observation=inputs["observations"], batch_size=[len(inputs["observations"])]))["logits"], {}

    class Critic:  # one of upstream's critics (its online or target parameters)
        def __init__(self, params):
            self.params = params

        def compute(self, inputs, role=""):
            with self.params.to_module(upstream.qvalue_network):
                return upstream.qvalue_network(TensorDict(observation=inputs["observations"], batch_size=[len(inputs["observations"])]))["action_value"], {}

    roles = tuple(f"critic_{i + 1}" for i in range(n_critics))
    agent = type("Agent", (), {"policy": Policy(), "critic_roles": roles, "entropy_coefficient": alpha,
                               "cfg": type("Cfg", (), {"discount_factor": gamma})()})()  # fmt: skip
    for i, role in enumerate(roles):
        setattr(agent, role, Critic(upstream.qvalue_network_params[i]))
        setattr(agent, f"target_{role}", Critic(upstream.target_qvalue_network_params[i]))
    batch = {"observations": obs, "states": None, "next_observations": next_obs, "next_states": None,
             "actions": action.unsqueeze(-1), "rewards": reward, "terminated": terminated}  # fmt: skip
    loss = SkrlDiscreteSACLoss()
    critic = loss(agent, batch, "critic")["loss_critic"]
    policy = loss(agent, batch, "policy")["loss_policy"]
    assert (critic * n_critics).item() == pytest.approx(expected["loss_qvalue"].item(), rel=1e-5)
    assert policy.item() == pytest.approx(expected["loss_actor"].item(), rel=1e-5)
    assert batch["log_prob"].mean().item() == pytest.approx(-expected["entropy"].item(), rel=1e-5)
    weight = upstream.qvalue_network_params["module", "0", "weight"]
    (expected_grad,) = torch.autograd.grad(expected["loss_qvalue"], weight, retain_graph=True)
    (got_grad,) = torch.autograd.grad(critic * n_critics, weight)
    torch.testing.assert_close(got_grad, expected_grad, rtol=1e-5, atol=1e-7)
    actor_weight = upstream.actor_network_params["module", "0", "module", "weight"]
    (expected_grad,) = torch.autograd.grad(expected["loss_actor"], actor_weight)
    (got_grad,) = torch.autograd.grad(policy, actor_weight)
    torch.testing.assert_close(got_grad, expected_grad, rtol=1e-5, atol=1e-7)
