"""Torch building blocks both backend packages share and re-export (the same objects under the
same names): threads and seeds, MLPs, the Adam code paths, distributed helpers, loss-term means and
the offline trainer base. Plugins import them from ``rlplug.backends.skrl`` or ``.torchrl``."""
