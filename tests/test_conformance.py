"""The algorithm plugins of issue 47 (a2c, trpo, rpo, reinforce, ippo, qmix) and issue 48 (qrdqn, c51, tqc, redq, crossq, discrete SAC,
gSDE), one parametrised module over their cells.

Each cell (algorithm x backend, plus the variants its settings reach) passes the conformance kit
(``rlplug.testing.check_cell``: declarations, construction, a short train with finite optimised terms,
deterministic evaluation, the checkpoint round trip and resume equivalence) and really learns something: a few
hundred steps move every parameter. The skrl losses of the algorithms skrl ships an agent for (A2C, RPO) are
upstream's update, bit for bit on the same transitions and random streams; REINFORCE's Monte-Carlo advantages and
RPO's perturbation are checked where they live. IPPO and QMIX (multi-agent, on MPE) run the kit too; their own facts
(the library's own IPPO with critics on local observations; QMIX's skrl cell, built from parts, computing TorchRL's
QMixerLoss) are checked on hand-wired builds.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")
pytest.importorskip("torchrl")

from conftest import make_build  # noqa: E402
from rlplug.testing import check_cell  # noqa: E402

RECIPES = """
[recipes.a2c-conformance]
version = 1
algorithm = "a2c"
env = "CartPole-v1"
backend = "skrl"
steps = 256
seed = 0
num_envs = 4
target = 0.0
eval_episodes = 2
[recipes.a2c-conformance.hyperparameters]
hidden_sizes = [16, 16]
rollout_steps = 8
minibatches = 2

[recipes.rpo-conformance]
version = 1
algorithm = "rpo"
env = "Pendulum-v1"
backend = "skrl"
steps = 256
seed = 0
num_envs = 4
target = 0.0
eval_episodes = 2
[recipes.rpo-conformance.hyperparameters]
hidden_sizes = [16, 16]
rollout_steps = 16
epochs = 2
minibatches = 2

[recipes.trpo-conformance]
version = 1
algorithm = "trpo"
env = "CartPole-v1"
backend = "skrl"
steps = 256
seed = 0
num_envs = 4
target = 0.0
eval_episodes = 2
[recipes.trpo-conformance.hyperparameters]
hidden_sizes = [16, 16]
rollout_steps = 16
epochs = 2
minibatches = 2

[recipes.reinforce-conformance]
version = 1
algorithm = "reinforce"
env = "CartPole-v1"
backend = "skrl"
steps = 256
seed = 0
num_envs = 4
target = 0.0
eval_episodes = 2
[recipes.reinforce-conformance.hyperparameters]
hidden_sizes = [16, 16]
rollout_steps = 16

[recipes.qrdqn-conformance]
version = 1
algorithm = "qrdqn"
env = "CartPole-v1"
backend = "skrl"
steps = 256
seed = 0
num_envs = 2
target = 0.0
eval_episodes = 2
[recipes.qrdqn-conformance.hyperparameters]
hidden_sizes = [16, 16]
n_quantiles = 5
learning_starts = 64
batch_size = 16
train_every = 32
log_every = 32

[recipes.c51-conformance]
version = 1
algorithm = "c51"
env = "CartPole-v1"
backend = "skrl"
steps = 256
seed = 0
num_envs = 2
target = 0.0
eval_episodes = 2
[recipes.c51-conformance.hyperparameters]
hidden_sizes = [16, 16]
n_atoms = 11
v_min = 0.0
v_max = 20.0
learning_starts = 64
batch_size = 16
train_every = 32
log_every = 32
[recipes.tqc-conformance]
version = 1
algorithm = "tqc"
env = "Pendulum-v1"
backend = "skrl"
steps = 256
seed = 0
num_envs = 2
target = 0.0
eval_episodes = 2
[recipes.tqc-conformance.hyperparameters]
hidden_sizes = [16, 16]
n_critics = 3
n_quantiles = 5
squash_actions = true
learning_starts = 64
batch_size = 16
log_every = 32
[recipes.sac-gsde-conformance]
version = 1
algorithm = "sac"
env = "Pendulum-v1"
backend = "skrl"
steps = 256
seed = 0
num_envs = 2
target = 0.0
eval_episodes = 2
[recipes.sac-gsde-conformance.hyperparameters]
hidden_sizes = [16, 16]
squash_actions = true
use_sde = true
sde_sample_freq = 7   # new matrices every 7 vector steps: the checkpoint (128 vector steps in) falls mid-period
learning_starts = 64
train_every = 4
batch_size = 16
log_every = 32
[recipes.ppo-gsde-conformance]
version = 1
algorithm = "ppo"
env = "Pendulum-v1"
backend = "skrl"
steps = 256
seed = 0
num_envs = 2
target = 0.0
eval_episodes = 2
[recipes.ppo-gsde-conformance.hyperparameters]
hidden_sizes = [16, 16]
use_sde = true
sde_sample_freq = 5   # 64-step rollouts: the checkpoint falls mid-period
rollout_steps = 64
epochs = 2
minibatches = 2
normalize_observations = true
[recipes.redq-conformance]
version = 1
algorithm = "redq"
env = "Pendulum-v1"
backend = "skrl"
steps = 256
seed = 0
num_envs = 2
target = 0.0
eval_episodes = 2
[recipes.redq-conformance.hyperparameters]
hidden_sizes = [16, 16]
n_critics = 4
critic_subset = 2
utd_ratio = 2.0
squash_actions = true
learning_starts = 64
batch_size = 16
log_every = 32
[recipes.crossq-conformance]
version = 1
algorithm = "crossq"
env = "Pendulum-v1"
backend = "skrl"
steps = 256
seed = 0
num_envs = 2
target = 0.0
eval_episodes = 2
[recipes.crossq-conformance.hyperparameters]
hidden_sizes = [16, 16]
policy_delay = 2
renorm_warmup_steps = 8   # the renormalisation corrects within the short run, and resumes with its counter
squash_actions = true
learning_starts = 64
batch_size = 16
log_every = 32
[recipes.sac-discrete-conformance]
version = 1
algorithm = "sac"
env = "CartPole-v1"
backend = "skrl"
steps = 256
seed = 0
num_envs = 2
target = 0.0
eval_episodes = 2
[recipes.sac-discrete-conformance.hyperparameters]
hidden_sizes = [16, 16]
target_entropy = 0.14
learning_starts = 64
batch_size = 16
log_every = 32
[recipes.qmix-conformance]
version = 1
algorithm = "qmix"
env = "mpe:simple_spread"
backend = "skrl"
steps = 96
seed = 0
num_envs = 2
target = -100.0
eval_episodes = 2
[recipes.qmix-conformance.env_kwargs]
N = 3
max_cycles = 25
[recipes.qmix-conformance.hyperparameters]
hidden_sizes = [16, 16]
mixing_embed_dim = 8
learning_starts = 32   # 48 steps an env: resume is checked mid-episode, after gradient steps began
batch_size = 16
log_every = 32

