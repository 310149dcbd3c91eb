"""Recipes: what a recipe is, where recipes come from, and how a name resolves to one (torch-free).

``fields`` a recipe's fields, their domains and the resolved ``Recipe`` · ``files`` reading a recipe file (and
where the first-party registry is) · ``book`` ``RecipeBook``: every known recipe, and resolving a name
(``extends``, overrides, defaults) · ``overrides`` ``--set key=value`` and command-line option values ·
``limits`` the bounds on what rlplug is given (file sizes, nesting, timeouts) · ``search_space`` a recipe's
search space for ``rlplug tune``.
"""
