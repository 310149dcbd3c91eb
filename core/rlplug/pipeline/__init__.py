"""The pipeline: a recipe name in, a built cell out, on one or several processes.

``discovery`` installed plugins from entry points, loaded onto one pluggy manager · ``session``
``Session``: resolve, validate and construct a recipe through the hooks (name -> Recipe -> Build ->
Trainer) · ``distributed`` ``--nproc N``: relaunching through torchrun, each rank's view.
"""
