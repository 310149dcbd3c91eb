"""The built-in observation encoders as torch modules, shared by both backends (imports torch).

Every encoder is an ``nn.Module`` with a ``features`` attribute (the size of the vector it returns),
called on observations in their space's own shape with any leading batch dimensions: a tensor for a
Box (``[..., H, W, C]``), a mapping of tensors for a Dict. Inputs keep their raw dtypes (replay and
rollout memories store uint8 images as uint8); an encoder converts to float32 and scales uint8 images
by 1/255 itself, so memories hold 1 byte per pixel. The scale follows the observation *space*'s dtype,
so a float32 copy of uint8 pixels (an evaluation batch, an offline dataset) is scaled the same way.

The declarations (names, ``accepts``, priorities) are torch-free, in ``rlplug.contract.encoders``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from ...contract.encoders import MINATAR_CNN, NATURE_CNN, image_size, is_channels_last, too_small
from ...envs.masks import ACTION_MASK_KEY, feature_space, has_action_mask
from ...errors import RecipeError, SpaceError


def _ints(value: Any, name: str) -> tuple[int, ...]:
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise RecipeError(f"encoder_kwargs.{name} must be a positive whole number or a list of them, got {value!r}")
    return values


def _scale(space: Any) -> float | None:
    """1/255 for uint8 pixels; ``None`` (no scaling) otherwise."""
    return 1.0 / 255.0 if getattr(space, "dtype", None) == np.uint8 else None


class FlatEncoder(nn.Module):
    """``mlp``: a flat Box as it is (cast to float32 when the space is not float); ``features`` = its size."""

    def __init__(self, space: Any) -> None:
        super().__init__()
        self.features = int(np.prod(space.shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x if x.is_floating_point() else x.float()


class ConvEncoder(nn.Module):
    """Convolutions (ReLU after each), flattened, then a ``features``-unit ReLU layer (none when 0).

    A rank-3 space is channels-last (``H, W, C``) when its last dimension is the smallest, else
    channels-first (``C, H, W``; gymnasium's ``FrameStackObservation`` over grey Atari frames gives
    ``(4, 84, 84)``); ``channels_last`` overrides the guess. A rank-2 space is one grey channel.
    """

    def __init__(
        self,
        space: Any,
        channels: Sequence[int],
        kernels: Sequence[int],
        strides: Sequence[int],
        features: int,
        channels_last: bool | None = None,
        name: str = "cnn",
    ) -> None:
        super().__init__()
        shape = tuple(int(d) for d in space.shape)
        if len(shape) not in (2, 3):
            raise SpaceError(f"encoder '{name}' reads images of rank 2 or 3, not {shape}")
        if not (len(channels) == len(kernels) == len(strides)):
            raise RecipeError(
                f"encoder '{name}': channels {list(channels)}, kernels {list(kernels)} and strides {list(strides)} "
                "must have one entry per convolution"
            )
        self.shape = shape
        height, width = image_size(space, channels_last)
        if len(shape) == 2:
            self.layout, in_channels = "grey", 1
        else:
            self.layout = "last" if is_channels_last(space, channels_last) else "first"
            in_channels = shape[2] if self.layout == "last" else shape[0]
        scale = _scale(space)
        self.scale = scale
        layers: list[nn.Module] = []
        size = (height, width)
        for out_channels, kernel, stride in zip(channels, kernels, strides):
            size = tuple((d - kernel) // stride + 1 for d in size)
            if min(size) < 1:
                raise SpaceError(too_small(name, height, width, list(kernels), list(strides)))
            layers += [nn.Conv2d(in_channels, out_channels, kernel, stride), nn.ReLU()]
            in_channels = out_channels
        layers.append(nn.Flatten())
        self.convs = nn.Sequential(*layers)
        flat = in_channels * size[0] * size[1]
        self.linear = nn.Sequential(nn.Linear(flat, features), nn.ReLU()) if features else nn.Identity()
        self.features = features or flat

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[: x.ndim - len(self.shape)]
        x = x.reshape(-1, *self.shape).float()
        if self.scale is not None:
            x = x * self.scale
        if self.layout == "grey":
            x = x.unsqueeze(1)
        elif self.layout == "last":
            x = x.permute(0, 3, 1, 2)
        return self.linear(self.convs(x)).reshape(*lead, self.features)


def _conv_encoder(space: Any, options: Mapping[str, Any], defaults: dict[str, Any], name: str) -> ConvEncoder:
    o = {**defaults, **options}
    channels, kernels, strides = _ints(o["channels"], "channels"), _ints(o["kernels"], "kernels"), _ints(o["strides"], "strides")
    features = o["features"]
    if not isinstance(features, int) or isinstance(features, bool) or features < 0:
        raise RecipeError(f"encoder_kwargs.features must be a whole number >= 0 (0: no dense layer), got {features!r}")
    channels_last = o.get("channels_last")
    if channels_last is not None and not isinstance(channels_last, bool):
        raise RecipeError(f"encoder_kwargs.channels_last must be true or false, got {channels_last!r}")
    return ConvEncoder(space, channels, kernels, strides, features, channels_last, name)


def make_nature_cnn(space: Any, options: Mapping[str, Any], encoders: Any = None) -> ConvEncoder:
    return _conv_encoder(space, options, NATURE_CNN, "nature_cnn")


def make_minatar_cnn(space: Any, options: Mapping[str, Any], encoders: Any = None) -> ConvEncoder:
    return _conv_encoder(space, options, MINATAR_CNN, "minatar_cnn")


def make_flat(space: Any, options: Mapping[str, Any] | None = None, encoders: Any = None) -> FlatEncoder:
    return FlatEncoder(space)


class MultiInputEncoder(nn.Module):
    """``multi_input``: each key of a Dict space through its own encoder, features concatenated in
    sorted key order (the order skrl flattens a Dict in). ``forward`` takes a mapping of tensors."""

    def __init__(self, encoders: Mapping[str, nn.Module]) -> None:
        super().__init__()
        self.keys = tuple(sorted(encoders))
        self.encoders = nn.ModuleDict({key: encoders[key] for key in self.keys})
        self.features = sum(int(e.features) for e in self.encoders.values())

    def forward(self, x: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([self.encoders[key](x[key]) for key in self.keys], dim=-1)


def make_multi_input(space: Any, options: Mapping[str, Any], encoders: Any) -> MultiInputEncoder:
    by_key = dict(options.get("by_key", {}))
    shared = {k: v for k, v in options.items() if k != "by_key"}
    parts = {}
    for key in sorted(space.spaces):
        sub = space.spaces[key]
        entry = encoders.get(by_key[key]) if key in by_key else encoders.default_for(sub, exclude=("multi_input",))
        if entry is None:
            raise SpaceError(f"encoder 'multi_input': no encoder accepts key '{key}' ({sub})")
        allowed = entry.options
        mine = shared if allowed is None else {k: v for k, v in shared.items() if k in allowed}
        parts[key] = entry.factory(sub, mine, encoders)
    return MultiInputEncoder(parts)


# ---- what the models use --------------------------------------------------------------------------


def observation_encoder(build: Any) -> nn.Module | None:
    """A fresh encoder for ``build``'s observation space, one per network (policy, critics and targets
    each get their own); ``None`` for the built-in ``mlp`` (and a hand-made build without an encoder):
    the models then read the observation vector directly, exactly as they did before encoders existed."""
    registry, name = getattr(build, "encoders", None), getattr(build, "encoder", "")
    if registry is None or not name:
        return None
    entry = registry.get(name)
    if entry.name == "mlp" and entry.source == "rlplug":
        return None
    options = dict(getattr(build.recipe, "encoder_kwargs", None) or {})
    return entry.factory(feature_space(build.observation_space), options, registry)


def standardised_observations(build: Any) -> bool:
    """Whether ``normalize_observations`` applies: to flat vectors, not to what an image or Dict encoder
    scales itself (uint8 pixels, whose running variance would also need float storage), nor to observations
    carrying an action mask (a Dict, whose mask must reach the policy as zeros and ones)."""
    if has_action_mask(build.observation_space):
        return False
    registry, name = getattr(build, "encoders", None), getattr(build, "encoder", "")
    return registry is None or not name or registry.get(name).standardise


def compact_dtype(space: Any) -> torch.dtype | None:
    """The dtype memories store observations of ``space`` in when it is not float32: uint8 for uint8 and
    bool Boxes (and Dicts made only of them), so an 84x84x4 frame costs 28 KB instead of 113 KB."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Dict):
        dtypes = {compact_dtype(sub) for sub in space.spaces.values()}
        return torch.uint8 if dtypes == {torch.uint8} else None
    if isinstance(space, gym.spaces.Box) and space.dtype in (np.uint8, np.bool_):
        return torch.uint8
    return None


