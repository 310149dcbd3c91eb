"""Done once when the TorchRL backend package is imported, before tensordict writes anything."""

from __future__ import annotations

import importlib.util
import sys

# tensordict 0.14.3 asks ``importlib.util.find_spec("pandas")`` for every module output it writes
# (``TensorDictBase.from_any``); without pandas installed that is a scan of every ``sys.path`` entry
# each time, 3-4 % of a TorchRL SAC or CQL gradient step here (benchmarks/README.md). A ``None`` entry
# in ``sys.modules`` makes the answer "not installed" immediately, which is what it is: ``import
# pandas`` still raises ImportError. Done once, and only when pandas is absent.
if "pandas" not in sys.modules and importlib.util.find_spec("pandas") is None:
    sys.modules["pandas"] = None
