"""Small dependency-free helpers every layer of the core uses (none imports torch at import time).

``suggest`` did-you-mean for unknown names · ``rng`` the global RNGs: seeding, and their states for checkpoints ·
``jsonfiles`` reading the JSON files rlplug writes · ``outputs`` what an output option may replace, and
writing it safely.
"""
