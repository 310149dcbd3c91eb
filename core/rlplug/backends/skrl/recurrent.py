"""The recurrent core of skrl models: an LSTM or GRU between the observation encoder and the MLP head, in
skrl's RNN convention (``skrl.agents.torch.ppo.PPO_RNN`` and skrl's RNN model examples).

A model with a core declares ``get_specification() == {"rnn": {"sequence_length": L, "sizes": [(layers,
num_envs, hidden_size), ...]}}`` (an LSTM's two states, ``h`` then ``c``; a GRU's one), takes its states as
``inputs["rnn"]`` (a list of ``[layers, B, hidden_size]`` tensors) and returns the next ones as
``outputs["rnn"]``. How it reads its input depends on the model's mode, as in skrl's examples, and on
the update's episode-end flags:

* evaluation mode (acting, the rollout, the values stored with it), or inputs without ``terminated``:
  ``B`` observations, one step each, from the ``B`` states given;
* training mode with ``terminated`` (and ``truncated``) in the inputs (the update): ``B = N x L``
  observations that are ``N`` sequences of ``L`` consecutive steps, sequence by sequence, with the states
  stored at every step; each sequence starts from the state stored at
  its first step and steps through the others, its state reset to zeros after a step whose ``terminated``
  or ``truncated`` flag (``inputs``) is set: an episode that ended inside the sequence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

KINDS = {"lstm": nn.LSTM, "gru": nn.GRU}


@dataclasses.dataclass(frozen=True)
class RecurrentSpec:
    """What a recurrent core is: ``kind`` (``"lstm"`` or ``"gru"``), ``hidden_size``, ``layers``, the training
    ``sequence_length``, and ``num_envs`` (the rollout's batch, which skrl's spec declares)."""

    kind: str
    hidden_size: int
    layers: int
    sequence_length: int
    num_envs: int

    @classmethod
    def of(cls, settings: Mapping[str, Any], num_envs: int) -> RecurrentSpec | None:
        """The on-policy family's recurrent settings (``recurrent``, ``recurrent_hidden_size``,
        ``recurrent_layers``, ``sequence_length``), or ``None`` for a feed-forward model."""
        if not settings.get("recurrent"):
            return None
        return cls(settings["recurrent"], int(settings["recurrent_hidden_size"]), int(settings["recurrent_layers"]),
                   int(settings["sequence_length"]), int(num_envs))  # fmt: skip

    @property
    def states(self) -> int:
        """How many state tensors the core carries: an LSTM's ``h`` and ``c``, a GRU's ``h``."""
        return 2 if self.kind == "lstm" else 1

    @property
    def export_shape(self) -> tuple[int, int]:
        """``(layers, width)`` of the exported ``hidden`` input: the states side by side along the width."""
        return self.layers, self.states * self.hidden_size


class RecurrentCore(nn.Module):
    """``forward(features, states, done, sequences) -> (outputs, next states)`` (see the module doc)."""

    def __init__(self, spec: RecurrentSpec, input_size: int) -> None:
        super().__init__()
        if spec.kind not in KINDS:
            raise ValueError(f"recurrent must be one of {', '.join(KINDS)}, got {spec.kind!r}")
        self.spec = spec
        self.rnn = KINDS[spec.kind](input_size, spec.hidden_size, spec.layers, batch_first=True)

    def specification(self) -> dict[str, Any]:
        s = self.spec
        return {"sequence_length": s.sequence_length, "sizes": [(s.layers, s.num_envs, s.hidden_size)] * s.states}

    def forward(
        self, x: torch.Tensor, states: Sequence[torch.Tensor], done: torch.Tensor | None, sequences: bool
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        if not sequences:  # B observations, one step each
            output, hx = self.rnn(x.unsqueeze(1), self._hx([s.contiguous() for s in states]))
            return output.squeeze(1), self._list(hx)
        length = self.spec.sequence_length
        x = x.view(-1, length, x.shape[-1])  # [N, L, features]
        # each sequence starts from the state stored at its first step
        initial = [s.view(s.shape[0], -1, length, s.shape[-1])[:, :, 0].contiguous() for s in states]
        if done is None or not done.view(-1, length)[:, :-1].any():
            output, hx = self.rnn(x, self._hx(initial))
            return output.flatten(0, 1), self._list(hx)
        done = done.view(-1, length)
        # run up to each step after which some sequence's episode ended, then zero those sequences' states
        cuts = [0, *(done[:, :-1].any(dim=0).nonzero(as_tuple=True)[0] + 1).tolist(), length]
        outputs, carried = [], initial
        for start, stop in zip(cuts[:-1], cuts[1:]):
            output, hx = self.rnn(x[:, start:stop], self._hx(carried))
            keep = (~done[:, stop - 1]).to(output.dtype).view(1, -1, 1)
            carried = [state * keep for state in self._list(hx)]  # out of place: autograd keeps the originals
            outputs.append(output)
        return torch.cat(outputs, dim=1).flatten(0, 1), carried

    def _hx(self, states: Sequence[torch.Tensor]) -> Any:
        return (states[0], states[1]) if self.spec.kind == "lstm" else states[0]

    def _list(self, hx: Any) -> list[torch.Tensor]:
        return list(hx) if isinstance(hx, tuple) else [hx]


def episode_ends(inputs: Mapping[str, Any]) -> torch.Tensor | None:
    """The ``terminated | truncated`` flags an update passes with its sequences (``None`` when it passes none)."""
    flags = [inputs[key] for key in ("terminated", "truncated") if inputs.get(key) is not None]
    if not flags:
        return None
    done = flags[0].bool()
    for flag in flags[1:]:
        done = done | flag.bool()
    return done


def pack_states(states: Sequence[torch.Tensor]) -> torch.Tensor:
    """skrl's ``[layers, B, hidden_size]`` states as the exported ``hidden``: ``[B, layers, states x hidden_size]``."""
    return torch.cat(list(states), dim=-1).transpose(0, 1)


def unpack_states(hidden: torch.Tensor, count: int) -> list[torch.Tensor]:
    """The exported ``hidden`` ``[B, layers, count x hidden_size]`` as skrl's ``count`` states ``[layers, B, hidden_size]``."""
    return [part.transpose(0, 1).contiguous() for part in hidden.chunk(count, dim=-1)]


def model_inputs(batch: Mapping[str, Any], role: str) -> dict[str, Any]:
    """The inputs of the agent's ``role`` model (``"policy"``, ``"value"``) for an update's minibatch: its
    ``observations`` and ``states`` and, in a recurrent agent's minibatch, the model's stored states
    (``rnn_<role>_<i>``, ``[B, layers, hidden_size]`` each) as skrl's models take them, with the
    ``terminated`` and ``truncated`` flags that reset them inside a sequence."""
    inputs = {"observations": batch["observations"], "states": batch["states"]}
    prefix = f"rnn_{role}_"
    names = sorted((key for key in batch if key.startswith(prefix)), key=lambda key: int(key[len(prefix):]))
    if names:
        inputs.update(rnn=[batch[name].transpose(0, 1) for name in names], terminated=batch.get("terminated"),
                      truncated=batch.get("truncated"))  # fmt: skip
    return inputs
