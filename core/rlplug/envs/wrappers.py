"""The wrappers recipe fields ask for, around every single Gymnasium environment rlplug makes.

``make_gym_env`` (``rlplug.envs.factory``) is the one place a single environment is made: the skrl vector env,
the TorchRL env, the evaluation env and the spaces probe all call it, so both backends step the same chain
of Gymnasium's own wrappers, innermost first:

* ``gym.make(id, **env_kwargs)``: a ``module:`` prefix or the recipe's ``env_module`` is imported first (its
  ``gymnasium.register`` calls add ids); ALE and MinAtar ids are registered when one is used; ``time_limit``
  is gym.make's ``max_episode_steps`` (the registered ``TimeLimit`` replaced); ALE under ``atari`` with
  ``frameskip=1`` (``AtariPreprocessing`` skips frames itself); rlplug's ``EnvContractChecker`` takes the
  place of gymnasium's ``PassiveEnvChecker`` around the base env (``rlplug.envs.check``);
* the recipe's ``wrappers``, innermost first (``rlplug.envs.user_wrappers``: ``{wrapper = "module:Name", kwargs =
  {...}}``, any Gymnasium wrapper, where RL Zoo applies its ``env_wrapper``), in training and evaluation alike;
* ``TransformObservation`` (``hide_observation``): the listed entries of a flat Box observation removed, for
  partially observable tasks (CartPole without its velocities, as RL Zoo's ``CartPoleNoVel``), in training
  and evaluation alike;
* ``AtariPreprocessing`` (``atari``): up to 30 no-op actions after a reset, frame skip 4 (max over the
  last two frames), 84x84 grey uint8, and with ``terminal_on_life_loss`` a lost life ends a training
  episode; then ``TimeLimit`` counting agent steps when ``time_limit`` is given;
* ``ClipReward(-1, 1)`` (``atari``, training only);
* ``FrameStackObservation`` (``frame_stack`` > 1): the last k observations on a new leading axis;
* ``RecordEpisodeStatistics`` then ``NormalizeReward`` (``normalize_reward``, training only, with the algorithm's
  ``gamma``): the agent learns from the normalised rewards, while the training return rlplug reports
  (``train/episode_return``, the progress bar's ``ret=``, training curves, hooks monitoring it) stays the env's own:
  the recorder below the normalisation files each ended episode's return in its info (under ``final_info``,
  SAME_STEP autoreset), and the trackers read it there (``ended_returns``) instead of summing normalised rewards;
* ``TransformAction(np.clip)`` (``clip_actions``, Box actions): actions clipped to the space's bounds on
  their way in while the space itself stays bounded (gymnasium's ``ClipAction`` would widen it to
  ±inf, and the models scale their outputs to those bounds). The agents keep the unclipped sample.
* outermost, for an env with an action mask (``action_mask``: its Dict key ``action_mask``, or ``"info"``):
  ``ActionMaskObservation``, the mask as a bool ``action_mask`` key of a Dict observation whatever the env
  wrote; ``action_mask = "ignore"``: ``DropActionMask``, the key removed (``rlplug.envs.masks``).

Evaluation (``training=False``) never clips or normalises rewards and never ends an episode at a lost
life: its return is the game's score.
"""

from __future__ import annotations

from typing import Any

from ..errors import RecipeError
from .spec import EnvSpec


def make_options(spec: EnvSpec) -> dict[str, Any]:
    """What ``gym.make`` is asked for the wrapper fields: ``frameskip=1`` under ``atari``, else ``time_limit``
    as ``max_episode_steps``."""
    if spec.atari:
        return {"frameskip": 1}
    if spec.time_limit:
        return {"max_episode_steps": spec.time_limit}
    return {}


def wrap(made: Any, spec: EnvSpec, training: bool) -> Any:
    """The chain above ``gym.make`` (see the module doc) around ``made``."""
    import gymnasium as gym
    import numpy as np

    if spec.wrappers:
        from .user_wrappers import apply

        made = apply(made, spec.wrappers, spec.id)
    if spec.hide_observation:
        made = hide_observation(made, spec)
    if spec.atari:
        made = gym.wrappers.AtariPreprocessing(
            made, noop_max=30, frame_skip=4, screen_size=84, grayscale_obs=True, scale_obs=False,
            terminal_on_life_loss=spec.terminal_on_life_loss and training,
        )
        if spec.time_limit:
            made = gym.wrappers.TimeLimit(made, spec.time_limit)
        if training:
            made = gym.wrappers.ClipReward(made, -1.0, 1.0)
    if spec.frame_stack > 1:
        made = gym.wrappers.FrameStackObservation(made, spec.frame_stack)
    if spec.normalize_reward and training:
        # the return before normalisation, filed at episode ends only (its queues unused: one entry each)
        made = gym.wrappers.RecordEpisodeStatistics(made, buffer_length=1, stats_key=EPISODE_KEY)
        made = gym.wrappers.NormalizeReward(made, gamma=spec.gamma)
    space = made.action_space
    if spec.clip_actions and isinstance(space, gym.spaces.Box):
        low, high = space.low, space.high
        made = gym.wrappers.TransformAction(made, lambda action: np.clip(action, low, high), space)
    return wrap_action_mask(made, spec)


