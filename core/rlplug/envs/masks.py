"""Action masks: which Discrete actions are valid at each step, and the one form every cell reads them in.

An environment supplies a mask in one of the two ways PettingZoo and Gymnasium users write it:

* a ``Dict`` observation key ``action_mask`` (PettingZoo's ``{"observation": ..., "action_mask": ...}``; a
  ``MultiBinary(n)`` or an integer / bool ``Box`` of shape ``[n_actions]``, 1 = valid), found in the
  observation space itself (the recipe field ``action_mask = "auto"``, the default);
* ``info["action_mask"]`` from ``reset`` and ``step`` (Gymnasium's Taxi), which the recipe declares with
  ``action_mask = "info"``: no space says so, and probing an env's ``info`` would cost it a reset.

Internally there is one form, whatever the env wrote (``rlplug.envs.mask_wrappers``, the outermost wrapper of
every single env rlplug makes, training copies and evaluation alike): a ``Dict`` observation whose key
``action_mask`` is a bool ``Box`` of shape ``[n_actions]``, beside the env's own keys (a non-Dict
observation goes under ``"observation"``). Memories, rollouts, replay buffers and checkpoints carry the mask
as part of the observation, so a minibatch and a replayed next observation bring their own.

The mask is not a feature: the encoder reads ``feature_space(space)`` (the space without the mask; just the
``"observation"`` Box when that is all that is left), and the policy or Q head applies the mask to its
outputs. Cells declare support per backend (``BackendSpec.action_masks``); ``check_action_mask`` refuses the
rest. A multi-agent env whose agents' observations are PettingZoo's Dict has the same per-agent form.

Torch-free and gymnasium-lazy (the session's checks run it on every command that prepares a recipe).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ActionMaskError

ACTION_MASK_KEY = "action_mask"
"""The observation key (and ``info`` key) holding the mask, as PettingZoo and Gymnasium name it."""
FEATURES_KEY = "observation"
"""Where a non-Dict observation goes beside the mask (PettingZoo's name)."""
MASK_SOURCES = ("auto", "info", "ignore")
"""The recipe field ``action_mask``: ``auto`` (a Dict key ``action_mask`` when the space has one), ``info``
(``info["action_mask"]``), ``ignore`` (train as if the env gave none; the Dict key is dropped)."""


def has_action_mask(space: Any) -> bool:
    """Whether observations of ``space`` carry an action mask (a ``Dict`` with the key ``action_mask``)."""
    spaces = getattr(space, "spaces", None)
    return isinstance(spaces, Mapping) and ACTION_MASK_KEY in spaces


def mask_size(space: Any) -> int | None:
    """The number of actions the mask of ``space`` covers (its last dimension's size), or ``None`` without one."""
    if not has_action_mask(space):
        return None
    shape = getattr(space.spaces[ACTION_MASK_KEY], "shape", None) or (0,)
    return int(shape[-1])


def feature_space(space: Any) -> Any:
    """What the encoder reads of an observation of ``space``: the space itself without a mask; else the
    ``Dict`` less its ``action_mask`` key, or the ``"observation"`` space when that key is all that is left."""
    if not has_action_mask(space):
        return space
    import gymnasium as gym

    rest = {key: sub for key, sub in space.spaces.items() if key != ACTION_MASK_KEY}
    if list(rest) == [FEATURES_KEY]:
        return rest[FEATURES_KEY]
    return gym.spaces.Dict(rest)


def mask_problem(mask: Any, n: int) -> str | None:
    """What is wrong with one step's mask for ``Discrete(n)``: not an array of ``n`` zeros and ones; or ``None``."""
    import numpy as np

    try:
        array = np.asarray(mask)
    except Exception:  # noqa: BLE001 - something no array can hold
        return f"a {type(mask).__name__}, not an array of {n} zeros and ones"
    if array.shape != (n,):
        return f"of shape {array.shape}, not ({n},) (one entry per action of Discrete({n}))"
    if array.dtype.kind not in "biuf" or not np.isin(array, (0, 1)).all():
        return f"{_short(array)}, not zeros and ones (1 = a valid action)"
    return None


def check_action_mask(spec: Any, backend: str, observation_space: Any, action_space: Any, recipe: Any,
                      installed: Any = ()) -> None:  # fmt: skip
    """Refuse, in one line naming the env and what was meant, a mask on a non-Discrete action space, a mask
    whose length is not the number of actions, or a cell that cannot honour masks (it would take masked actions)."""
    import gymnasium as gym

    if not has_action_mask(observation_space):
        return
    where, env = f"recipe '{recipe.name}'", f"environment '{recipe.env}'"
    source = "info['action_mask']" if getattr(recipe, "action_mask", "auto") == "info" else "its observation key 'action_mask'"
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ActionMaskError(
            f"{where}: {env} supplies an action mask ({source}) but its action space is {action_space}; action masks "
            "are for Discrete actions (set action_mask = \"ignore\" to train without it)"
        )
    mask = observation_space.spaces[ACTION_MASK_KEY]
    n = int(action_space.n)
    if tuple(getattr(mask, "shape", ()) or ()) != (n,):
        stacked = " (frame_stack stacks it too: stack only the features, or supply it in info)" if getattr(recipe, "frame_stack", 0) > 1 else ""
        raise ActionMaskError(
            f"{where}: {env}'s action mask ({source}) has shape {tuple(mask.shape or ())}, its action space "
            f"Discrete({n}) needs ({n},): one entry per action{stacked}"
        )
    if not getattr(spec.backends[backend], "action_masks", False):
        multiagent = spec.kind == "multi-agent"  # a single-agent env needs a single-agent algorithm, and the reverse
        able = sorted(other.name for other in installed if (other.kind == "multi-agent") == multiagent
                      and any(getattr(b, "action_masks", False) for b in other.backends.values()))
        advice = f"algorithms that honour masks: {', '.join(able)}" if able else "no installed algorithm honours masks"
        raise ActionMaskError(
            f"{where}: {env} supplies an action mask ({source}), which {spec.name} on {backend} does not support "
            f"(it would take masked actions); {advice}; or set action_mask = \"ignore\" to train without it"
        )


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."
