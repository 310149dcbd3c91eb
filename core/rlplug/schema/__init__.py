"""Declarations plugins return from ``rlplug_algorithms()``: algorithms, backends, hyperparameters
with their domains and search spaces, and the rules between them.

Nothing here imports torch: declarations are read by ``rlplug list`` and ``rlplug recipes``.
``domains`` (types, intervals, number checks) · ``search`` (``Search``) · ``params`` (``Param``,
``AutoOrFloat``, ``Rule``) · ``specs`` (``AlgorithmSpec``, ``BackendSpec``, ``LossSpec``).
"""

from __future__ import annotations

from .domains import INT64_MAX, Interval, check_type, type_name
from .params import AutoOrFloat, Param, Rule
from .search import SEARCH_VALUE_TYPES, Search, choice_text
from .specs import ACTION_SPACES, KINDS, AlgorithmSpec, BackendSpec, LossSpec, both_backends, declaration_problems

__all__ = [
    "ACTION_SPACES", "INT64_MAX", "KINDS", "SEARCH_VALUE_TYPES", "AlgorithmSpec", "AutoOrFloat", "BackendSpec",
    "Interval", "LossSpec", "Param", "Rule", "Search", "both_backends", "check_type", "choice_text",
    "declaration_problems", "type_name",
]
