"""Hand-wired MAPPO builds for the plugin's tests (no recipes, no discovery), like conftest's ``make_build``."""

from __future__ import annotations

from types import SimpleNamespace

SPREAD = ("mpe:simple_spread", {"N": 3, "max_cycles": 25})
NAVIGATION = ("vmas:navigation", {"n_agents": 3, "max_steps": 25})
SMALL = dict(rollout_steps=50, epochs=2, minibatches=2, hidden_sizes=[32, 32])


def make_mappo_build(backend, env=SPREAD, num_envs=2, steps=2048, seed=0, registry=None, loss=None, algorithm="mappo", **hp_over):
    """A MAPPO ``Build`` on ``env`` (``(id, env_kwargs)``) wired stage by stage through the plugin's hooks;
    ``algorithm = "ippo"``: rlplug-ippo's, derived from it; ``"qmix"``: rlplug-qmix's (no rollout settings)."""
    import importlib

    from rlplug import Build
    from rlplug.contract.losses import LossRegistry
    from rlplug.envs.multiagent import probe_multiagent_spaces

    package = importlib.import_module(f"rlplug_{algorithm}")
    MAPPO, plugin = getattr(package, algorithm.upper()), package.plugin

    env_id, env_kwargs = env
    small = SMALL if algorithm in ("mappo", "ippo") else {"hidden_sizes": [32, 32], "learning_starts": 64, "batch_size": 32}
    hp = {**MAPPO.defaults(), **small, **hp_over}
    recipe = SimpleNamespace(name="test", steps=steps, num_envs=num_envs, seed=seed)
    if registry is None:
        registry = LossRegistry()
        plugin.rlplug_register_losses(registry)
    spaces = probe_multiagent_spaces(env_id, env_kwargs)
    build = Build(recipe=recipe, algorithm=MAPPO, backend=backend, hp=hp, settings=MAPPO.backends[backend].settings(hp, recipe),
                  env_id=env_id, env_kwargs=dict(env_kwargs), num_envs=num_envs, observation_space=spaces.observation_space,
                  action_space=spaces.action_space, seed=seed, device="cpu",
                  loss_entry=registry.get(algorithm, backend, loss or MAPPO.default_loss), extras={"multiagent": spaces})  # fmt: skip
    build.models = plugin.rlplug_build_models(build=build)
    build.memory = plugin.rlplug_build_memory(build=build)
    build.loss = plugin.rlplug_build_loss(build=build)
    build.target_updater = plugin.rlplug_build_target_updater(build=build)
    build.trainer = plugin.rlplug_build_trainer(build=build)
    return build
