"""A user plugin in one file: its own PPO loss for skrl and a wider policy; every other stage unchanged.

    PYTHONPATH=examples rlplug train ppo-cartpole --plugin minimal_plugin --set loss=my-clip
"""

import rlplug


class HuberClipLoss:
    """PPO's clipped surrogate with a Huber value loss; skrl calls it per minibatch as loss(agent, batch, epoch)."""

    def __init__(self, clip):
        self.clip = clip

    def __call__(self, agent, batch, epoch):
        import torch.nn.functional as F

        inputs = {"observations": batch["observations"], "states": batch["states"]}
        _, out = agent.policy.act({**inputs, "taken_actions": batch["actions"]}, role="policy")
        log_ratio = out["log_prob"] - batch["log_prob"]
        ratio, adv = log_ratio.exp(), batch["advantages"]
        values, _ = agent.value.act(inputs, role="value")
        return {
            "loss_policy": -(adv * ratio).minimum(adv * ratio.clamp(1 - self.clip, 1 + self.clip)).mean(),
            "loss_value": F.smooth_l1_loss(values, batch["returns"]),
            "approx_kl": ((ratio - 1) - log_ratio).mean().detach(),  # the kl_adaptive schedule reads it
        }


@rlplug.hookimpl
def rlplug_register_losses(losses):
    losses.register("ppo", "skrl", "my-clip", lambda build: HuberClipLoss(build.settings["ratio_clip"]),
                    terms=("loss_policy", "loss_value"), reported=("approx_kl",), doc="clip + Huber value loss")


@rlplug.hookimpl(tryfirst=True)  # asked before rlplug-ppo's own implementation
def rlplug_build_models(build):
    if not build.is_cell("ppo", "skrl"):
        return None  # not ours: the next implementation builds it
    from rlplug.backends.skrl import stochastic_policy, value_model

    spaces = (build.observation_space, build.action_space, build.device)
    return {"policy": stochastic_policy(*spaces, [128, 128], "tanh"), "value": value_model(*spaces, [64, 64], "tanh")}
