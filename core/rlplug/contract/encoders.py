"""Observation encoders: the registry of named encoders, the built-ins' declarations, and the check that
an environment's observation space is one some encoder accepts. Torch-free: the encoders' torch modules
live in ``rlplug.backends.common.encoders`` and are imported only when a cell is built.

An encoder turns an observation (one space) into a feature vector that every model of a cell reads:
``mlp`` passes a flat Box through (the models' MLP heads do the rest, as before encoders existed),
``nature_cnn`` and ``minatar_cnn`` are convolutional stacks for images, ``multi_input`` runs each key of
a ``Dict`` space through its own encoder and concatenates the features. A recipe names one with
``encoder = "<name>"`` (and its options in ``encoder_kwargs``); without one, the first registered
encoder (highest ``priority``, then registration order) whose ``accepts(space, encoders)`` is true is
used. Built-ins are registered through ``rlplug_register_encoders`` like everyone else's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import RecipeError, RlplugError, SpaceError, UnknownNameError
from .hookspecs import hookimpl
from ..util.suggest import did_you_mean

HOW_TO_REGISTER = (
    "a plugin registers one with the rlplug_register_encoders hook "
    "(encoders.register(name, factory, accepts=...); `rlplug guide`, section 6)"
)


class EncoderRegistrationError(RlplugError):
    """An encoder name is registered twice without ``override=True``, or a registration is malformed."""


@dataclass(frozen=True)
class EncoderEntry:
    """One registered encoder.

    ``accepts(space, encoders) -> bool``: whether it can encode ``space`` (torch-free: the observation
    check and the default choice call it). ``factory(space, options, encoders) -> torch.nn.Module`` (a
    callable, or ``"module:function"`` imported when a cell is built): a module whose ``features``
    attribute is the size of the vector it returns, called on a batch of observations in the space's
    own shape with any leading dimensions (a tensor for a Box, a mapping of tensors for a Dict; raw
    dtypes, so it scales uint8 images itself). ``options``: the ``encoder_kwargs`` names it takes
    (``None``: any). ``standardise``: whether rlplug's running observation standardisation
    (``normalize_observations``) applies to its input (flat vectors yes, images no). ``check(space,
    options) -> str | None`` (optional, torch-free): what is wrong with these options for this space
    (an image too small for the kernels), refused when the recipe is prepared.
    """

    name: str
    factory: Callable[..., Any]
    accepts: Callable[[Any, EncoderRegistry], bool]
    priority: int = 0
    options: tuple[str, ...] | None = ()
    standardise: bool = False
    doc: str = ""
    source: str = ""
    check: Callable[[Any, Mapping[str, Any]], str | None] | None = None


def _resolve(path_or_callable: Callable[..., Any] | str) -> Callable[..., Any]:
    if not isinstance(path_or_callable, str):
        return path_or_callable
    module_name, _, attribute = path_or_callable.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


class EncoderRegistry:
    """Named observation encoders; ``register`` refuses a taken name unless ``override=True``."""

    def __init__(self) -> None:
        self._entries: dict[str, EncoderEntry] = {}
        self._order: dict[str, int] = {}

    def register(
        self,
        name: str,
        factory: Callable[..., Any] | str,
        *,
        accepts: Callable[[Any, EncoderRegistry], bool],
        priority: int = 0,
        options: Sequence[str] | None = (),
        standardise: bool = False,
        doc: str = "",
        source: str = "user",
        check: Callable[[Any, Mapping[str, Any]], str | None] | None = None,
        override: bool = False,
    ) -> EncoderEntry:
        if not isinstance(name, str) or not name.isidentifier():
            raise EncoderRegistrationError(f"encoder name {name!r} is not an identifier")
        if name in self._entries and not override:
            old = self._entries[name]
            raise EncoderRegistrationError(
                f"encoder '{name}' is already registered by {old.source or 'another plugin'}; pass override=True to replace it"
            )
        if not callable(accepts):
            raise EncoderRegistrationError(f"encoder '{name}': accepts must be a callable (space, encoders) -> bool")
        if isinstance(factory, str):
            path = factory
            factory = lambda space, options, encoders, _path=path: _resolve(_path)(space, options, encoders)  # noqa: E731
        entry = EncoderEntry(
            name=name,
            factory=factory,
            accepts=accepts,
            priority=int(priority),
            options=None if options is None else tuple(options),
            standardise=bool(standardise),
            doc=doc,
            source=source,
            check=check,
        )
        self._order.setdefault(name, len(self._order))
        self._entries[name] = entry
        return entry

    # ---- lookups ---------------------------------------------------------------------------------
    def get(self, name: str) -> EncoderEntry:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(
                f"unknown encoder '{name}'" + did_you_mean(name, self._entries) + f"; registered: {', '.join(self.names())}"
            ) from None

    def entries(self) -> list[EncoderEntry]:
        """In the order the default choice tries them: highest ``priority`` first, then registration order."""
        return sorted(self._entries.values(), key=lambda e: (-e.priority, self._order[e.name]))

    def names(self) -> list[str]:
        return [e.name for e in self.entries()]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def accepting(self, space: Any, exclude: Sequence[str] = ()) -> list[EncoderEntry]:
        """The encoders that accept ``space``, in default-choice order (a failing ``accepts`` is a no)."""
        found = []
        for entry in self.entries():
            if entry.name in exclude:
                continue
            try:
                ok = bool(entry.accepts(space, self))
            except Exception:  # noqa: BLE001 - a third party's predicate failing on an odd space means "no"
                ok = False
            if ok:
                found.append(entry)
        return found

    def default_for(self, space: Any, exclude: Sequence[str] = ()) -> EncoderEntry | None:
        accepting = self.accepting(space, exclude)
        return accepting[0] if accepting else None

    def choose(self, space: Any, name: str = "", where: str = "", env_id: str = "") -> EncoderEntry:
        """The encoder named ``name`` (checked to accept ``space``), or the default for ``space``; one-line
        ``SpaceError`` / ``UnknownNameError`` otherwise."""
        prefix = f"{where}: " if where else ""
        of_env = f" of '{env_id}'" if env_id else ""
        if name:
            if name not in self._entries:
                raise UnknownNameError(
                    f"{prefix}unknown encoder '{name}'" + did_you_mean(name, self._entries)
                    + f"; registered: {', '.join(self.names())}"
                )
            entry = self._entries[name]
            if entry not in self.accepting(space):
                others = [e.name for e in self.accepting(space)]
                advice = f"encoders that do: {', '.join(others)}" if others else HOW_TO_REGISTER
                raise SpaceError(f"{prefix}encoder '{name}' does not accept the observation space {space}{of_env}; {advice}")
            return entry
        entry = self.default_for(space)
        if entry is None:
            raise SpaceError(
                f"{prefix}no encoder accepts the observation space {space}{of_env} "
                f"(registered encoders: {', '.join(self.names())}); {wrapper_advice(space, env_id) or HOW_TO_REGISTER}"
            )
        return entry

    def check_options(self, entry: EncoderEntry, space: Any, options: Mapping[str, Any], where: str = "") -> None:
        """``encoder_kwargs`` names the chosen encoder (or, for ``multi_input``, one of its keys' encoders) takes."""
        allowed = self.option_names(entry, space)
        if allowed is None:
            return
        for key in options:
            if key not in allowed:
                known = ", ".join(sorted(allowed)) or "none"
                raise RecipeError(
                    f"{where + ': ' if where else ''}encoder '{entry.name}' has no option '{key}'"
                    + did_you_mean(key, allowed) + f"; its options: {known}"
                )

    def check_space(self, entry: EncoderEntry, space: Any, options: Mapping[str, Any], where: str = "") -> None:
        """The entry's own ``check`` (and, for ``multi_input``, each key's encoder's) on these options."""
        prefix = f"{where}: " if where else ""
        if entry.name == "multi_input" and hasattr(space, "spaces"):
            by_key = options.get("by_key", {}) if isinstance(options.get("by_key", {}), Mapping) else {}
            for key, sub in space.spaces.items():
                child = self.get(str(by_key[key])) if key in by_key else self.default_for(sub, exclude=("multi_input",))
                if child is not None:
                    mine = {k: v for k, v in options.items() if k != "by_key" and (child.options is None or k in child.options)}
                    self.check_space(child, sub, mine, f"{where}: key '{key}'" if where else f"key '{key}'")
            return
        if entry.check is None:
            return
        try:
            problem = entry.check(space, options)
        except Exception as err:  # noqa: BLE001 - a third party's check failing is its plugin's fault
            problem = f"encoder '{entry.name}' could not check {space}: {type(err).__name__}: {err}"
        if problem:
            raise SpaceError(f"{prefix}{problem}")

    def option_names(self, entry: EncoderEntry, space: Any) -> set[str] | None:
        if entry.options is None:
            return None
        names = set(entry.options)
        if entry.name == "multi_input" and hasattr(space, "spaces"):
            # the options pass on to each key's encoder: any encoder a key could use may take them
            for sub in space.spaces.values():
                for child in self.accepting(sub, exclude=("multi_input",)):
                    if child.options is None:
                        return None
                    names |= set(child.options)
        return names

    # ---- construction (imports torch through the factory) ------------------------------------
    def build(self, space: Any, name: str = "", options: Mapping[str, Any] | None = None) -> Any:
        """A fresh encoder module for ``space``: the named encoder, or the default one."""
        entry = self.choose(space, name)
        return entry.factory(space, dict(options or {}), self)


# ---- the built-ins' declarations (accepts predicates, torch-free) -----------------------------------


def _box(space: Any) -> bool:
    import gymnasium as gym

    return isinstance(space, gym.spaces.Box)


def accepts_flat(space: Any, encoders: EncoderRegistry | None = None) -> bool:
    """A flat Box: ``Box(shape=(n,))``, rlplug's MLPs as they always were."""
    return _box(space) and len(space.shape) == 1


def is_image(space: Any) -> bool:
    """A Box of rank 3 (``H, W, C`` or ``C, H, W``), or a uint8 / bool Box of rank 2 (one grey channel)."""
    import numpy as np

    if not _box(space):
        return False
    if len(space.shape) == 3:
        return True
    return len(space.shape) == 2 and (space.dtype == np.uint8 or space.dtype == np.bool_)


def accepts_image(space: Any, encoders: EncoderRegistry | None = None) -> bool:
    return is_image(space)


def accepts_minatar(space: Any, encoders: EncoderRegistry | None = None) -> bool:
    """MinAtar's 10x10 grids with one channel per object kind (``Box(10, 10, C)``)."""
    return _box(space) and len(space.shape) == 3 and tuple(space.shape[:2]) == (10, 10)


RESERVED_KEYS = ("action", "reward", "done", "terminated", "truncated", "next", "state_value", "action_value")
"""Dict keys TorchRL uses for its own entries at the root of a step's tensordict."""


def accepts_dict(space: Any, encoders: EncoderRegistry) -> bool:
    """A ``Dict`` whose every key some other (non-Dict) encoder accepts."""
    import gymnasium as gym

    if not isinstance(space, gym.spaces.Dict) or not space.spaces:
        return False
    return all(
        isinstance(key, str) and key.isidentifier() and key not in RESERVED_KEYS
        and encoders.default_for(sub, exclude=("multi_input",)) is not None
        for key, sub in space.spaces.items()
    )


def wrapper_advice(space: Any, env_id: str) -> str:
    """For a Dict observation with entries no encoder reads (MiniGrid's text ``mission``): the recipe field that drops
    them, ready to paste; empty for other spaces."""
    spaces = getattr(space, "spaces", None)
    if not isinstance(spaces, Mapping):
        return ""
    unread = [key for key, sub in spaces.items() if not hasattr(sub, "shape") or sub.shape is None]
    if not unread:
        return ""
    if env_id.startswith(("MiniGrid-", "BabyAI-")):
        return ("MiniGrid's own wrappers give one an encoder reads: --set 'wrappers = [{wrapper = "
                "\"minigrid.wrappers:FlatObsWrapper\"}]' (a flat vector) or minigrid.wrappers:ImgObsWrapper (the image)")
    return (f"its entries {unread} have no shape (text?): drop them with a Gymnasium wrapper, --set 'wrappers = "
            "[{wrapper = \"module:Name\"}]' (e.g. gymnasium.wrappers:FilterObservation with kwargs = {filter_keys = [...]})")


CNN_OPTIONS = ("channels", "kernels", "strides", "features", "channels_last")
NATURE_CNN = {"channels": (32, 64, 64), "kernels": (8, 4, 3), "strides": (4, 2, 1), "features": 512}
MINATAR_CNN = {"channels": (16,), "kernels": (3,), "strides": (1,), "features": 128}


def image_size(space: Any, channels_last: bool | None = None) -> tuple[int, int]:
    """``(height, width)`` of an image space: rank 2 is one grey channel; rank 3 is channels-last when its
    last dimension is the smallest of the first and last (``channels_last`` overrides the guess)."""
    shape = tuple(int(d) for d in space.shape)
    if len(shape) == 2:
        return shape[0], shape[1]
    return (shape[0], shape[1]) if is_channels_last(space, channels_last) else (shape[1], shape[2])


def is_channels_last(space: Any, channels_last: bool | None = None) -> bool:
    shape = tuple(int(d) for d in space.shape)
    return channels_last if channels_last is not None else shape[2] <= min(shape[0], shape[1])


def conv_problem(space: Any, options: Mapping[str, Any], defaults: Mapping[str, Any], name: str) -> str | None:
    """Why a CNN with these options cannot read ``space`` (kernels larger than what is left), or ``None``."""
    o = {**defaults, **options}
    as_list = lambda v: list(v) if isinstance(v, (list, tuple)) else [v]  # noqa: E731
    kernels, strides = as_list(o["kernels"]), as_list(o["strides"])
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (*kernels, *strides)):
        return None  # the factory refuses malformed values with its own line
    height, width = image_size(space, o.get("channels_last"))
    size = (height, width)
    for kernel, stride in zip(kernels, strides):
        size = tuple((d - kernel) // stride + 1 for d in size)
        if min(size) < 1:
            return too_small(name, height, width, kernels, strides)
    return None


def fitting_cnn(height: int, width: int) -> dict[str, list[int]]:
    """Convolutions that read a ``height`` x ``width`` image: up to three 3x3 (stride 1) layers of 16, 32, 64 channels
    while the image lasts (MiniGrid's 7x7 view: two), one kernel of the image's size below 3x3."""
    side = min(height, width)
    if side < 3:
        return {"channels": [16], "kernels": [side], "strides": [1]}
    layers = min(3, (side - 1) // 2)
    return {"channels": [16, 32, 64][:layers], "kernels": [3] * layers, "strides": [1] * layers}


def too_small(name: str, height: int, width: int, kernels: list[int], strides: list[int]) -> str:
    """The refusal of a CNN whose kernels outgrow the image, with ``encoder_kwargs`` that fit, ready to paste into a
    recipe or a ``--set``."""
    fit = fitting_cnn(height, width)
    table = ", ".join(f"{key} = {value}" for key, value in fit.items())
    return (f"encoder '{name}': a {height}x{width} image is too small for kernels {kernels} with strides {strides}; "
            f"pass convolutions that fit: --set 'encoder_kwargs = {{{table}}}'")
TORCH_MODULE = "rlplug.backends.common.encoders"


class BuiltinEncoders:
    """The core's own encoders, registered through ``rlplug_register_encoders`` like a plugin's."""

    @hookimpl
    def rlplug_register_encoders(self, encoders: EncoderRegistry) -> None:
        encoders.register(
            "minatar_cnn", f"{TORCH_MODULE}:make_minatar_cnn", accepts=accepts_minatar, priority=30,
            options=CNN_OPTIONS, source="rlplug", check=lambda space, o: conv_problem(space, o, MINATAR_CNN, "minatar_cnn"),
            doc="MinAtar's CNN (Young & Tian 2019): one 3x3 conv of 16 channels and a 128-unit layer, for 10x10 grids",
        )
        encoders.register(
            "nature_cnn", f"{TORCH_MODULE}:make_nature_cnn", accepts=accepts_image, priority=20,
            options=CNN_OPTIONS, source="rlplug", check=lambda space, o: conv_problem(space, o, NATURE_CNN, "nature_cnn"),
            doc="the Nature DQN CNN (Mnih et al. 2015): 32-64-64 conv channels, kernels 8-4-3, strides 4-2-1, a 512-unit layer; "
            "channels first or last detected from the space, uint8 scaled by 1/255 in the model",
        )
        encoders.register(
            "multi_input", f"{TORCH_MODULE}:make_multi_input", accepts=accepts_dict, priority=10,
            options=("by_key",), source="rlplug",
            doc="a Dict space: each key through its own encoder (the default for its space, or by_key = {key = name}), "
            "features concatenated in sorted key order",
        )
        encoders.register(
            "mlp", f"{TORCH_MODULE}:make_flat", accepts=accepts_flat, priority=0, options=(), standardise=True,
            source="rlplug", doc="a flat Box as it is: the models' MLP heads read the observation vector",
        )


BUILTIN = BuiltinEncoders()


def resolve_encoder(
    encoders: EncoderRegistry, space: Any, name: str, options: Mapping[str, Any], env_id: str, where: str,
    multiagent: bool = False,
) -> EncoderEntry:
    """What ``Session.prepare`` asks: the encoder a recipe's observation space gets (one line if none)."""
    entry = encoders.choose(space, name, where, env_id)
    if multiagent and not entry.standardise:
        raise SpaceError(
            f"{where}: multi-agent cells read per-agent observation vectors; encoder '{entry.name}' is not supported there"
        )
    if "by_key" in options and entry.name == "multi_input":
        by_key = options["by_key"]
        if not isinstance(by_key, Mapping):
            raise RecipeError(f"{where}: encoder_kwargs.by_key must be a table of key = encoder name")
        for key, child in by_key.items():
            if key not in space.spaces:
                raise RecipeError(f"{where}: encoder_kwargs.by_key names '{key}', not a key of {space}" + did_you_mean(key, space.spaces))
            encoders.choose(space.spaces[key], str(child), where, env_id)
    encoders.check_options(entry, space, options, where)
    encoders.check_space(entry, space, options, where)
    return entry


# ---- observations as the trainers' act_deterministic receives them ---------------------------------


def batch_of_one(observation: Any) -> Any:
    """One observation as a batch of one: ``[1, *shape]`` float32, or a dict of those for a Dict space."""
    import numpy as np

    if isinstance(observation, Mapping):
        return {key: np.asarray(value, dtype=np.float32)[None] for key, value in observation.items()}
    return np.asarray(observation, dtype=np.float32)[None]


def stack_observations(observations: Sequence[Any]) -> Any:
    """A batch of observations (``[B, *shape]`` float32, or a dict of those)."""
    import numpy as np

    if observations and isinstance(observations[0], Mapping):
        return {key: np.stack([o[key] for o in observations]).astype(np.float32) for key in observations[0]}
    return np.stack(observations).astype(np.float32)
