"""The lean TorchRL losses ("sac-lean", "td3-lean", "ddpg-lean", "td3bc-lean", "iql-lean", "cql-lean" (Box and Discrete), "dqn-lean")
compute upstream's terms: same parameters, same batch, same seed, the same values and gradients as SACLoss / TD3Loss /
DDPGLoss / TD3BCLoss / IQLLoss / CQLLoss / DiscreteCQLLoss / DQNLoss; the lean PPO forward, ClipPPOLoss's."""

from __future__ import annotations

import importlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from tensordict import TensorDict  # noqa: E402

import rlplug  # noqa: E402

B = 32


def batch(obs: int = 3, act: int = 1, seed: int = 0) -> TensorDict:
    g = torch.Generator().manual_seed(seed)
    nxt = {"observation": torch.randn(B, obs, generator=g), "reward": torch.randn(B, 1, generator=g),
           "terminated": torch.rand(B, 1, generator=g) < 0.3}  # fmt: skip
    nxt["done"], nxt["truncated"] = nxt["terminated"].clone(), torch.zeros(B, 1, dtype=torch.bool)
    return TensorDict({"observation": torch.randn(B, obs, generator=g), "action": torch.rand(B, act, generator=g) * 3.6 - 1.8,
                       "next": TensorDict(nxt, [B])}, [B])  # fmt: skip


def same(upstream, lean, terms, call) -> None:
    lean.load_state_dict(upstream.state_dict())
    torch.manual_seed(1)
    a = call(upstream)
    torch.manual_seed(1)
    b = call(lean)
    for name in terms:
        torch.testing.assert_close(b[name], a[name], rtol=1e-5, atol=1e-6, msg=name)
    total_a, total_b = sum(a[t] for t in terms), sum(b[t] for t in terms)
    ga = torch.autograd.grad(total_a, list(upstream.parameters()), allow_unused=True)
    gb = torch.autograd.grad(total_b, list(lean.parameters()), allow_unused=True)
    for x, y in zip(ga, gb):
        assert (x is None) == (y is None)
        if x is not None:
            torch.testing.assert_close(y, x, rtol=1e-4, atol=1e-6)


def test_sac_lean_matches_sacloss():
    b = rlplug.build("sac-pendulum", backend="torchrl", overrides=["hidden_sizes=[16,16]", "loss=sac"])
    backend = importlib.import_module("rlplug_sac.torchrl_backend")
    lean = backend.make_lean_sac_loss(b)
    data = batch()
    same(b.loss, lean, ("loss_actor", "loss_qvalue", "loss_alpha", "entropy"), lambda loss: loss(data.clone()))


def test_td3_lean_matches_td3loss():
    b = rlplug.build("td3-pendulum", backend="torchrl", overrides=["hidden_sizes=[16,16]", "loss=td3"])
    backend = importlib.import_module("rlplug_td3.torchrl_backend")
    lean = backend.make_lean_td3_loss(b)
    data = batch()
    both = lambda loss: {"loss_qvalue": loss.value_loss(data.clone())[0], "loss_actor": loss.actor_loss(data.clone())[0]}  # noqa: E731
    same(b.loss, lean, ("loss_qvalue", "loss_actor"), both)


def test_ddpg_lean_matches_ddpgloss():
    b = rlplug.build("ddpg-pendulum", backend="torchrl", overrides=["hidden_sizes=[16,16]", "loss=ddpg"])
    backend = importlib.import_module("rlplug_ddpg.torchrl_backend")
    lean = backend.make_lean_ddpg_loss(b)
    assert type(b.loss) is backend.DDPGLoss and type(rlplug.build("ddpg-pendulum", backend="torchrl").loss) is backend.LeanDDPGLoss
    with torch.no_grad():  # targets away from the online networks: a target read from the wrong network shows
        for p in (*b.loss.target_value_network_params.values(True, True), *b.loss.target_actor_network_params.values(True, True)):
            p.add_(0.1 * torch.randn_like(p))
    data = batch()
    both = lambda loss: {"loss_qvalue": loss.value_loss(data.clone())[0], "loss_actor": loss.actor_loss(data.clone())[0]}  # noqa: E731
    same(b.loss, lean, ("loss_qvalue", "loss_actor"), both)
    written = [data.clone() for _ in range(2)]
    b.loss.value_loss(written[0]), lean.value_loss(written[1])
    torch.testing.assert_close(written[1]["td_error"], written[0]["td_error"])  # the priority upstream writes


