"""The one deterministic evaluation loop every cell uses: its own gymnasium environment, no exploration."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import numpy as np

from .torch_native import is_torch_env

if TYPE_CHECKING:
    from .spec import EnvSpec

EVAL_SEED_OFFSET = 10_000
"""Evaluation environments are seeded ``seed + EVAL_SEED_OFFSET + episode`` so they never replay training resets."""

_episode_done: ContextVar[Callable[[int], None] | None] = ContextVar("rlplug_episode_done", default=None)


@contextmanager
def episode_progress(done: Callable[[int], None]) -> Iterator[None]:
    """``done(n)`` is called as the core's evaluation loops finish ``n`` more episodes, inside this block.

    A context variable rather than an argument of ``Trainer.evaluate``: the run layer and ``rlplug eval``
    show progress for any cell, and a plugin's ``evaluate`` keeps its signature."""
    token = _episode_done.set(done)
    try:
        yield
    finally:
        _episode_done.reset(token)


def episodes_done(count: int = 1) -> None:
    """Tell whoever watches (``episode_progress``) that ``count`` more evaluation episodes ended."""
    done = _episode_done.get()
    if done is not None:
        done(count)


def evaluate_policy(
    env: str | EnvSpec,
    env_kwargs: Mapping[str, Any] | None,
    act: Callable[[Any], np.ndarray],
    episodes: int,
    seed: int,
    max_steps: int = 100_000,
    video_dir: str | None = None,
    reset: Callable[[], None] | None = None,
    rewarded: Callable[[np.ndarray], None] | None = None,
) -> list[float]:
    """Run ``episodes`` episodes with ``act(observation[None]) -> action[None]`` and return their returns.

    ``env``: an id or a build's ``env_spec``; the environment is ``rlplug.envs.factory.make_gym_env``'s evaluation
    chain: the recipe's wrappers without reward clipping or normalisation and without life-loss episode
    ends, so a return is the game's own score. ``act`` receives a batch of one observation (float
    observations as float32, images and other integer observations in their own dtype, a ``Dict`` as a
    mapping of batches) and must return a batch of one action chosen deterministically (argmax /
    distribution mean); no exploration noise. ``video_dir`` records every episode there with gymnasium's
    ``RecordVideo`` (which needs ``moviepy``). ``reset`` is called before each episode (a recurrent policy
    clears its hidden state there). ``rewarded`` receives each step's reward as a batch of one after the step (a
    return-conditioned policy counts its target return down with it).
    """
    import gymnasium as gym

    from .factory import env_errors, make_gym_env
    from .spec import EnvSpec

    spec = EnvSpec.of(env, env_kwargs)
    if is_torch_env(spec.id):  # a torch-native env (rlplug.envs.torch_native): ``act`` bridged from its tensors
        return _evaluate_torch_env_with(spec, act, episodes, seed, video_dir)
    with env_errors(spec.id, dict(spec.kwargs), "evaluation"):
        if video_dir is None:
            made = make_gym_env(spec, training=False)
        else:
            made = gym.wrappers.RecordVideo(
                make_gym_env(spec, training=False, render_mode="rgb_array"), video_dir, episode_trigger=lambda _: True,
                name_prefix="eval", disable_logger=True,
            )
    returns: list[float] = []
    try:
        for episode in range(episodes):
            obs, _ = made.reset(seed=seed + EVAL_SEED_OFFSET + episode)
            total, done, steps = 0.0, False, 0
            if reset is not None:
                reset()
            while not done and steps < max_steps:
                action = act(batch_of_one(obs))[0]
                if isinstance(made.action_space, gym.spaces.Discrete):
                    action = int(np.asarray(action).reshape(-1)[0])
                obs, reward, terminated, truncated, _ = made.step(action)
                if rewarded is not None:
                    rewarded(np.asarray([reward], np.float32))
                total += float(reward)
                done = terminated or truncated
                steps += 1
            returns.append(total)
            episodes_done()
    finally:
        made.close()
    return returns


def _evaluate_torch_env_with(spec: EnvSpec, act: Callable[[Any], np.ndarray], episodes: int, seed: int, video_dir: str | None) -> list[float]:
    """``evaluate_policy`` of a torch-native env with a numpy ``act`` (an exported file's): the env's evaluation
    (``evaluate_torch_env``, on the CPU), each step's observations handed to ``act`` as a float32 array. Trainers
    evaluate such an env on tensors instead (``TrainerBase.evaluate``)."""
    import torch

    from ..errors import VideoUnsupportedError
    from .torch_native import evaluate_torch_env

    if video_dir is not None:
        raise VideoUnsupportedError(f"'{spec.id}' is a torch-native env: rlplug records videos of Gymnasium envs only")

    def policy(observations: Any) -> Any:
        actions = act(observations.detach().cpu().numpy().astype(np.float32))
        return torch.as_tensor(np.asarray(actions), device=observations.device)

    return evaluate_torch_env(spec.id, spec.kwargs, policy, episodes, seed, "cpu")


def batch_of_one(observation: Any) -> Any:
    """One observation as a batch of one: floats as float32 (as before images existed), integer and boolean
    observations (uint8 frames, MinAtar's grids) in their own dtype, ``Dict`` observations key by key."""
    if isinstance(observation, Mapping):
        return {key: batch_of_one(value) for key, value in observation.items()}
    array = np.asarray(observation)
    if array.dtype.kind == "f" or array.dtype == object:
        array = array.astype(np.float32)
    return array[None]
