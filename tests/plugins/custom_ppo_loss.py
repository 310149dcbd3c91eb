"""A user plugin that registers its own PPO loss on each backend (used by test_custom_plugins.py)."""

from __future__ import annotations

import rlplug


class UnclippedLoss:
    """skrl: a plain (unclipped) policy-gradient surrogate plus an unscaled value MSE."""

    calls = 0

    def __call__(self, agent, batch, epoch):
        import torch
        import torch.nn.functional as F

        UnclippedLoss.calls += 1
        inputs = {"observations": batch["observations"], "states": batch["states"]}
        _, outputs = agent.policy.act({**inputs, "taken_actions": batch["actions"]}, role="policy")
        log_ratio = outputs["log_prob"] - batch["log_prob"]
        values, _ = agent.value.act(inputs, role="value")
        with torch.no_grad():
            approx_kl = ((torch.exp(log_ratio) - 1) - log_ratio).mean()
        return {
            "pg_surrogate": -(torch.exp(log_ratio) * batch["advantages"]).mean(),
            "value_mse": F.mse_loss(values, batch["returns"]),
            "approx_kl": approx_kl,
        }


def make_skrl_loss(build):
    return UnclippedLoss()


def make_torchrl_loss(build):
    from tensordict import TensorDict
    from torchrl.objectives import ClipPPOLoss

    class HuberRenamedPPOLoss(ClipPPOLoss):
        """TorchRL: ClipPPOLoss with a Huber critic, its terms renamed so they can be told apart."""

        def forward(self, tensordict):
            out = super().forward(tensordict)
            return TensorDict(
                {
                    "surrogate": out["loss_objective"],
                    "huber_value": out["loss_critic"],
                    "kl_approx": out["kl_approx"],
                },
                batch_size=[],
            )

    s = build.settings
    loss = HuberRenamedPPOLoss(
        build.models["actor"],
        build.models["critic"],
        clip_epsilon=s["clip_epsilon"],
        entropy_bonus=False,
        critic_coeff=s["critic_coeff"],
        loss_critic_type="smooth_l1",
        normalize_advantage=True,
    )
    loss.make_value_estimator("gae", gamma=s["gamma"], lmbda=s["lmbda"])
    return loss


@rlplug.hookimpl
def rlplug_register_losses(losses):
    losses.register("ppo", "skrl", "unclipped", make_skrl_loss, terms=("pg_surrogate", "value_mse"), reported=("approx_kl",), source="test")
    losses.register("ppo", "torchrl", "huber", make_torchrl_loss, terms=("surrogate", "huber_value"), reported=("kl_approx",), source="test")