def test_td3bc_lean_matches_td3bcloss(builds, random_dataset):
    b = builds("rlplug_td3bc", "torchrl", "Pendulum-v1", num_envs=1, steps=1000, dataset=random_dataset("Pendulum-v1"),
               loss="td3bc", hidden_sizes=[16, 16], batch_size=32, log_every=10, eval_every=0, alpha=2.5)  # fmt: skip
    backend = importlib.import_module("rlplug_td3bc.torchrl_backend")
    lean = backend.make_lean_td3bc_loss(b)
    assert type(b.loss) is importlib.import_module("torchrl.objectives").TD3BCLoss
    with torch.no_grad():  # targets away from the online networks: a target read from the wrong network shows
        for p in (*b.loss.target_qvalue_network_params.values(True, True), *b.loss.target_actor_network_params.values(True, True)):
            p.add_(0.1 * torch.randn_like(p))
    data = batch()
    both = lambda loss: {"loss_qvalue": loss.qvalue_loss(data.clone())[0], "loss_actor": loss.actor_loss(data.clone())[0],  # noqa: E731
                         "bc_loss": loss.actor_loss(data.clone())[1]["bc_loss"], "lmbd": loss.actor_loss(data.clone())[1]["lmbd"]}  # fmt: skip
    same(b.loss, lean, ("loss_qvalue", "loss_actor", "bc_loss", "lmbd"), both)


def test_lean_loss_falls_back_to_upstream_for_multi_step_estimators():
    b = rlplug.build("sac-pendulum", backend="torchrl", overrides=["hidden_sizes=[16,16]", "loss=sac"])
    backend = importlib.import_module("rlplug_sac.torchrl_backend")
    lean = backend.make_lean_sac_loss(b)
    from rlplug.backends.torchrl import lean_applies

    assert lean_applies(lean, batch())
    lean.make_value_estimator("td1", gamma=0.99)
    assert not lean_applies(lean, batch())


def test_iql_lean_matches_iqlloss(builds, random_dataset):
    b = builds("rlplug_iql", "torchrl", "Pendulum-v1", num_envs=1, steps=1000, dataset=random_dataset("Pendulum-v1"),
               loss="iql", hidden_sizes=[16, 16], batch_size=32, log_every=10, eval_every=0)  # fmt: skip
    backend = importlib.import_module("rlplug_iql.torchrl_backend")
    lean = backend.make_lean_iql_loss(b)
    data = batch()
    same(b.loss, lean, ("loss_actor", "loss_qvalue", "loss_value", "entropy"), lambda loss: loss(data.clone()))


def test_cql_lean_matches_cqlloss(builds, random_dataset):
    b = builds("rlplug_cql", "torchrl", "Pendulum-v1", num_envs=1, steps=1000, dataset=random_dataset("Pendulum-v1"),
               loss="cql", hidden_sizes=[16, 16], batch_size=32, log_every=10, eval_every=0, num_random=4)  # fmt: skip
    backend = importlib.import_module("rlplug_cql.torchrl_backend")
    lean = backend.make_lean_cql_loss(b)
    data = batch()
    same(b.loss, lean, ("loss_actor", "loss_actor_bc", "loss_qvalue", "loss_cql", "loss_alpha", "entropy"),
         lambda loss: loss(data.clone()))


@pytest.mark.parametrize("double_dqn, dueling, n_step", [(False, False, False), (True, False, False), (False, True, False),
                                                      (False, False, True), (True, False, True)])
def test_dqn_lean_matches_dqnloss(double_dqn, dueling, n_step):
    flags = [f"double_dqn={str(double_dqn).lower()}", f"dueling={str(dueling).lower()}"]
    b = rlplug.build("dqn-cartpole", backend="torchrl", overrides=["hidden_sizes=[16,16]", "loss=dqn", *flags])
    backend = importlib.import_module("rlplug_dqn.torchrl_backend")
    lean = backend.make_lean_dqn_loss(b)
    data = batch(obs=4)
    data["action"] = torch.randint(0, 2, (B,))
    if n_step:  # an n-step batch: DQNLoss's TD(0) estimator discounts by gamma ** steps_to_next_obs
        data["steps_to_next_obs"] = torch.randint(1, 4, (B, 1), generator=torch.Generator().manual_seed(2))
        one_step = b.loss(batch(obs=4).update({"action": data["action"]}))["loss"]
        assert not torch.allclose(b.loss(data.clone())["loss"], one_step)
    same(b.loss, lean, ("loss",), lambda loss: loss(data.clone()))


