"""What is made from finished runs (torch only where a policy is loaded).

``export`` a run's deterministic policy as one TorchScript or ONNX file, read back and checked · ``compare``
several runs' learning curves on one PNG and a table of their summaries · ``seeded`` ``rlplug bench --seeds``:
one row per (recipe, backend) from its per-seed runs · ``report`` the benchmark table as Markdown and JSON.
"""