[recipes.qmix-vmas-conformance]
version = 1
algorithm = "qmix"
env = "vmas:navigation"
backend = "skrl"
steps = 96
seed = 0
num_envs = 2
target = -100.0
eval_episodes = 2
[recipes.qmix-vmas-conformance.env_kwargs]
n_agents = 3
max_steps = 25   # an episode ends before the resume: respawns draw from VMAS's own RNG states
continuous_actions = false
[recipes.qmix-vmas-conformance.hyperparameters]
hidden_sizes = [16, 16]
mixing_embed_dim = 8
learning_starts = 32
batch_size = 16
log_every = 32

[recipes.qmix-masked-conformance]
version = 1
algorithm = "qmix"
env = "pz:masked_ma_envs:make_pick"
backend = "skrl"
steps = 96
seed = 0
num_envs = 2
target = -100.0
eval_episodes = 2
[recipes.qmix-masked-conformance.hyperparameters]
hidden_sizes = [16, 16]
mixing_embed_dim = 8
learning_starts = 32   # a resume after the masked warm-up (the exploration policy's on TorchRL)
batch_size = 16
log_every = 32

[recipes.ippo-conformance]
version = 1
algorithm = "ippo"
env = "mpe:simple_spread"
backend = "skrl"
steps = 80
seed = 0
num_envs = 2
target = -100.0
eval_episodes = 2
[recipes.ippo-conformance.env_kwargs]
N = 3
max_cycles = 25
[recipes.ippo-conformance.hyperparameters]
hidden_sizes = [16, 16]
rollout_steps = 40   # 40-step rollouts end inside 25-step episodes: resume is checked mid-episode
epochs = 1
"""

# (recipe, overrides): the default cells, and the settings that take another code path
CELLS = {
    "a2c": ("a2c-conformance", []),
    "a2c-pendulum-rmsprop": ("a2c-conformance", ["env=Pendulum-v1", "optimizer=rmsprop", "normalize_advantage=false",
                                                 "lr_schedule=linear"]),
    "trpo": ("trpo-conformance", []),
    "trpo-pendulum-normalised-linear": ("trpo-conformance", ["env=Pendulum-v1", "normalize_observations=true",
                                                            "normalize_advantage=false", "lr_schedule=linear"]),
    "rpo": ("rpo-conformance", []),
    "reinforce": ("reinforce-conformance", []),
    "reinforce-no-baseline-pendulum": ("reinforce-conformance", ["env=Pendulum-v1", "baseline=false"]),
    "qrdqn": ("qrdqn-conformance", []),
    "qrdqn-nstep-soft-dueling-double": ("qrdqn-conformance", ["n_step=3", "target_update=soft", "dueling=true", "double_dqn=true"]),
    "c51": ("c51-conformance", []),
    "c51-nstep-soft-dueling": ("c51-conformance", ["n_step=3", "target_update=soft", "dueling=true"]),
    "tqc": ("tqc-conformance", []),
    "redq": ("redq-conformance", []),
    "crossq": ("crossq-conformance", []),
    "sac-gsde": ("sac-gsde-conformance", []),
    "sac-gsde-expln-per-rollout-at-warmup-unsquashed": ("sac-gsde-conformance", ["use_expln=true", "sde_sample_freq=-1",
                                                                                 "use_sde_at_warmup=true", "squash_actions=false"]),
    "ppo-gsde": ("ppo-gsde-conformance", []),
    "ppo-gsde-expln-per-rollout": ("ppo-gsde-conformance", ["use_expln=true", "sde_sample_freq=-1", "normalize_observations=false"]),
    "sac-discrete": ("sac-discrete-conformance", []),
    "sac-discrete-auto-entropy-hard-target": ("sac-discrete-conformance", ["target_entropy=auto", "target_update=hard",
                                                                          "target_update_period=8"]),
    "crossq-three-critics-fixed-alpha": ("crossq-conformance", ["n_critics=3", "learn_alpha=false", "policy_delay=1"]),
    "qmix": ("qmix-conformance", []),
    "qmix-vdn-per-agent-hard-target-huber": ("qmix-conformance", ["mixer=vdn", "share_parameters=false", "target_update=hard",
                                                                  "target_update_period=8", "td_loss=huber"]),
    "qmix-vmas-navigation": ("qmix-vmas-conformance", []),
    "qmix-action-masks": ("qmix-masked-conformance", []),
    "ippo": ("ippo-conformance", []),
    "ippo-per-agent-parameters": ("ippo-conformance", ["share_parameters=false"]),
}
BACKENDS = ("skrl", "torchrl")


@pytest.fixture(scope="module")
def recipe_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("conformance") / "recipes.toml"
    path.write_text(RECIPES)
    return str(path)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cell", CELLS)
def test_cell_passes_the_conformance_kit(recipe_file, cell, backend):
    recipe, overrides = CELLS[cell]
    passed = check_cell(recipe, backend, overrides, recipe_files=[recipe_file])
    assert passed[-1] == "resume equivalence" and len(passed) == 6


# (plugin module, env, hyperparameters): a few hundred steps of each algorithm
TRAINED = {
    "a2c": ("rlplug_a2c", "CartPole-v1", dict(rollout_steps=8)),
    "trpo": ("rlplug_trpo", "CartPole-v1", dict(rollout_steps=32, epochs=2, minibatches=2)),
    "trpo-gaussian": ("rlplug_trpo", "Pendulum-v1", dict(rollout_steps=32, epochs=2, minibatches=2)),
    "rpo": ("rlplug_rpo", "Pendulum-v1", dict(rollout_steps=32, epochs=2, minibatches=2)),
    "reinforce": ("rlplug_reinforce", "CartPole-v1", dict(rollout_steps=32)),
    "qrdqn": ("rlplug_qrdqn", "CartPole-v1", dict(learning_starts=64, batch_size=16, train_every=32, n_quantiles=5)),
    "c51": ("rlplug_c51", "CartPole-v1", dict(learning_starts=64, batch_size=16, train_every=32, n_atoms=11, v_min=0.0, v_max=20.0)),
    "tqc": ("rlplug_tqc", "Pendulum-v1", dict(learning_starts=64, batch_size=16, n_critics=3, n_quantiles=5, squash_actions=True)),
    "redq": ("rlplug_redq", "Pendulum-v1", dict(learning_starts=64, batch_size=16, n_critics=4, critic_subset=2, squash_actions=True)),
    "sac-discrete": ("rlplug_sac", "CartPole-v1", dict(learning_starts=64, batch_size=16, target_entropy=0.14)),
    "sac-gsde": ("rlplug_sac", "Pendulum-v1", dict(learning_starts=64, batch_size=16, squash_actions=True, use_sde=True)),
    "ppo-gsde": ("rlplug_ppo", "Pendulum-v1", dict(rollout_steps=32, epochs=2, minibatches=2, use_sde=True)),
    "crossq": ("rlplug_crossq", "Pendulum-v1", dict(learning_starts=64, batch_size=16, policy_delay=2, renorm_warmup_steps=8,
                                                    squash_actions=True)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("algorithm", TRAINED)
def test_training_moves_every_parameter_with_finite_terms(builds, algorithm, backend):
    module, env, hp = TRAINED[algorithm]
    build = builds(module, backend, env, num_envs=4, steps=512, hidden_sizes=[16, 16], **hp)
    # a list of TorchRL critics is stacked into the loss's own parameters (SACLoss's): those are what train
    models = {name: model for name, model in build.models.items() if not isinstance(model, list)}
    if backend == "torchrl":
        models["loss"] = build.loss
    # parameters, not buffers (running statistics, a distributional support: fixed or not learnt)
    before = {f"{name}.{key}": value.detach().clone() for name, model in models.items() for key, value in model.named_parameters()}
    history = []
    build.trainer.train(512, callbacks=[lambda trainer, metrics: history.append(metrics)])
    assert build.trainer.env_steps == 512 and history
    terms = {f"loss/{term}" for term in build.loss_entry.terms}
    assert all(terms <= metrics.keys() and all(math.isfinite(v) for v in metrics.values()) for metrics in history)
    after = {f"{name}.{key}": value for name, model in models.items() for key, value in model.named_parameters()}
    still = [key for key, value in before.items() if torch.equal(value, after[key])]
    assert not still, f"{algorithm}/{backend}: parameters that never moved: {still}"
    # what `rlplug train`'s divergence guard checks: no tensor of the trainer's state is NaN or infinite (a bound
    # kept as an infinite buffer would stop every run at its first check)
    from rlplug.runs.checkpoint_io import non_finite_tensors

    assert list(non_finite_tensors(build.trainer.state_dict())) == []


# ---- skrl: the default losses are upstream's update (A2C, RPO) --------------------------------------


def _skrl_pair(algorithm, env):
    """Upstream's skrl agent and rlplug's loss-delegating one over copies of the same models, configured alike."""
    from rlplug.backends.skrl import configure_threads, seed_skrl
    from skrl.memories.torch import RandomMemory
    from skrl.resources.preprocessors.torch import RunningStandardScaler

    configure_threads()
    seed_skrl(0)
    if algorithm == "a2c":
        from rlplug_a2c import skrl_backend as cell
        from skrl.agents.torch.a2c import A2C as Upstream
        from skrl.agents.torch.a2c import A2C_CFG as Config

        cfg = dict(mini_batches=2, entropy_loss_scale=0.01)
        loss = cell.A2CLoss(entropy_loss_scale=0.01, value_loss_scale=1.0)  # skrl's A2C value loss is unscaled
        ours_class, gaussian = cell.LossDelegatingA2C, None
    else:
        from rlplug_rpo import skrl_backend as cell
        from skrl.agents.torch.rpo import RPO as Upstream
        from skrl.agents.torch.rpo import RPO_CFG as Config

        cfg = dict(learning_epochs=2, mini_batches=2, entropy_loss_scale=0.01, ratio_clip=0.2, value_clip=0.2, value_loss_scale=1.0,
                   alpha=0.3)
        loss = cell.RPOLoss(0.3, 0.2, 0.2, 0.01, 1.0)
        ours_class, gaussian = cell.LossDelegatingRPO, cell.PerturbedGaussianPolicy
    from rlplug.backends.skrl import stochastic_policy, value_model

    models = {
        "policy": stochastic_policy(env.observation_space, env.action_space, "cpu", [32, 32], "tanh", initial_log_std=-0.5,
                                    gaussian_class=gaussian),
        "value": value_model(env.observation_space, env.action_space, "cpu", [32, 32], "tanh"),
    }  # fmt: skip

    def agent(cls, **extra):
        config = Config(
            rollouts=16, learning_rate=1e-3, grad_norm_clip=0.5, **cfg,
            observation_preprocessor=RunningStandardScaler,
            observation_preprocessor_kwargs={"size": env.observation_space, "device": "cpu"},
            value_preprocessor=RunningStandardScaler, value_preprocessor_kwargs={"size": 1, "device": "cpu"},
            experiment={"write_interval": 0, "checkpoint_interval": 0},
        )  # fmt: skip
        made = cls(models=copy.deepcopy(models), memory=RandomMemory(memory_size=16, num_envs=env.num_envs), cfg=config,
                   device="cpu", observation_space=env.observation_space, action_space=env.action_space, **extra)  # fmt: skip
        made.init()
        made.enable_training_mode(True)
        return made

    terms = ("loss_policy", "loss_value", "loss_entropy")
    return agent(Upstream), agent(ours_class, loss=loss, terms=terms, reported=("approx_kl",))


@pytest.mark.parametrize(("algorithm", "env_id"), [("a2c", "CartPole-v1"), ("a2c", "Pendulum-v1"), ("rpo", "Pendulum-v1")])
def test_skrl_loss_is_upstream_update(algorithm, env_id):
    """The same transitions and random streams through upstream's agent and rlplug's (the default loss on the family's
    delegating update) give the same losses and parameters."""
    from rlplug.backends.skrl.env import make_vector_env

    env = make_vector_env(env_id, {}, 4, 0, "cpu")
    try:
        upstream, ours = _skrl_pair(algorithm, env)
        observations, _ = env.reset()
        total = 16 * 2
        for timestep in range(total):
            actions = []
            for one in (upstream, ours):
                torch.manual_seed(timestep)
                with torch.no_grad():
                    actions.append(one.act(observations, None, timestep=timestep, timesteps=total)[0])
            assert torch.equal(*actions)
            with torch.no_grad():
                next_observations, rewards, terminated, truncated, infos = env.step(actions[0])
            for one in (upstream, ours):
                one.record_transition(observations=observations, states=None, actions=actions[0], rewards=rewards.clone(),
                                      next_observations=next_observations, next_states=None, terminated=terminated,
                                      truncated=truncated, infos=infos, timestep=timestep, timesteps=total)  # fmt: skip
            for one in (upstream, ours):
                torch.manual_seed(10_000 + timestep)  # the update's minibatch permutations, Gaussian and uniform draws
                one.post_interaction(timestep=timestep, timesteps=total)
            observations = next_observations
    finally:
        env.close()
    for term, tag in (("loss_policy", "Policy loss"), ("loss_value", "Value loss"), ("loss_entropy", "Entropy loss")):
        got, expected = ours.tracking_data[f"Loss / {term}"], upstream.tracking_data[f"Loss / {tag}"]
        assert len(got) == len(expected) == 2 and got == pytest.approx(expected, rel=1e-5, abs=1e-7), term
    for role in ("policy", "value"):
        for a, b in zip(upstream.models[role].parameters(), ours.models[role].parameters(), strict=True):
            assert torch.allclose(a, b, atol=1e-6), role
    assert upstream.optimizer.state and ours.optimizer.state  # both really stepped


def test_skrl_trpo_policy_step_is_upstreams_natural_gradient_step():
    """One accepted step of the skrl cell's policy (its loss through ``trust_region_step``) moves the parameters by
    upstream's full step: skrl's own surrogate gradient, conjugate gradient on its Fisher-vector products, step size
    sqrt(2 max_kl / s.Fs)."""
    from types import SimpleNamespace

    from rlplug.backends.skrl import TrustRegion, configure_threads, stochastic_policy, trust_region_step, value_model
    from rlplug_trpo.skrl_backend import TRPOLoss
    from skrl.agents.torch.trpo import trpo as upstream
    from torch.nn.utils import parameters_to_vector

    import gymnasium as gym

    configure_threads()
    torch.manual_seed(0)
    observation_space, action_space = gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-2, 2, (2,))
    policy = stochastic_policy(observation_space, action_space, "cpu", [16, 16], "tanh", initial_log_std=-0.5)
    value = value_model(observation_space, action_space, "cpu", [16, 16], "tanh")
    agent = SimpleNamespace(policy=policy, backup_policy=copy.deepcopy(policy), value=value)  # as the agent's before a step
    observations = torch.randn(64, 3)
    with torch.no_grad():
        actions, outputs = policy.act({"observations": observations, "states": None}, role="policy")
    batch = {"observations": observations, "states": None, "actions": actions, "log_prob": outputs["log_prob"],
             "advantages": torch.randn(64, 1), "returns": torch.randn(64, 1)}  # fmt: skip
    damping, max_kl = 0.1, 0.01

    # upstream's step (skrl's TRPO.update up to the line search)
    surrogate = upstream.surrogate_loss(policy=policy, observations=observations, states=None, actions=actions,
                                        log_prob=batch["log_prob"], advantages=batch["advantages"])  # fmt: skip
    gradient = torch.cat([g.view(-1) for g in torch.autograd.grad(surrogate, policy.parameters())])
    direction = upstream.conjugate_gradient(policy=policy, observations=observations, states=None, b=gradient,
                                            damping=damping, num_iterations=10)  # fmt: skip
    curvature = (direction * upstream.fisher_vector_product(policy=policy, observations=observations, states=None,
                                                            vector=direction, damping=damping)).sum()  # fmt: skip
    full_step = torch.sqrt(2 * max_kl / curvature) * direction

    start = parameters_to_vector(policy.parameters()).detach().clone()

    def evaluate():
        terms = TRPOLoss()(agent, batch, 0)
        return terms["loss_policy"], terms["kl"]

    step = trust_region_step(policy.parameters(), evaluate, TrustRegion(max_kl, damping, cg_steps=10, line_search_steps=1))
    assert step.step_fraction == 1.0 and 0 < step.kl < max_kl and step.loss < -surrogate.item()
    moved = parameters_to_vector(policy.parameters()).detach() - start
    assert torch.allclose(moved, full_step, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_trpo_updates_stay_inside_the_trust_region(builds, backend):
    """Every update's KL from the collecting policy stays under max_kl; a rejected line search leaves the policy as it
    was (fraction 0, KL 0); some updates are accepted."""
    max_kl = 0.005
    build = builds("rlplug_trpo", backend, "CartPole-v1", num_envs=2, steps=512, rollout_steps=64, epochs=2,
                   minibatches=2, max_kl=max_kl, hidden_sizes=[16, 16])  # fmt: skip
    history = []
    build.trainer.train(512, callbacks=[lambda trainer, metrics: history.append(metrics)])
    fractions = [metrics["train/step_fraction"] for metrics in history]
    kls = [metrics["loss/kl"] for metrics in history]
    assert len(history) == 4 and any(f > 0 for f in fractions)
    assert all(0 <= kl < max_kl for kl in kls) and all(kl == 0 for kl, f in zip(kls, fractions) if f == 0)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])  # categorical; Gaussian with a learnt log-std
def test_one_trpo_update_is_the_same_on_skrl_and_torchrl(builds, env_id):
    """The same weights and the same rollout (TorchRL's, copied into skrl's memory as its trainer records it) give the
    same natural-gradient step and value epochs on both backends: one value minibatch per epoch."""
    from test_ppo_backend_parity import _copy_weights, _max_difference, _mlp, _record_rollout, _update_both

    hp = dict(num_envs=4, seed=3, rollout_steps=16, epochs=2, minibatches=1, hidden_sizes=[32, 32], bootstrap_truncated=True)
    skrl, torchrl = (builds("rlplug_trpo", backend, env_id, **hp) for backend in ("skrl", "torchrl"))
    agent, trainer = skrl.trainer.agent, torchrl.trainer
    nets = [(agent.policy.net, _mlp(trainer.actor)), (agent.value.net, _mlp(trainer.critic))]
    _copy_weights(nets)
    batch = next(trainer._batches)  # [envs, steps]
    _record_rollout(agent, batch)
    metrics = _update_both(agent, trainer, batch)

    tracked = {name: values[-1] for name, values in agent.tracking_data.items()}
    assert metrics["train/step_fraction"] == tracked["Policy / Step fraction"] > 0  # a step was taken, on both
    assert metrics["loss/kl"] == pytest.approx(tracked["Loss / kl"], rel=1e-4)
    assert metrics["loss/loss_critic"] == pytest.approx(tracked["Loss / loss_value"], rel=1e-5)
    for skrl_net, torchrl_net in nets:
        assert _max_difference(skrl_net, torchrl_net) < 1e-5
    if env_id == "Pendulum-v1":
        (scale,) = [p for name, p in trainer.actor.named_parameters() if name.endswith("state_independent_scale")]
        assert agent.policy.log_std_parameter.abs().max().item() > 0  # moved by the step, from 0 on both
        torch.testing.assert_close(scale, agent.policy.log_std_parameter, rtol=1e-5, atol=1e-6)


# ---- what each algorithm changes ---------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_rpo_perturbs_the_mean_inside_the_loss_only(builds, backend):
    """The loss evaluates the taken actions under a perturbed mean (two calls on one batch differ, and agree at
    alpha = 0); acting, collecting and evaluating read the mean itself (deterministic evaluation: the kit)."""
    values = {}
    for alpha in (0.5, 0.0):
        build = builds("rlplug_rpo", backend, "Pendulum-v1", num_envs=2, steps=64, rollout_steps=32, epochs=1, minibatches=1,
                       alpha=alpha, hidden_sizes=[16, 16])  # fmt: skip
        trainer = build.trainer
        if backend == "skrl":
            trainer.step()
            memory = trainer.agent.memory
            names = trainer.agent._tensors_names
            batch = dict(zip(names, memory.sample_all(names=names)[0]))
            calls = [build.loss(trainer.agent, batch, 0)["loss_policy"].item() for _ in range(2)]
        else:
            trainer.step()
            batch = build.memory._storage[: len(build.memory)]
            calls = [build.loss(batch.clone())["loss_objective"].item() for _ in range(2)]
        values[alpha] = calls
    assert values[0.5][0] != values[0.5][1]
    assert values[0.0][0] == values[0.0][1]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("baseline", [True, False])
def test_reinforce_advantages_are_monte_carlo_returns(builds, backend, baseline):
    """With lambda = 1 the value targets are the discounted returns to the rollout's end (bootstrapped there); the
    advantages are those returns less the critic's values, or (``baseline = false``) the returns themselves,
    standardised over the rollout."""
    gamma = 0.9
    build = builds("rlplug_reinforce", backend, "CartPole-v1", num_envs=2, steps=64, rollout_steps=32, gamma=gamma,
                   baseline=baseline, hidden_sizes=[16, 16], normalize_advantage=True)  # fmt: skip
    trainer = build.trainer
    trainer.step()
    if backend == "skrl":
        tensors = trainer.agent.memory.tensors
        rewards, ended = tensors["rewards"][..., 0], (tensors["terminated"] | tensors["truncated"])[..., 0]
        returns, advantages, values = tensors["returns"][..., 0], tensors["advantages"][..., 0], tensors["values"][..., 0]
        rewards, ended, returns, advantages, values = (t.T for t in (rewards, ended, returns, advantages, values))  # [env, t]
    else:
        stored = build.memory._storage[: len(build.memory)].reshape(2, 32)  # [env, t]
        rewards, ended = stored["next", "reward"][..., 0], stored["next", "done"][..., 0]
        returns, advantages, values = stored["value_target"][..., 0], stored["advantage"][..., 0], stored["state_value"][..., 0]
    # a return is the reward plus gamma times the next return, inside an episode (Monte-Carlo, no per-step bootstrap)
    inside = ~ended[:, :-1]
    recursion = rewards[:, :-1] + gamma * returns[:, 1:]
    assert torch.allclose(returns[:, :-1][inside], recursion[inside], atol=1e-4)
    raw = returns - values if baseline else returns
    expected = (raw - raw.mean()) / (raw.std() + 1e-8)
    assert torch.allclose(advantages, expected, atol=1e-4)
    assert np.isfinite(advantages.numpy()).all()


# ---- ippo: the library's own IPPO, critics on each agent's own observation ---------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_ippo_is_the_librarys_ippo_with_local_critics(backend):
    pytest.importorskip("mpe2")
    from mappo_builds import make_mappo_build

    build = make_mappo_build(backend, algorithm="ippo", steps=200, share_parameters=False)
    try:
        assert build.settings["centralised_critic"] is False and "centralised_critic" not in build.hp
        spaces = build.extras["multiagent"]
        if backend == "skrl":
            from skrl.multi_agents.torch.ippo import IPPO, IPPO_CFG

            assert isinstance(build.trainer.agent, IPPO) and type(build.trainer.agent.cfg) is IPPO_CFG
            # each critic's first layer takes only its agent's observation (MAPPO's adds the global state)
            first = next(m for m in build.models["agent_0"]["value"].modules() if isinstance(m, torch.nn.Linear))
            assert first.in_features == spaces.observation_space.shape[0]
        else:
            from torchrl.modules import MultiAgentMLP
            from torchrl.objectives.multiagent import IPPOLoss

            assert type(build.loss) is IPPOLoss
            critic = next(m for m in build.models["critic"].modules() if isinstance(m, MultiAgentMLP))
            assert critic.centralized is False and critic.share_params is False
        history = []
        build.trainer.train(200, callbacks=[lambda trainer, metrics: history.append(metrics)])
        terms = {f"loss/{term}" for term in build.loss_entry.terms}
        assert history and all(terms <= m.keys() and all(math.isfinite(m[t]) for t in terms) for m in history)
    finally:
        build.trainer.close()


# ---- qmix: value decomposition over the team; skrl's cell from parts is TorchRL's QMixerLoss ---------------


QMIX_VARIANTS = {
    "qmix-mpe": dict(),
    "vdn-per-agent-mpe": dict(mixer="vdn", share_parameters=False),
    "qmix-vmas": dict(env=("vmas:navigation", {"n_agents": 3, "max_steps": 25, "continuous_actions": False})),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("variant", QMIX_VARIANTS)
def test_qmix_training_moves_every_network_with_finite_terms(backend, variant):
    pytest.importorskip("mpe2" if variant.endswith("mpe") else "vmas")
    from mappo_builds import make_mappo_build

    variant_name, variant = variant, QMIX_VARIANTS[variant]
    build = make_mappo_build(backend, algorithm="qmix", steps=512, num_envs=4, **variant)
    try:
        # skrl: one team model holds the agents' networks and the mixer; TorchRL: QMixerLoss holds both
        model = build.models["q_network"] if backend == "skrl" else build.loss
        before = {k: v.detach().clone() for k, v in model.named_parameters() if "target" not in k}
        assert any("mixer" in k or "hyper" in k for k in before) == (variant.get("mixer", "qmix") == "qmix")
        history = []
        build.trainer.train(512, callbacks=[lambda trainer, metrics: history.append(metrics)])
        terms = {f"loss/{term}" for term in build.loss_entry.terms}
        assert history and all(terms <= m.keys() and all(math.isfinite(v) for v in m.values()) for m in history)
        after = dict(model.named_parameters())
        assert [k for k, v in before.items() if torch.equal(v, after[k])] == []
        # MPE episodes end at max_cycles, a time limit: stored unterminated on both backends, so the target
        # bootstraps there (VMAS tells no time limit apart: its ends are terminal)
        if backend == "skrl":
            terminated = build.trainer.agent.memory.tensors["terminated"][: build.trainer.agent.memory.memory_index]
        else:
            terminated = build.memory[: len(build.memory)].get(("next", "terminated"))
        assert bool(terminated.any()) == variant_name.endswith("vmas")
        # every agent acts: greedy joint actions, one per agent, from [B, n_agents, obs_dim] observations
        spaces = build.extras["multiagent"]
        actions = build.trainer.act_deterministic(np.zeros((3, spaces.n_agents, *spaces.observation_space.shape), np.float32))
        assert actions.shape == (3, spaces.n_agents)
    finally:
        build.trainer.close()


def _skrl_weights_from_torchrl(torchrl_loss, skrl_model, n_agents, target=False):
    """TorchRL's QMixerLoss parameters (online or target) as the skrl team model's state dict."""
    prefix = "target_" if target else ""
    local = getattr(torchrl_loss, f"{prefix}local_value_network_params").flatten_keys(".")
    mixer = getattr(torchrl_loss, f"{prefix}mixer_network_params").flatten_keys(".")
    state = {}
    for key, value in local.items():
        name = key.removeprefix("module.0.module.params.")
        if len(skrl_model.nets) == 1:
            state[f"nets.0.{name}"] = value.detach().clone()
        else:
            state.update({f"nets.{i}.{name}": value[i].detach().clone() for i in range(n_agents)})
    state.update({f"mixer.{key.removeprefix('module.')}": value.detach().clone() for key, value in mixer.items()})
    assert state.keys() == skrl_model.state_dict().keys()
    return state


@pytest.mark.parametrize("variant", [dict(), dict(mixer="vdn", share_parameters=False, td_loss="huber")])
def test_one_qmix_loss_is_the_same_on_skrl_and_torchrl(variant):
    """skrl's QMIX, built from parts, computes TorchRL's QMixerLoss: the same weights and joint transitions give
    the same loss, and the same gradient on every agent network and mixer parameter."""
    pytest.importorskip("mpe2")
    from mappo_builds import make_mappo_build
    from tensordict import TensorDict

    torchrl_build, skrl_build = (make_mappo_build(b, algorithm="qmix", **variant) for b in ("torchrl", "skrl"))
    try:
        spaces, group = torchrl_build.extras["multiagent"], torchrl_build.trainer.group
        n, size = spaces.n_agents, spaces.observation_space.shape[0]
        agent = skrl_build.trainer.agent
        for model, target in ((agent.q_network, False), (agent.target_q_network, True)):
            model.load_state_dict(_skrl_weights_from_torchrl(torchrl_build.loss, model, n, target))
        generator = torch.Generator().manual_seed(0)
        B = 64
        observations, next_observations = torch.randn(B, n, size, generator=generator), torch.randn(B, n, size, generator=generator)
        actions = torch.randint(int(spaces.action_space.n), (B, n), generator=generator)
        rewards, terminated = torch.randn(B, 1, generator=generator), torch.rand(B, 1, generator=generator) < 0.2
        batch = TensorDict({
            group: TensorDict({"observation": observations, "action": actions}, [B, n]),
            "next": TensorDict({group: TensorDict({"observation": next_observations}, [B, n]), "reward": rewards,
                                "done": terminated, "terminated": terminated}, [B]),
        }, [B])  # fmt: skip
        torchrl_loss = torchrl_build.loss(batch)["loss"]
        skrl_terms = skrl_build.loss(agent, {
            "observations": observations.reshape(B, -1), "next_observations": next_observations.reshape(B, -1),
            "actions": actions, "rewards": rewards, "terminated": terminated,
        }, "q")  # fmt: skip
        assert torch.allclose(skrl_terms["loss_q"], torchrl_loss, atol=1e-6, rtol=1e-5)
        torchrl_loss.backward()
        skrl_terms["loss_q"].backward()
        expected = _skrl_weights_from_torchrl(
            type("Grads", (), {"local_value_network_params": torchrl_build.loss.local_value_network_params.apply(lambda p: p.grad),
                               "mixer_network_params": torchrl_build.loss.mixer_network_params.apply(lambda p: p.grad)})(),
            agent.q_network, n,
        )
        for name, parameter in agent.q_network.named_parameters():
            assert torch.allclose(parameter.grad, expected[name], atol=1e-6, rtol=1e-4), name
    finally:
        torchrl_build.trainer.close()
        skrl_build.trainer.close()


def test_the_team_view_joins_observations_and_averages_rewards():
    """skrl's team: agents' observations side by side in agent order, actions split per agent, the mean reward, the
    team's episode end (TorchRL's trainer writes the same mean at ("next", "reward")); an end at a PettingZoo env's
    step limit is a truncation with the last observations given, as TorchRL's PettingZoo env reports it."""
    from rlplug.backends.skrl.team import TeamView

    class TwoAgents:  # the shape of rlplug's skrl multi-agent vector envs: per-agent dicts of [num_envs, ...]
        possible_agents, num_envs = ["a", "b"], 2

        def reset(self):
            return {"a": torch.zeros(2, 3), "b": torch.ones(2, 3)}, {}

        def step(self, actions):
            self.actions = actions
            done, no = torch.tensor([[True], [False]]), torch.tensor([[False], [False]])  # the wrappers mark ends terminated
            return ({"a": torch.full((2, 3), 2.0), "b": torch.full((2, 3), 3.0)}, {"a": torch.tensor([[1.0], [2.0]]),
                    "b": torch.tensor([[3.0], [6.0]])}, {"a": done, "b": done}, {"a": no, "b": no}, {})  # fmt: skip

    class TwoAgentsWithStepLimit(TwoAgents):  # VectorPettingZooEnv: env 0 ended at its step limit
        def step(self, actions):
            self.final_observations = {"a": torch.full((2, 3), 7.0), "b": torch.full((2, 3), 8.0)}
            self.time_limit_ends = torch.tensor([[True], [False]])
            return super().step(actions)

    env = TwoAgents()
    team = TeamView(env)
    observations, _ = team.reset()
    assert observations.tolist() == [[0, 0, 0, 1, 1, 1]] * 2
    next_observations, reward, terminated, truncated, infos = team.step(torch.tensor([[0, 4], [1, 3]]))
    assert env.actions["a"].tolist() == [[0], [1]] and env.actions["b"].tolist() == [[4], [3]]
    assert next_observations.tolist() == [[2, 2, 2, 3, 3, 3]] * 2
    assert reward.tolist() == [[2.0], [4.0]] and terminated.tolist() == [[True], [False]] and truncated.tolist() == [[False]] * 2
    assert "final_obs" not in infos  # VMAS: every end a termination
    _, _, terminated, truncated, infos = TeamView(TwoAgentsWithStepLimit()).step(torch.tensor([[0, 4], [1, 3]]))
    assert terminated.tolist() == [[False], [False]] and truncated.tolist() == [[True], [False]]
    assert infos["final_obs"].tolist() == [[7, 7, 7, 8, 8, 8]] * 2


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mask_in", ["observation", "info"])
def test_qmix_never_picks_a_masked_action(backend, mask_in):
    """Action masks (a user's PettingZoo env): the random warm-up, epsilon's random actions, the greedy actions,
    evaluation and the exported policy choose among each agent's valid actions only; the target's max too."""
    pytest.importorskip("pettingzoo")
    import masked_ma_envs
    from mappo_builds import make_mappo_build

    pick = masked_ma_envs.MaskedPickEnv
    pick.invalid_actions = pick.valid_actions = 0
    build = make_mappo_build(backend, algorithm="qmix", env=("pz:masked_ma_envs:make_pick", {"mask_in": mask_in}), num_envs=2,
                             steps=400, learning_starts=100, epsilon_decay_steps=200, epsilon_end=0.3)  # fmt: skip
    try:
        history = []
        build.trainer.train(400, callbacks=[lambda trainer, metrics: history.append(metrics)])
        assert all(math.isfinite(v) for m in history for v in m.values()), history
        assert pick.valid_actions >= 400 * 2 and pick.invalid_actions == 0  # warm-up and epsilon-greedy alike
        returns = build.trainer.evaluate(2)  # every pick valid: full 16-step episodes, >= 0.2 each step
        assert pick.invalid_actions == 0 and min(returns) >= 16 * 0.2 - 1e-6
        # the exported policy takes the mask beside the observations and agrees with act_deterministic
        spaces = build.extras["multiagent"]
        generator = np.random.default_rng(0)
        observations = {"action_mask": np.zeros((32, spaces.n_agents, 4), np.float32),
                        "observation": generator.standard_normal((32, spaces.n_agents, 8)).astype(np.float32)}  # fmt: skip
        for row in observations["action_mask"]:
            for agent in row:
                agent[generator.choice(4, 2, replace=False)] = 1.0
        actions = build.trainer.act_deterministic(observations)
        chosen = np.take_along_axis(observations["action_mask"], actions[..., None], -1)
        assert actions.shape == (32, spaces.n_agents) and (chosen == 1.0).all()
        exported = build.trainer.export_policy()
        assert [spec["name"] for spec in exported.signature["inputs"]] == ["action_mask", "observation"]
        with torch.no_grad():
            got = exported(*(torch.from_numpy(observations[k]) for k in ("action_mask", "observation")))
        assert np.array_equal(got.numpy(), actions)
        # the target's max over the next step's valid actions: masked actions' values are the lowest
        if backend == "skrl":
            joint = torch.from_numpy(np.concatenate([observations["action_mask"], observations["observation"]], -1)).flatten(1)
            values = build.trainer.agent.target_q_network.agent_values(joint)
            assert bool((values[torch.from_numpy(observations["action_mask"]) == 0] == torch.finfo(values.dtype).min).all())
        else:
            assert build.loss.local_value_network.module[1].action_mask_key == (build.trainer.group, "action_mask")
    finally:
        build.trainer.close()