def test_discrete_cql_lean_matches_discretecqlloss(builds, random_dataset):
    b = builds("rlplug_cql", "torchrl", "CartPole-v1", num_envs=1, steps=1000, dataset=random_dataset("CartPole-v1"),
               loss="cql", hidden_sizes=[16, 16], batch_size=32, log_every=10, eval_every=0, min_q_weight=0.3)  # fmt: skip
    backend = importlib.import_module("rlplug_cql.torchrl_backend")
    lean = backend.make_lean_cql_loss(b)  # "cql-lean" on Discrete actions
    assert isinstance(b.loss, backend.PatchedDiscreteCQLLoss) and isinstance(lean, backend.LeanDiscreteCQLLoss)
    with torch.no_grad():  # target parameters away from the online ones: a TD target from the wrong network shows
        for p in b.loss.target_value_network_params.values(True, True):
            p.add_(0.1 * torch.randn_like(p))
    data = batch(obs=4)
    data["action"] = torch.randint(0, 2, (B,))
    same(b.loss, lean, ("loss_qvalue", "loss_cql"), lambda loss: loss(data.clone()))
    a, c = b.loss(data.clone()), lean(data.clone())
    for name in ("td_error", "pred_value", "target_value"):
        torch.testing.assert_close(c[name], a[name], rtol=1e-5, atol=1e-6, msg=name)


