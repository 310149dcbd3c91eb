"""The contract between the core and every plugin (torch-free at import).

``hookspecs`` the hook specifications and ``Build``, the object that flows through them · ``protocol`` the
``Trainer`` protocol and its optional capabilities · ``plugin`` ``AlgorithmPlugin``, the hook implementations
first-party plugins share · ``losses`` and ``encoders`` the registries plugins fill · ``trainer`` ``TrainerBase``,
what every cell's trainer shares · ``multiagent_trainer`` its multi-agent counterpart. Plugins import these
names from ``rlplug`` and the backend packages.
"""
