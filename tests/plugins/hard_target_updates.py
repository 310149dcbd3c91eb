"""A user plugin that swaps only the target-updater stage of td3 (both backends) for hard copies
after every policy update (used by test_custom_plugins.py)."""

from __future__ import annotations

import rlplug

BUILT = []


@rlplug.hookimpl(tryfirst=True)
def rlplug_build_target_updater(build):
    if build.algorithm.name != "td3":
        return None
    if build.backend == "skrl":
        from rlplug.backends.skrl import ModuleTargetUpdate

        m = build.models
        pairs = [(m[f"target_{name}"], m[name]) for name in ("policy", "critic_1", "critic_2")]
        updater = ModuleTargetUpdate(pairs, "hard", period=1)
    else:
        from rlplug.backends.torchrl import LossTargetUpdate

        updater = LossTargetUpdate(build.loss, "hard", period=1)
    BUILT.append(updater)
    return updater
