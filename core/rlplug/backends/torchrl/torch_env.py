"""Torch-native envs on TorchRL (``rlplug.envs.torch_native``): a batched ``EnvBase`` the collector steps directly.

A TorchRL ``EnvBase`` from the factory is used as it is; an IsaacLab-style env becomes one through ``IsaacLabEnv``.
TorchRL 0.14's own ``IsaacLabWrapper`` is a ``GymWrapper``: it needs a ``gymnasium.Env`` (IsaacLab's classes are
ones) and IsaacLab's managers for its per-index resets, so a plain IsaacLab-style object is wrapped here instead.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Bounded, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase, TransformedEnv

from ...envs.torch_native import FINAL_OBS_KEY, interface_of, make_torch_env, spaces_of


class IsaacLabEnv(EnvBase):
    """An IsaacLab-style env (``rlplug.envs.torch_native``) as a TorchRL ``EnvBase`` of batch size ``[num_envs]``.

    The env resets ended episodes inside its step: ``_step`` returns their last observations as ``("next",
    "observation")`` (``extras["final_obs"]``, or the returned observations where the env gives none, IsaacLab's
    own convention) and keeps the returned ones, which ``_reset`` hands back for the envs the ``"_reset"`` mask
    names. Everything stays on the env's device."""

    def __init__(self, env: Any, env_id: str = "") -> None:
        super().__init__(device=torch.device(env.device), batch_size=torch.Size([int(env.num_envs)]))
        self.isaac_env = env
        observation, action = spaces_of(env, env_id)
        n = self.batch_size
        self.observation_spec = Composite(observation=_spec(observation, n, self.device), shape=n, device=self.device)
        self.action_spec = _spec(action, n, self.device)
        self.reward_spec = Unbounded(shape=(*n, 1), device=self.device)
        flag = dict(n=2, shape=(*n, 1), dtype=torch.bool, device=self.device)
        self.done_spec = Composite(done=Categorical(**flag), terminated=Categorical(**flag), truncated=Categorical(**flag),
                                   shape=n, device=self.device)  # fmt: skip
        self._next_root: torch.Tensor | None = None
        self._seed: int | None = None

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        if self._next_root is None:  # the first reset; afterwards the env has reset ended episodes itself
            observations, _ = self.isaac_env.reset(seed=self._seed)
            self._next_root = observations["policy"]
        falses = torch.zeros((*self.batch_size, 1), dtype=torch.bool, device=self.device)
        return TensorDict({"observation": self._next_root, "done": falses, "terminated": falses.clone(), "truncated": falses.clone()},
                          batch_size=self.batch_size, device=self.device)  # fmt: skip

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        after, reward, terminated, truncated, extras = self.isaac_env.step(tensordict.get("action"))
        self._next_root = after["policy"]
        final = extras.get(FINAL_OBS_KEY) if isinstance(extras, dict) else None
        terminated, truncated = terminated.reshape(-1, 1).bool(), truncated.reshape(-1, 1).bool()
        return TensorDict(
            {"observation": final if isinstance(final, torch.Tensor) else self._next_root, "reward": reward.reshape(-1, 1).float(),
             "done": terminated | truncated, "terminated": terminated, "truncated": truncated},
            batch_size=self.batch_size, device=self.device,
        )  # fmt: skip

    def _set_seed(self, seed: int | None) -> None:
        self._seed = seed
        self._next_root = None  # the next reset starts over from this seed

    def close(self, *, raise_if_closed: bool = True) -> None:
        close = getattr(self.isaac_env, "close", None)
        if callable(close):
            close()
        super().close(raise_if_closed=raise_if_closed)


def _spec(space: gym.Space, batch: torch.Size, device: torch.device) -> Any:
    if isinstance(space, gym.spaces.Discrete):
        return Categorical(n=int(space.n), shape=batch, dtype=torch.int64, device=device)
    low = torch.as_tensor(space.low, dtype=torch.float32, device=device)
    high = torch.as_tensor(space.high, dtype=torch.float32, device=device)
    shape = (*batch, *space.shape)
    if torch.isfinite(low).all() and torch.isfinite(high).all():
        return Bounded(low=low.expand(shape), high=high.expand(shape), shape=shape, device=device)
    return Unbounded(shape=shape, device=device)


def make_torch_native_env(env_id: str, env_kwargs: Any, num_envs: int, seed: int, device: str, clip_actions: bool = True) -> EnvBase:
    """The trainer's env of a ``torch:`` id: the factory's ``EnvBase``, or its IsaacLab-style env as one; seeded. Box
    actions are clamped into their bounds on their way in (``clip_actions``: TorchRL's inverse transform, so the
    collected batch keeps the unclamped sample, as on the Gymnasium path)."""
    from .env import ClampAction

    env = make_torch_env(env_id, env_kwargs, num_envs, device, seed)
    if interface_of(env, env_id) == "isaaclab":
        env = IsaacLabEnv(env, env_id)
    _, action_space = spaces_of(env, env_id)
    if clip_actions and isinstance(action_space, gym.spaces.Box):
        env = TransformedEnv(env, ClampAction(action_space.low, action_space.high).to(env.device))
    env.set_seed(seed)
    return env
