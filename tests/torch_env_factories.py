"""Torch-native env factories the tests name as ``torch:torch_envs:FACTORY`` (``rlplug.envs.torch_native``)."""

from __future__ import annotations

from rlplug.envs.torch_cartpole import TorchCartPole


def cartpole_envbase(num_envs: int, device: str = "cpu", seed: int = 0):
    """The pure-torch CartPole as a batched TorchRL ``EnvBase`` (the second interface)."""
    from rlplug.backends.torchrl.torch_env import IsaacLabEnv

    return IsaacLabEnv(TorchCartPole(num_envs, device, seed))


def not_an_env(num_envs: int, device: str = "cpu", seed: int = 0):
    return {"num_envs": num_envs}


def no_arguments():
    return TorchCartPole(1)


NOT_CALLABLE = 3


def cartpole_with_spaces(num_envs: int, device: str = "cpu", seed: int = 0):
    """The CartPole whose factory names its spaces (the probe then makes no env: ``made`` counts the envs made)."""
    cartpole_with_spaces.made += 1
    return TorchCartPole(num_envs, device, seed)


def _spaces():
    probe = TorchCartPole(1)
    return probe.single_observation_space["policy"], probe.single_action_space


cartpole_with_spaces.made = 0
cartpole_with_spaces.spaces = _spaces


def pendulum_envbase(num_envs: int, device: str = "cpu", seed: int = 0):
    """The pure-torch Pendulum as a batched TorchRL ``EnvBase``."""
    from rlplug.backends.torchrl.torch_env import IsaacLabEnv
    from rlplug.envs.torch_pendulum import TorchPendulum

    return IsaacLabEnv(TorchPendulum(num_envs, device, seed))
