"""A user plugin that overrides only the models stage of ppo/skrl (used by test_custom_plugins.py)."""

from __future__ import annotations

import rlplug

BUILT = []


@rlplug.hookimpl(tryfirst=True)
def rlplug_build_models(build):
    if not build.is_cell("ppo", "skrl"):
        return None
    from rlplug.backends.skrl import stochastic_policy, value_model

    models = {
        "policy": stochastic_policy(build.observation_space, build.action_space, build.device, [16], "relu"),
        "value": value_model(build.observation_space, build.action_space, build.device, [16], "relu"),
    }
    BUILT.append(models)
    return models
