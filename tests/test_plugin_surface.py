"""Issue 54: what a plugin author derives a cell from is open and public. Cadences are read at update time;
SAC takes any number of critics on skrl; an AWAC-style agent reuses IQL's skrl agent whole; the skrl
staged base sets up what skrl's agents do; and the small points (eval --no-progress, extends across
algorithms, who registered a loss)."""

from __future__ import annotations

import functools

import pytest
import torch


TINY_SAC = {"hidden_sizes": [16, 16], "batch_size": 16, "learning_starts": 32, "buffer_size": 1_000, "log_every": 64}


# ---- cadences: read from the instance at every gradient step ---------------------------------------


def test_a_stage_cadence_is_read_at_every_gradient_step():
    from rlplug.backends.common.stages import UpdateSchedule, UpdateStage

    settings = {"delay": 1, "extra": False}
    schedule = UpdateSchedule(
        (UpdateStage("critic"), UpdateStage("policy", every="delay"), UpdateStage("bonus", only_if="extra")), "delay", settings.__getitem__
    )
    names = lambda steps: [stage.name for group in steps for stage in group]  # noqa: E731
    assert names(schedule.advance()[0]) == ["critic", "policy"]
    settings.update(delay=2, extra=True)  # changed while training: the next step already reads it
    steps, target_due = schedule.advance()
    assert names(steps) == ["critic", "policy", "bonus"] and target_due  # step 2: 2 % 2 == 0
    steps, target_due = schedule.advance()
    assert names(steps) == ["critic", "bonus"] and not target_due
    with pytest.raises(KeyError):
        UpdateSchedule((UpdateStage("a", every="missing"),), 1, settings.__getitem__)  # still refused at construction


def test_a_skrl_agent_s_instance_attribute_sets_its_cadence(builds):
    pytest.importorskip("skrl")
    build = builds("rlplug_td3", "skrl", "Pendulum-v1", num_envs=1, steps=1_000, **{**TINY_SAC, "policy_delay": 1})
    agent = build.trainer.agent
    assert agent.setting("policy_delay") == 1
    agent.cfg.policy_delay = 3  # TD3's policy_delay property reads its config: the schedule follows at once
    assert agent.setting("policy_delay") == 3 and agent.update_schedule.target_every == 3
    agent.learn_entropy = True  # an attribute set on the instance answers a setting before the config
    assert agent.setting("learn_entropy") is True


def test_a_torchrl_trainer_s_attribute_sets_its_cadence(builds):
    pytest.importorskip("torchrl")
    build = builds("rlplug_td3", "torchrl", "Pendulum-v1", num_envs=1, steps=1_000, **{**TINY_SAC, "policy_delay": 2})
    trainer = build.trainer
    assert trainer.update_schedule.every == [1, 2] and trainer.update_schedule.target_every == 2
    trainer.policy_delay = 1  # on the instance: read from the next gradient step on
    assert trainer.update_schedule.every == [1, 1] and trainer.update_schedule.target_every == 1


# ---- SAC on skrl: any number of critics ------------------------------------------------------------


def test_skrl_sac_takes_any_number_of_critic_roles(builds):
    pytest.importorskip("skrl")
    from rlplug_sac import skrl_backend as sac

    build = builds("rlplug_sac", "skrl", "Pendulum-v1", num_envs=1, steps=1_000, **TINY_SAC)
    roles = ("critic_1", "critic_2", "critic_3")
    build.models = sac.build_models(build, roles)
    build.target_updater = sac.build_target_updater(build)

    class ThreeCritics(sac.SkrlSACTrainer):
        def critics(self, build):
            return roles

    build.trainer.close()
    build.trainer = trainer = ThreeCritics(build)
    agent = trainer.agent
    assert agent.critic_roles == roles and agent.critic_3 is build.models["critic_3"]
    stepped = {id(p) for group in agent.critic_optimizer.param_groups for p in group["params"]}
    assert stepped == {id(p) for role in roles for p in build.models[role].parameters()}
    assert len(build.target_updater.targets) == 3 * len(list(build.models["critic_1"].parameters()))
    assert {"critic_3", "target_critic_3", "critic_optimizer"} <= set(agent.checkpoint_modules)
    for role in roles:
        for target, online in zip(build.models[f"target_{role}"].parameters(), build.models[role].parameters()):
            assert torch.equal(target, online) and not target.requires_grad
    before = [p.detach().clone() for p in build.models["critic_3"].parameters()]
    trainer.train(96)
    assert any(not torch.equal(a, b) for a, b in zip(before, build.models["critic_3"].parameters()))


