"""Backend packages: ``rlplug.backends.skrl`` and ``rlplug.backends.torchrl``.

Each package's ``__all__`` is the plugin-author API for that library (docs/plugins.md lists every
name); ``common`` holds the torch building blocks both re-export. Importing a backend package
imports torch and its library: only a cell's backend module does that.
"""
