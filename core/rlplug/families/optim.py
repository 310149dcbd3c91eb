"""Which Adam code path the off-policy and offline cells step with: one neutral hyperparameter,
``optimizer_impl``, declared here once and read by every such plugin where it builds its Adams.

On a CPU, torch's ``Adam()`` default is the per-parameter loop (its ``foreach`` kernels are the default
only on accelerators). ``fused=True`` runs one kernel over all parameters. Measured on the 2-core box
(benchmarks/optimizer_impl.py, one torch thread, updates per CPU second, 5 interleaved rounds):
fused ÷ loop = 1.10 sac/skrl, 1.20 td3/skrl, 1.19 iql/skrl, 1.05 sac/torchrl, 1.12 iql/torchrl (every
round above 1.02); one Adam step over SAC-Pendulum's three 256x256 networks takes 0.30 ms fused,
0.84 ms in the loop. ``foreach=True`` measured 0.96-1.03 of the loop, so it is not offered.
``"loop"`` stays available: it is upstream skrl's and TorchRL's own path, bit for bit, which the
parity tests against upstream use. Nothing here imports torch (``rlplug show`` reads the declaration without
it); the Adam constructors that use it live in ``rlplug.backends.common.optim``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..schema import Param

OPTIMIZER_IMPLS = ("fused", "loop")

OPTIMIZER_PARAMS = (
    Param("optimizer_impl", "fused", "Adam code path: 'fused' (one kernel over all parameters; measured 5-20 % more "
          "updates/s on CPU) or 'loop' (torch's CPU default, upstream's exact arithmetic)", choices=OPTIMIZER_IMPLS),
    Param("compile", False, "run each gradient step (loss, backward, optimiser step) through torch.compile "
          "(inductor; CUDA graphs on --device cuda); the first step compiles (tens of seconds on CPU, reported as "
          "compile_seconds; inductor's cache is kept in rlplug's data directory). Off by default: on the 2-core CPU "
          "box it does not pay back within any recipe's budget (BENCHMARKS.md, Compiled updates)"),
)
"""The gradient-step family every off-policy and offline cell reads (``optimizer_settings``)."""


def optimizer_settings(hp: Mapping[str, Any]) -> dict[str, Any]:
    """The backend settings both backends read (``**optimizer_settings(hp)`` in a settings dict)."""
    return {"optimizer_impl": hp["optimizer_impl"], "compile": bool(hp.get("compile", False))}


def adam_flags(impl: str) -> dict[str, bool]:
    """The keyword arguments of ``torch.optim.Adam`` for ``impl``."""
    if impl not in OPTIMIZER_IMPLS:
        raise ValueError(f"optimizer_impl must be one of {', '.join(OPTIMIZER_IMPLS)}, got '{impl}'")
    return {"fused": True} if impl == "fused" else {"foreach": False}