def test_the_sac_loss_hooks_compose_its_critic_term(builds):
    """critic_distance, target_q and critic_target make up the skrl critic term: a subclass that swaps the
    distance changes only that (the same target, the same predictions)."""
    pytest.importorskip("skrl")
    import torch.nn.functional as F
    from rlplug_sac import skrl_backend as sac

    build = builds("rlplug_sac", "skrl", "Pendulum-v1", num_envs=1, steps=1_000, **TINY_SAC)
    build.trainer.train(64)
    agent = build.trainer.agent
    batch = agent.sample_batch()

    class Huber(sac.SACLoss):
        def critic_distance(self, q, target):
            return F.smooth_l1_loss(q, target)

    torch.manual_seed(0)
    target = sac.SACLoss().critic_target(agent, batch)
    inputs = {"observations": batch["observations"], "states": batch["states"]}
    qs = sac.q_values(agent, agent.critic_roles, inputs, batch["actions"])
    torch.manual_seed(0)
    huber = Huber().critic(agent, batch)["loss_critic"]
    assert torch.allclose(huber, sum(F.smooth_l1_loss(q, target) for q in qs) / 2)


# ---- IQL on skrl: an algorithm without V reuses the agent -----------------------------------------


def test_an_awac_style_agent_reuses_iql_s_skrl_agent(builds, random_dataset):
    """AWAC's shape on IQL's agent: no V, two stages, its own optimiser groups and loss; nothing of IQL's
    constructor is copied, and it trains and round-trips like IQL."""
    pytest.importorskip("skrl")
    from rlplug.backends.skrl import UpdateStage
    from rlplug_iql import skrl_backend as iql

    class AWAC(iql.IQL):
        update_stages = (UpdateStage("critic"), UpdateStage("policy"))

        def optimizer_groups(self):
            policy_lr, critic_lr, _ = self.cfg.learning_rate
            return {"policy_optimizer": (("policy",), policy_lr), "critic_optimizer": (self.critic_roles, critic_lr)}

    class AWACLoss(iql.IQLLoss):
        def critic_target(self, agent, batch):  # r + gamma * min Q'(s', a'), a' ~ pi(s')
            with torch.no_grad():
                inputs = {"observations": batch["next_observations"]}
                inputs["taken_actions"], _ = agent.policy.act(inputs, role="policy")
                q = [getattr(agent, f"target_{r}").act(inputs, role=f"target_{r}")[0] for r in agent.critic_roles]
                return batch["rewards"] + agent.cfg.discount_factor * batch["terminated"].logical_not() * functools.reduce(torch.min, q)

        def policy(self, agent, batch):  # advantage against V(s) = Q(s, pi(s)), weights out of autograd
            inputs = {"observations": batch["observations"]}
            with torch.no_grad():
                inputs["taken_actions"], _ = agent.policy.act(inputs, role="policy")
                value = agent.critic_1.act(inputs, role="critic_1")[0]
                q = agent.critic_1.act({**inputs, "taken_actions": batch["actions"]}, role="critic_1")[0]
                weight = torch.exp(agent.cfg.temperature * (q - value)).clamp_max(self.max_weight)
            _, outputs = agent.policy.act({**inputs, "taken_actions": batch["actions"]}, role="policy")
            return {"loss_policy": -(weight * outputs["log_prob"]).mean()}

    small = {"hidden_sizes": [16, 16], "batch_size": 32, "log_every": 20, "eval_every": 0}
    build = builds("rlplug_iql", "skrl", "Pendulum-v1", num_envs=1, steps=100, dataset=random_dataset(), **small)
    build.models = iql.build_models(build, value=False)
    build.loss = AWACLoss()
    build.target_updater = iql.build_target_updater(build)

    class Trainer(iql.SkrlIQLTrainer):
        agent_class = AWAC

    build.trainer.close()
    build.trainer = trainer = Trainer(build)
    agent = trainer.agent
    assert "value" not in build.models and not hasattr(agent, "value_optimizer")
    assert {"policy_optimizer", "critic_optimizer", "target_critic_1"} <= set(agent.checkpoint_modules)
    assert agent.scaler is not None and agent.observation_preprocessor(torch.ones(2)).tolist() == [1.0, 1.0]
    rows = []
    trainer.train(40, [lambda t, metrics: rows.append(metrics)])
    assert {"loss/loss_critic", "loss/loss_policy"} <= set(rows[-1]) and "loss/loss_value" not in rows[-1]
    assert all(torch.isfinite(torch.tensor(rows[-1][k])) for k in ("loss/loss_critic", "loss/loss_policy"))


