"""The deterministic policy of a cell as one plain ``torch.nn.Module`` (``Trainer.export_policy``), shared
by both backends (imports torch).

``ExportedPolicy`` is what every cell's ``export_policy`` returns: raw observation batches in, the actions
``act_deterministic`` returns out. Inputs are the observations as an environment gives them, one tensor
per input: ``[B, *shape]`` for a Box (float32 vectors, uint8 images as stored), one input per key of a
``Dict`` in sorted key order, ``[B, n_agents, obs_dim]`` for a multi-agent cell. Every input is cast to
float32 first, as both backends' ``act_deterministic`` do; normalisation, the encoder (which scales uint8
images itself) and the action's clipping or scaling are inside the wrapped ``policy``. Nothing in it
calls skrl, TorchRL or tensordict, so ``torch.jit.trace`` and ``torch.onnx.export`` see plain tensor code.

A recurrent policy (``Trainer.recurrent_state_shape`` is ``(layers, width)``) is exported with one more
input and output, ``hidden``: ``forward(*observations, hidden) -> (action, hidden)``, ``hidden`` float32
``[B, layers, width]``, the same layout on both backends. An LSTM's state is its ``h`` then its ``c`` side
by side along the last axis (``width = 2 x hidden size``), a GRU's is its ``h`` (``width = hidden size``);
layer ``i`` of the recurrent stack is ``hidden[:, i]``. Zeros start an episode; each step's returned
``hidden`` is the next step's input, so a caller that runs whole episodes, resetting to zeros at each
episode's start, acts as ``act_deterministic`` does after ``reset_acting_state``. The signature says so
with its ``hidden`` entry (``policy_signature(build, hidden=(layers, width))``); ``ExportedPolicy`` then
passes the last positional input to ``policy(observations, hidden)`` and returns its ``(action, hidden)``.
In an ONNX file, where a graph's values need distinct names, the returned state is named ``next_hidden``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn


class ExportedPolicy(nn.Module):
    """A cell's deterministic policy: ``forward(*observations) -> actions``.

    ``policy`` receives the inputs cast to float32: concatenated into one flat ``[B, size]`` vector when
    ``flatten`` (skrl's models read a Dict's keys that way), else one tensor per input (TorchRL's networks
    take one positional input per observation key). ``signature`` describes inputs and actions (names,
    dtypes, shapes, bounds) for the exported file's metadata; ``policy_signature(build)`` makes it. With a
    ``hidden`` entry in the signature the last input is the recurrent state: ``forward(*observations,
    hidden) -> (action, hidden)`` (the module doc).
    """

    def __init__(self, policy: nn.Module, signature: dict[str, Any], flatten: bool = False) -> None:
        super().__init__()
        self.policy = policy
        self.signature = signature
        self.flatten = flatten

    @property
    def input_names(self) -> list[str]:
        names = [spec["name"] for spec in self.signature["inputs"]]
        return [*names, HIDDEN] if self.recurrent else names

    @property
    def recurrent(self) -> bool:
        return HIDDEN in self.signature

    def forward(self, *observations: torch.Tensor) -> Any:
        state: list[torch.Tensor] = []  # (not "hidden": the ONNX exporter would rename its input around it)
        if self.recurrent:
            *observations, last = observations  # type: ignore[assignment]
            state = [last.to(torch.float32)]
        inputs = [x.to(torch.float32) for x in observations]
        if self.flatten:
            return self.policy(torch.cat([x.flatten(1) for x in inputs], dim=-1), *state)
        return self.policy(*inputs, *state)


class ClampToBounds(nn.Module):
    """Box actions clamped into ``[low, high]`` (what a cell sends its env, and what it evaluates with)."""

    def __init__(self, low: Any, high: Any) -> None:
        super().__init__()
        self.register_buffer("low", torch.as_tensor(np.asarray(low), dtype=torch.float32))
        self.register_buffer("high", torch.as_tensor(np.asarray(high), dtype=torch.float32))

    def forward(self, actions: torch.Tensor) -> torch.Tensor:
        return torch.clamp(actions, min=self.low, max=self.high)


class Argmax(nn.Module):
    """The index of the largest logit or Q-value (a Discrete action, int64)."""

    def forward(self, values: torch.Tensor) -> torch.Tensor:
        return values.argmax(dim=-1)


class MaskedArgmax(nn.Module):
    """``net``'s argmax over the valid actions: ``forward(*inputs)`` with the action mask (0/1, cast to float32
    as every input is) at position ``mask_index`` of the inputs and the network's own inputs around it."""

    def __init__(self, net: nn.Module, mask_index: int) -> None:
        super().__init__()
        self.net, self.mask_index = net, mask_index

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        i = self.mask_index
        values = self.net(*inputs[:i], *inputs[i + 1 :])
        return values.masked_fill(inputs[i] < 0.5, torch.finfo(values.dtype).min).argmax(dim=-1)