EPISODE_KEY = "episode"
"""The info key ``RecordEpisodeStatistics`` files an ended episode's ``{"r": return, "l": length, "t": time}`` under."""


def ended_returns(infos: Any) -> Any:
    """The env's own returns of the episodes that ended on a vector env's step (float64 array, in env order) where
    the env records them (``normalize_reward``: ``RecordEpisodeStatistics`` under ``NormalizeReward``), else ``None``.
    A SAME_STEP vector env files an ended episode's last info under ``final_info``; there is none on most steps."""
    final = infos.get("final_info")
    if final is None or EPISODE_KEY not in final:
        return None
    return final[EPISODE_KEY]["r"][final["_" + EPISODE_KEY]]


def wrap_action_mask(made: Any, spec: EnvSpec) -> Any:
    """The mask in its one internal form (or dropped: ``action_mask = "ignore"``), outermost (``rlplug.envs.masks``)."""
    from .masks import has_action_mask

    if spec.action_mask == "info" or (spec.action_mask == "auto" and has_action_mask(made.observation_space)):
        from .mask_wrappers import ActionMaskObservation

        if spec.frame_stack > 1 and spec.action_mask == "auto":
            raise RecipeError(
                f"environment '{spec.id}': frame_stack = {spec.frame_stack} would stack its observation key 'action_mask' "
                "too; supply the mask in info (action_mask = \"info\"), which is added after stacking"
            )
        return ActionMaskObservation(made, spec.id, from_info=spec.action_mask == "info")
    if spec.action_mask == "ignore" and has_action_mask(made.observation_space):
        from .mask_wrappers import DropActionMask

        return DropActionMask(made)
    return made


def hide_observation(made: Any, spec: EnvSpec) -> Any:
    """``made`` observing its flat Box observation without the entries ``spec.hide_observation`` lists (gymnasium's
    ``TransformObservation``, the space's bounds kept for the entries left); anything else is one line."""
    import gymnasium as gym
    import numpy as np

    space, hidden = made.observation_space, sorted(spec.hide_observation)
    where = f"hide_observation = {list(spec.hide_observation)}"
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise RecipeError(f"{where} removes entries of a flat Box observation; '{spec.id}' observes {space}")
    size = space.shape[0]
    if hidden[-1] >= size:
        raise RecipeError(f"{where}: index {hidden[-1]} is outside the observation of '{spec.id}', which has {size} "
                          f"entries (indices 0 to {size - 1})")
    keep = np.array([i for i in range(size) if i not in hidden], dtype=np.int64)
    if not keep.size:
        raise RecipeError(f"{where} hides all {size} entries of the observation of '{spec.id}'; keep at least one")
    kept = gym.spaces.Box(space.low[keep], space.high[keep], dtype=space.dtype)
    return gym.wrappers.TransformObservation(made, lambda observation: observation[keep], kept)


WRAPPER_FIELDS = ("wrappers", "hide_observation", "frame_stack", "atari", "terminal_on_life_loss", "normalize_reward", "time_limit")
"""Recipe fields that wrap a Gymnasium environment (``clip_actions`` too, but its default is on)."""


def check_wrapper_fields(recipe: Any, multiagent: bool) -> None:
    """Wrapper fields need a single-agent Gymnasium env; ``terminal_on_life_loss`` needs ``atari``."""
    where = f"recipe '{recipe.name}'"
    if getattr(recipe, "terminal_on_life_loss", False) and not getattr(recipe, "atari", False):
        raise RecipeError(f"{where}: terminal_on_life_loss is an option of atari preprocessing; set atari = true too")
    if multiagent:
        given = [name for name in WRAPPER_FIELDS if getattr(recipe, name, 0)]
        if not getattr(recipe, "clip_actions", True):
            given.append("clip_actions")
        if getattr(recipe, "action_mask", "auto") != "auto":  # a PettingZoo agent's mask is its observation's key
            given.append("action_mask")
        if given:
            raise RecipeError(f"{where}: {given[0]} wraps single-agent Gymnasium environments, not '{recipe.env}'")
