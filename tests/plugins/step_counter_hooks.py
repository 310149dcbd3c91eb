"""A user plugin that adds one training hook to every PPO cell, on both backends, through the hook spec
``rlplug_trainer_hooks`` (used by test_trainer_hooks.py): it counts gradient steps and logs the count."""

from __future__ import annotations

import rlplug


class StepCounter:
    """Counts ``post_optim`` calls (gradient steps) and logs the count in every metrics row."""

    def __init__(self) -> None:
        self.count = 0

    def step(self) -> None:
        self.count += 1

    def log(self, batch) -> dict[str, float]:
        return {"plugin/optim_steps": float(self.count)}

    def register(self, trainer, name: str = "step_counter") -> None:
        trainer.register_op("post_optim", self.step)
        trainer.register_op("post_steps_log", self.log)
        trainer.register_module(name, self)

    def state_dict(self) -> dict[str, int]:
        return {"count": self.count}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.count = int(state["count"])


@rlplug.hookimpl
def rlplug_trainer_hooks(build):
    if build.algorithm.name != "ppo":
        return None
    return [StepCounter()]
