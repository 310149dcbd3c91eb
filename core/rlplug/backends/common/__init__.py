"""Torch building blocks both backend packages share: threads and seeds, MLPs, the Adam code paths,
distributed helpers, loss-term means and the offline trainer base. The backend packages re-export what a
plugin needs of them (the same objects under the same names), and plugins import it from
``rlplug.backends.skrl`` or ``.torchrl``."""
