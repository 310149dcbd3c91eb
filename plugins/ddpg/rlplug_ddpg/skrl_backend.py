"""DDPG on skrl: TD3's cell (``rlplug_td3.skrl_backend``) on skrl's own ``DDPG`` agent.

Overridden: one critic (role ``critic``), ``DDPG_CFG`` (no policy delay, no smoothing noise), and a
policy step and target update on every gradient step. TD3's staged loss with one critic and no
smoothing noise is skrl's DDPG math; memory, target updater, exploration, evaluation and export are TD3's.
"""

from __future__ import annotations

from rlplug import Build
from rlplug_td3 import skrl_backend as td3
from rlplug_td3.skrl_backend import build_memory, build_target_updater  # noqa: F401 -- TD3's, unchanged
from skrl.agents.torch.ddpg import DDPG, DDPG_CFG

CRITICS = ("critic",)


def build_models(build: Build) -> dict:
    """A tanh-bounded deterministic policy, one Q(s, a) critic, and their target copies."""
    return td3.build_models(build, CRITICS)


def make_ddpg_loss(build: Build) -> td3.TD3Loss:
    """The registered default loss ("ddpg") for ddpg/skrl: TD3's loss with no smoothing noise; the agent's
    single critic makes it skrl's DDPG update."""
    return td3.TD3Loss(build.settings["discount_factor"], smoothing_noise=None, smoothing_clip=0.0)


class LossDelegatingDDPG(td3.StagedTD3, DDPG):
    """skrl's DDPG with TD3's staged gradient step: one critic, the policy and the targets stepped every time."""

    critic_roles = CRITICS
    policy_delay = 1


def agent_config(build: Build) -> DDPG_CFG:
    return DDPG_CFG(**td3.common_config(build))


class SkrlDDPGTrainer(td3.SkrlTD3Trainer):
    agent_class = LossDelegatingDDPG
    agent_config = staticmethod(agent_config)


build_trainer = SkrlDDPGTrainer
