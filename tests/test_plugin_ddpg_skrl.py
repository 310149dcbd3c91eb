"""ddpg/skrl: TD3's cell on skrl's DDPG agent trains with one critic, steps its policy and targets on
every gradient step, round-trips its state, and reproduces upstream skrl DDPG.update() exactly."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")

from rlplug_ddpg import DDPG as DDPG_SPEC  # noqa: E402
from rlplug_ddpg.skrl_backend import LossDelegatingDDPG, agent_config  # noqa: E402
from skrl.agents.torch.ddpg import DDPG  # noqa: E402

SMALL = dict(hidden_sizes=[16, 16], batch_size=32, learning_starts=64, log_every=100, buffer_size=2_000)
ROLES = ("policy", "target_policy", "critic", "target_critic")


def ddpg_build(builds, **kwargs):
    options = {"num_envs": 2, "steps": 200, "seed": 0, **SMALL, **kwargs}
    return builds("rlplug_ddpg", "skrl", "Pendulum-v1", **options)


def _parameters(*modules):
    return [p.detach().clone() for m in modules for p in m.parameters()]


def _equal(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_declaration_is_td3_less_its_additions():
    names = {p.name for p in DDPG_SPEC.params}
    assert not names & {"policy_delay", "target_policy_noise", "target_noise_clip"}
    assert {"actor_learning_rate", "exploration_noise", "tau", "batch_size"} <= names
    settings = DDPG_SPEC.backends["skrl"].settings(DDPG_SPEC.defaults(), type("R", (), {"steps": 1000, "num_envs": 1})())
    assert "policy_delay" not in settings and not any(k.startswith("smooth_regularization") for k in settings)


def test_trains_policy_and_targets_every_step(builds):
    build = ddpg_build(builds)
    agent = build.trainer.agent
    assert isinstance(agent, LossDelegatingDDPG) and set(build.models) == set(ROLES)
    original, steps = agent.gradient_step, []

    def gradient_step(**kwargs):
        policy, critic = _parameters(agent.policy), _parameters(agent.critic)
        terms = original(**kwargs)
        assert not _equal(policy, _parameters(agent.policy)) and not _equal(critic, _parameters(agent.critic))
        steps.append(build.target_updater.steps)
        return terms

    agent.gradient_step = gradient_step
    history = []
    build.trainer.train(200, callbacks=[lambda t, metrics: history.append(metrics)])
    assert steps == list(range(1, 200 - 64 + 1))  # the targets moved on every gradient step
    assert any("loss/loss_critic" in m and "loss/loss_policy" in m for m in history)


@pytest.mark.parametrize("grad_norm_clip", [0.0, 0.5])
def test_parity_with_upstream_ddpg_update(builds, grad_norm_clip):
    """Two gradient steps of LossDelegatingDDPG vs upstream ``DDPG.update()`` with ``gradient_steps=2`` on
    the same memory, models and seed: bitwise the same networks, targets and optimiser moments."""
    # upstream steps torch's default (loop) Adam: compare the loss maths on the same optimiser path
    build = ddpg_build(builds, learning_starts=10_000, grad_norm_clip=grad_norm_clip, tau=0.05, optimizer_impl="loop")
    build.trainer.train(200)  # fills the replay memory with random transitions, no updates
    ours = build.trainer.agent
    cfg = agent_config(build)
    cfg.gradient_steps = 2
    upstream = DDPG(models=copy.deepcopy(build.models), memory=build.memory, observation_space=build.observation_space,
                    action_space=build.action_space, device="cpu", cfg=cfg)  # fmt: skip
    upstream.init()
    torch.manual_seed(123)
    upstream.enable_models_training_mode(True)
    upstream.update(timestep=0, timesteps=1)
    torch.manual_seed(123)
    ours.enable_models_training_mode(True)
    initial = _parameters(*(ours.models[role] for role in ROLES))
    ours.gradient_step(timestep=0, timesteps=1)
    ours.gradient_step(timestep=0, timesteps=1)
    assert not _equal(_parameters(*(ours.models[role] for role in ROLES)), initial)
    for role in ROLES:
        assert _equal(_parameters(ours.models[role]), _parameters(upstream.models[role])), role
    for name in ("policy_optimizer", "critic_optimizer"):
        ours_state, upstream_state = getattr(ours, name).state_dict()["state"], getattr(upstream, name).state_dict()["state"]
        assert ours_state.keys() == upstream_state.keys()
        assert all(torch.equal(ours_state[k]["exp_avg"], upstream_state[k]["exp_avg"]) for k in ours_state), name


def test_conforms_to_the_contract():
    """The conformance kit: declarations, construction, short train, deterministic evaluation,
    checkpoint round-trip and bit-for-bit resume equivalence."""
    from rlplug.testing import check_cell

    # learning_starts and log_every left to check_cell (meaningful_cadence), as a plugin author's first test would
    check_cell("ddpg-pendulum", "skrl", ["hidden_sizes=[16, 16]", "batch_size=16"], steps=128)
