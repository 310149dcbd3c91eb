"""Offline datasets: the directories rlplug reads offline cells' transitions from, and how they are made.

``datasets`` a dataset's layout, metadata and loading · ``collect`` making datasets: rolling out a run's
policy, exporting a run's replay memory, building the ones ``registry.toml`` declares · ``minari`` Minari
datasets both ways (``minari:ID`` read from the local Minari root; an rlplug dataset written as one).
"""