def unflatten_observations(space: Any, x: torch.Tensor) -> Any:
    """skrl's flat ``[B, size]`` observations back in the space's shape: ``[B, *shape]`` for a Box, a dict
    of those for a Dict (skrl flattens a Dict's keys in sorted order)."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Dict):
        out, start = {}, 0
        for key in sorted(space.spaces):
            sub = space.spaces[key]
            size = int(np.prod(sub.shape)) if sub.shape else 1
            out[key] = unflatten_observations(sub, x[..., start : start + size])
            start += size
        return out
    return x.reshape(*x.shape[:-1], *space.shape)


def flat_mask_columns(space: Any) -> slice | None:
    """Where an action mask sits in skrl's flat ``[B, size]`` observations of ``space`` (a Dict's keys
    concatenated in sorted order), or ``None`` when its observations carry none."""
    if not has_action_mask(space):
        return None
    start = 0
    for key in sorted(space.spaces):
        size = int(np.prod(space.spaces[key].shape))
        if key == ACTION_MASK_KEY:
            return slice(start, start + size)
        start += size
    return None  # pragma: no cover - has_action_mask found the key


def split_flat_mask(columns: slice, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """skrl's flat observations split into the features (the other keys, still in sorted order: the flat form
    of ``feature_space``) and the mask as bools."""
    features = torch.cat([x[..., : columns.start], x[..., columns.stop :]], dim=-1)
    return features, x[..., columns] > 0.5


def masked_values(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Logits or Q-values with masked actions at the dtype's lowest finite value (as TorchRL's ``QValueModule``
    masks them): no probability, never the argmax or a max, and no NaN in a softmax, entropy or gradient."""
    if mask is None:
        return values
    return values.masked_fill(~mask, torch.finfo(values.dtype).min)