# ---- the small points ------------------------------------------------------------------------------


def test_eval_accepts_no_progress():
    from rlplug.cli.parser import build_parser

    args = build_parser().parse_args(["eval", "runs/x", "--no-progress"])
    assert args.no_progress is True


def test_extends_across_algorithms_drops_tier_and_reference(tmp_path):
    from rlplug.recipes.book import RecipeBook

    recipes = tmp_path / "recipes.toml"
    recipes.write_text(
        '[recipes.base]\nalgorithm = "sac"\nbackend = "skrl"\nenv = "Pendulum-v1"\nsteps = 1000\ntarget = -200.0\ntier = "quick"\n'
        '[recipes.base.reference]\nvalue = -150.0\nsource = "sac paper"\n'
        '[recipes.other]\nextends = "base"\nalgorithm = "td3"\n'
        '[recipes.same]\nextends = "base"\nsteps = 2000\n'
        '[recipes.kept]\nextends = "base"\nalgorithm = "td3"\ntier = "quick"\n',
        encoding="utf-8",
    )
    book = RecipeBook()
    book.add_file(recipes)
    base, other, same, kept = (book.resolve(name) for name in ("base", "other", "same", "kept"))
    assert (base.tier, base.reference["value"]) == ("quick", -150.0)
    assert other.tier == "full" and not other.reference and other.target == -200.0  # same task: the target stays
    assert (same.tier, same.reference["value"]) == ("quick", -150.0)
    assert kept.tier == "quick" and not kept.reference
    switched = book.resolve("base", ["algorithm=td3"])
    assert switched.tier == "full" and not switched.reference


def test_a_loss_is_credited_to_the_package_that_registered_it():
    from rlplug.contract.losses import LossRegistry

    registry = LossRegistry()
    registry.sources["my_plugin"] = "my-plugin"
    namespace = {"__name__": "my_plugin.losses", "registry": registry}
    exec("registry.register('sac', 'skrl', 'mine', lambda build: None, terms=('loss_critic',))", namespace)
    namespace["__name__"] = "loose_module"
    exec("registry.register('sac', 'skrl', 'script', lambda build: None, terms=('loss_critic',))", namespace)
    registry.register("sac", "skrl", "named", lambda build: None, terms=("loss_critic",), source="someone")
    sources = {entry.name: entry.source for entry in registry.entries("sac")}
    assert sources == {"mine": "my-plugin", "script": "loose_module", "named": "someone"}


def test_first_party_losses_name_their_distribution():
    import rlplug

    entries = {(e.algorithm, e.backend, e.name): e.source for e in rlplug.session().host.losses.entries("sac")}
    assert entries[("sac", "skrl", "sac")] == "rlplug-sac"