def ppo_batch(b, seed: int = 0) -> TensorDict:
    """A minibatch as the rollout loop feeds the PPO loss: observations, actions and their (old) log-probabilities
    from a perturbed policy, advantages, value targets and old values away from the critic's (so clipping bites)."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(B, *b.observation_space.shape, generator=g)
    with torch.no_grad():
        dist = b.loss.actor_network.get_dist(TensorDict({"observation": obs}, [B]))
        action = dist.sample()
        old_log_prob = dist.log_prob(action) + 0.3 * torch.randn(B, generator=g)
        old_value = b.loss.critic_network(TensorDict({"observation": obs}, [B]))["state_value"]
    return TensorDict({"observation": obs, "action": action, "action_log_prob": old_log_prob,
                       "advantage": torch.randn(B, 1, generator=g), "value_target": torch.randn(B, 1, generator=g),
                       "state_value": old_value + 0.5 * torch.randn(B, 1, generator=g)}, [B])  # fmt: skip


def ppo_terms_and_grads(loss, data, terms, lean: bool):
    loss.lean_forward = lean
    out = loss(data.clone())
    total = sum(out[t] for t in ("loss_objective", "loss_critic", "loss_entropy"))
    grads = torch.autograd.grad(total, list(loss.parameters()), allow_unused=True)
    return {name: out[name].detach() for name in terms}, grads, out


PPO_TERMS = ("loss_objective", "loss_critic", "loss_entropy", "kl_approx", "clip_fraction", "entropy", "ESS",
             "max_ratio", "mean_ratio", "explained_variance")  # fmt: skip


@pytest.mark.parametrize("recipe", ["ppo-cartpole", "ppo-pendulum"])
@pytest.mark.parametrize("kl_estimator", ["k3", "k1"])
@pytest.mark.parametrize("value_clip_mode", ["clipped", "pessimistic"])
def test_lean_ppo_matches_clipppoloss_bitwise(recipe, kl_estimator, value_clip_mode):
    """The lean forward of "clip" (SettingsClipPPOLoss) is upstream's ClipPPOLoss forward, bit for bit: every term
    and every gradient, with value clipping, both KL estimators, per-minibatch advantage normalisation too."""
    b = rlplug.build(recipe, backend="torchrl", overrides=["hidden_sizes=[16,16]", "value_clip=0.2", "normalize_observations=true",
                                                          f"torchrl.kl_estimator={kl_estimator}", f"torchrl.value_clip_mode={value_clip_mode}",
                                                          "torchrl.advantage_norm_scope=minibatch"])  # fmt: skip
    loss = b.loss
    assert loss.clip_value and loss.normalize_advantage
    data = ppo_batch(b)
    assert importlib.import_module("rlplug.backends.torchrl").lean_ppo_obstacle(loss, data) is None
    terms = (*PPO_TERMS, "value_clip_fraction") if value_clip_mode == "pessimistic" else PPO_TERMS
    up, up_grads, up_out = ppo_terms_and_grads(loss, data, terms, lean=False)
    lean, lean_grads, lean_out = ppo_terms_and_grads(loss, data, terms, lean=True)
    assert list(lean_out.keys()) == list(up_out.keys())
    assert 0 < float(up["clip_fraction"]) < 1
    for name in terms:
        assert torch.equal(lean[name], up[name]), name
    for x, y in zip(up_grads, lean_grads, strict=True):
        assert (x is None) == (y is None)
        if x is not None:
            assert torch.equal(x, y)


@pytest.mark.parametrize(("recipe", "core"), [("ppo-cartpole", "lstm"), ("ppo-pendulum", "gru")])
def test_lean_recurrent_ppo_matches_upstreams_recurrent_mode(recipe, core):
    """A recurrent update's minibatch of sequences, episodes starting inside them: the lean forward replays each
    stretch between episode starts with the torch RNN (``replay_sequences``) where upstream splits and pads the
    tensordict; the same terms and gradients to float rounding (the RNN runs over other row groupings)."""
    from torchrl.modules import set_recurrent_mode

    from rlplug.backends.torchrl import lean_ppo_obstacle

    b = rlplug.build(recipe, backend="torchrl", overrides=[
        "num_envs=4", "rollout_steps=32", "sequence_length=8", "hidden_sizes=[16]", f"recurrent={core}",
        "recurrent_hidden_size=16", "epochs=1", "minibatches=2", "time_limit=13", "normalize_observations=true",
        "value_clip=0.2"])  # fmt: skip
    minibatches = []
    b.trainer.register_op("process_optim_batch", lambda batch: minibatches.append(batch.clone()) or batch)
    b.trainer.train(256)
    b.trainer.close()
    data = minibatches[-1]
    assert data.batch_dims == 2 and data["is_init"][:, 1:].any()  # episodes start inside the sequences
    with set_recurrent_mode(True):  # as inside the loss's forward
        assert lean_ppo_obstacle(b.loss, data) is None
    assert lean_ppo_obstacle(b.loss, data) is not None  # outside recurrent mode each step would start afresh
    terms = (*PPO_TERMS, "value_clip_fraction")
    up, up_grads, up_out = ppo_terms_and_grads(b.loss, data, terms, lean=False)
    lean, lean_grads, lean_out = ppo_terms_and_grads(b.loss, data, terms, lean=True)
    assert list(lean_out.keys()) == list(up_out.keys())
    for name in terms:
        torch.testing.assert_close(lean[name], up[name], rtol=1e-5, atol=1e-6, msg=name)
    for x, y in zip(up_grads, lean_grads, strict=True):
        assert (x is None) == (y is None)
        if x is not None:
            torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-6)
    upstream = importlib.import_module("torchrl.objectives").ClipPPOLoss
    seen, original = [], upstream.forward
    upstream.forward = lambda self, *args, **kwargs: seen.append(1) or original(self, *args, **kwargs)
    try:
        ppo_terms_and_grads(b.loss, data, terms, lean=True)
        assert not seen  # the lean forward ran, not upstream's
    finally:
        upstream.forward = original


def test_lean_ppo_falls_back_to_upstream():
    """Where the lean forward does not know the setup it is upstream's forward that runs: an advantage the loss
    computes itself, a loss mask, a forward hook on the actor, a recurrent actor given single steps, a masked one."""
    from rlplug.backends.torchrl import lean_ppo_obstacle

    b = rlplug.build("ppo-cartpole", backend="torchrl", overrides=["hidden_sizes=[16,16]"])
    data = ppo_batch(b)
    assert lean_ppo_obstacle(b.loss, data) is None
    assert lean_ppo_obstacle(b.loss, data.exclude("advantage")) is not None
    masked = data.clone()
    masked["shifted_valid"] = torch.ones(B, dtype=torch.bool)
    assert lean_ppo_obstacle(b.loss, masked) is not None
    calls = []
    handle = b.loss.actor_network.module[0].register_forward_hook(lambda *args: calls.append(1))  # on the logits module
    assert lean_ppo_obstacle(b.loss, data) is not None
    b.loss(data.clone())
    assert calls  # upstream's forward ran the module, so its hook
    handle.remove()
    upstream = importlib.import_module("torchrl.objectives").ClipPPOLoss
    seen = []
    original = upstream.forward
    upstream.forward = lambda self, *args, **kwargs: seen.append(1) or original(self, *args, **kwargs)
    try:
        b.loss(data.clone())
        assert not seen
        b.loss(masked)  # a loss mask: upstream's forward
        assert seen
    finally:
        upstream.forward = original
    recurrent = rlplug.build("ppo-cartpole", backend="torchrl", overrides=["hidden_sizes=[16,16]", "recurrent=lstm"])
    assert lean_ppo_obstacle(recurrent.loss, data) is not None
    from rlplug.backends.torchrl.lean_ppo import actor_parts
    from rlplug.backends.torchrl.modules import categorical_actor

    assert actor_parts(b.loss.actor_network) is not None
    assert actor_parts(categorical_actor(torch.nn.Linear(4, 2), mask_key="action_mask")) is None  # MaskedCategorical