HIDDEN = "hidden"
"""The name of a recurrent policy's state input (and output, in TorchScript), and of its signature entry."""
NEXT_HIDDEN = "next_hidden"
"""The name of a recurrent policy's state output in an ONNX file (an ONNX graph's inputs and outputs are
values with distinct names)."""


def policy_signature(build: Any, hidden: tuple[int, int] | None = None) -> dict[str, Any]:
    """The inputs and actions of ``build``'s exported policy, as plain data (JSON): input names, dtypes and
    shapes (``B`` the batch), and the action's dtype, shape and bounds (Box) or count (Discrete); for a
    recurrent policy (``hidden = (layers, width)``) its state, ``{"name": "hidden", "dtype": "float32",
    "shape": ["B", layers, width]}`` (the module doc)."""
    import gymnasium as gym

    multiagent = (getattr(build, "extras", None) or {}).get("multiagent")
    observation_space, action_space = build.observation_space, build.action_space
    lead: list[Any] = ["B"] if multiagent is None else ["B", multiagent.n_agents]
    if isinstance(observation_space, gym.spaces.Dict):
        spaces = [(key, observation_space.spaces[key]) for key in sorted(observation_space.spaces)]
    else:
        spaces = [("observation", observation_space)]
    inputs = [
        {"name": name, "dtype": input_dtype(space), "shape": [*lead, *(int(d) for d in space.shape)]} for name, space in spaces
    ]
    if isinstance(action_space, gym.spaces.Discrete):
        action = {"name": "action", "kind": "discrete", "dtype": "int64", "shape": lead, "n": int(action_space.n)}
    else:
        action = {
            "name": "action", "kind": "box", "dtype": "float32", "shape": [*lead, *(int(d) for d in action_space.shape)],
            "low": np.asarray(action_space.low, dtype=np.float64).tolist(), "high": np.asarray(action_space.high, dtype=np.float64).tolist(),
        }  # fmt: skip
    signature = {"inputs": inputs, "action": action}
    if hidden is not None:
        signature[HIDDEN] = {"name": HIDDEN, "dtype": "float32", "shape": ["B", int(hidden[0]), int(hidden[1])]}
    if multiagent is not None:
        signature["agents"] = list(multiagent.agents)
    return signature


def input_dtype(space: Any) -> str:
    """float32 for float observations; uint8 for uint8 and bool Boxes (images as memories store them);
    other integer observations are fed as float32 (the policies cast every input to float32 anyway)."""
    dtype = np.dtype(getattr(space, "dtype", np.float32))
    return "uint8" if dtype in (np.uint8, np.bool_) else "float32"


def example_observations(signature: dict[str, Any], batch: int, seed: int = 0, hidden: bool = False) -> list[np.ndarray]:
    """``batch`` observations per input in its dtype and shape: uniform pixels for uint8 inputs, standard
    normal values otherwise (what tracing and the export's own check run the policy on); an action mask
    (``rlplug.envs.masks``) of random zeros and ones with at least one valid action per row (per agent); with ``hidden``,
    a recurrent signature's state too, last."""
    from ...envs.masks import ACTION_MASK_KEY

    rng = np.random.default_rng(seed)
    arrays = []
    specs = [*signature["inputs"], *([signature[HIDDEN]] if hidden and HIDDEN in signature else [])]
    for spec in specs:
        shape = [batch, *spec["shape"][1:]]
        if spec["name"] == ACTION_MASK_KEY:  # 0/1 with one allowed action at least, as an env's masks are
            mask = rng.integers(0, 2, size=shape)
            np.put_along_axis(mask, rng.integers(0, shape[-1], size=(*shape[:-1], 1)), 1, axis=-1)
            arrays.append(mask.astype(spec["dtype"]))
        elif spec["dtype"] == "uint8":
            arrays.append(rng.integers(0, 256, size=shape, dtype=np.uint8))
        else:
            arrays.append(rng.standard_normal(shape).astype(np.float32))
    return arrays


def as_observation_batch(signature: dict[str, Any], arrays: Sequence[np.ndarray]) -> Any:
    """The export's inputs as ``act_deterministic`` takes them: the array itself, or a Dict's mapping."""
    names = [spec["name"] for spec in signature["inputs"]]
    if names == ["observation"]:
        return arrays[0]
    return dict(zip(names, arrays))
